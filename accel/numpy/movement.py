"""Movement and indexing primitives of the NumPy device.

``reshape`` and ``permute`` are ndarray's own methods (device.py); they, ``expand`` and ``slice``
return numpy views whenever numpy can (a ``reshape`` of a non-contiguous array copies, as numpy
does). ``slice_assign`` and ``scatter``
always return a new array: an input array may be shared by other tensors (value semantics).
"""
import numpy as np

from ember.errors import IndexOutOfRange

from .arrays import BF16, F64, like, ndarray, plain, round_float, ember_dtype


def expand(x, shape):
    """A stride-0 view. ``np.broadcast_to`` costs about 2 us; building the view over ``x``'s own
    buffer costs a tenth of that and works whenever ``x`` exports one (contiguous arrays)."""
    try:
        out = ndarray(shape, x.dtype, x, 0,
                      tuple([0 if n != m else s for n, m, s in zip(x.shape, shape, x.strides)]))
    except (TypeError, ValueError, BufferError):
        return np.broadcast_to(x, shape, subok=True)
    return out.view(BF16) if type(x) is BF16 else out


def _slices(ranges):
    # a negative step may stop "before index 0": Python's slice spells that stop as None
    return tuple([slice(a, b if b >= 0 else None, s) for a, b, s in ranges])


def slice_(x, ranges):
    """The primitive ``slice``: a numpy view of the region ``ranges``."""
    if not ranges:
        return x
    return x[_slices(ranges)]


def slice_assign(x, ranges, value):
    """The primitive ``slice_assign``: a new array, ``x`` with the region ``ranges`` replaced by ``value``."""
    out = np.array(plain(x))  # a new array: x may be shared by other tensors
    out[_slices(ranges)] = plain(value)
    return like(out, x)


def cat(arrays, dim):
    """The primitive ``cat``: ``np.concatenate`` along ``dim``."""
    return like(np.concatenate([plain(a) for a in arrays], axis=dim), arrays[0])


def _check(index, n, dim, op):
    if index.size:
        if index.min() < 0 or index.max() >= n:
            flat = index.ravel()
            bad = int(flat[(flat < 0) | (flat >= n)][0])
            raise IndexOutOfRange("%s: index %d is out of range for dim %d of size %d" % (op, bad, dim, n))


def gather(x, dim, index):
    """``out[i][j] = x[i][index[i][j]]`` (for dim 1): ``index`` may be smaller than ``x`` in every dim."""
    _check(index, x.shape[dim], dim, "gather")
    p = plain(x)
    if index.shape != p.shape:
        p = p[tuple([slice(None) if d == dim else slice(0, m) for d, m in enumerate(index.shape)])]
    return like(np.take_along_axis(p, index, axis=dim), x)


def scatter(x, dim, index, src, mode):
    """A copy of ``x`` with ``src``'s leading block written (``set``) or added (``add``) at ``index``
    along ``dim``; repeated positions: the last write wins, additions accumulate in order."""
    _check(index, x.shape[dim], dim, "scatter")
    nd = len(index.shape)
    where = tuple([index if d == dim else np.arange(m).reshape([m if k == d else 1 for k in range(nd)])
                   for d, m in enumerate(index.shape)])
    s = plain(src)
    if s.shape != index.shape:
        s = s[tuple([slice(0, m) for m in index.shape])]
    p = plain(x)
    if mode == "set":
        out = np.array(p)
        out[where] = s
        return like(out, x)
    if p.dtype.kind == "f":
        # the Cpu backend adds in double precision and rounds once
        acc = p.astype(F64)
        np.add.at(acc, where, s.astype(F64))
        return round_float(acc, ember_dtype(x))
    out = np.array(p)
    np.add.at(out, where, s)  # integers wrap, bools or
    return out
