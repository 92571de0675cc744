"""Movement primitives of the Cpu backend: views where the layout allows, copies otherwise."""
from ...errors import IndexOutOfRange
from .array import CpuArray, flat_indices, numel, strides_for, values, view
from .storage import CODES, build, copy_into, empty, pack


def reshape(a, shape):
    """The primitive ``reshape``: ``a`` in ``shape`` (same element count), a view when ``a`` is contiguous."""
    if a.strides is None:
        return CpuArray(a.data, shape, a.dtype)
    return CpuArray(values(a), shape, a.dtype)


def permute(a, dims):
    """The primitive ``permute``: a view of ``a`` with its dims reordered by ``dims``."""
    strides, offset = a.layout()
    return view(a, tuple(a.shape[d] for d in dims), tuple(strides[d] for d in dims), offset)


def expand(a, shape):
    """The primitive ``expand``: a view of ``a`` (same rank) whose size-1 dims grow to ``shape`` (stride 0)."""
    strides, offset = a.layout()
    new = tuple(0 if n != m else s for n, m, s in zip(a.shape, shape, strides))
    return view(a, tuple(shape), new, offset)


def slice_(a, ranges):
    """The primitive ``slice``: a view of the region ``ranges`` (one ``(start, stop, step)`` per dim; steps may be
    negative)."""
    strides, offset = a.layout()
    shape, new = [], []
    for (start, stop, step), s in zip(ranges, strides):
        shape.append(len(range(start, stop, step)))
        new.append(s * step)
        offset += start * s
    return view(a, tuple(shape), tuple(new), offset)


def _region(shape, ranges):
    """List positions, in a contiguous array of ``shape``, of the region ``ranges`` selects."""
    strides = strides_for(shape)
    offset = 0
    sizes, steps = [], []
    for (start, stop, step), s in zip(ranges, strides):
        sizes.append(len(range(start, stop, step)))
        steps.append(s * step)
        offset += start * s
    return flat_indices(sizes, steps, offset)


def slice_assign(a, ranges, value):
    """The primitive ``slice_assign``: a new array, ``a`` with the region ``ranges`` replaced by ``value``."""
    out = _copy(a)
    for i, v in zip(_region(a.shape, ranges), values(value)):
        out[i] = v
    return CpuArray(out, a.shape, a.dtype)


def _copy(a):
    """A new sequence of a's row-major values in its dtype's storage, to write into."""
    out = values(a)[:]  # values() may be a's own sequence
    if type(out) is list and a.dtype in CODES:
        return pack(out, a.dtype)  # a list another backend made
    return out


def cat(arrays, dim):
    """The primitive ``cat``: ``arrays`` (one dtype, equal sizes but ``dim``) joined along ``dim``."""
    first = arrays[0]
    outer = numel(first.shape[:dim])
    inner = numel(first.shape[dim + 1:])
    parts = [(values(x), x.shape[dim] * inner) for x in arrays]
    size = sum(x.shape[dim] for x in arrays)
    dtype = first.dtype
    out = empty(dtype, outer * size * inner)
    at = 0
    for o in range(outer):
        for v, block in parts:
            copy_into(out, at, v[o * block:(o + 1) * block], dtype)
            at += block
    return CpuArray(out, first.shape[:dim] + (size,) + first.shape[dim + 1:], dtype)


def _positions(x, dim, index, op):
    """List positions in contiguous ``x`` that ``index`` (along ``dim``) selects, in index order."""
    idx = values(index)
    n = x.shape[dim]
    if idx and (min(idx) < 0 or max(idx) >= n):
        bad = [i for i in idx if i < 0 or i >= n][0]
        raise IndexOutOfRange("%s: index %d is out of range for dim %d of size %d" % (op, bad, dim, n))
    strides = list(strides_for(x.shape))
    step = strides[dim]
    strides[dim] = 0
    base = flat_indices(index.shape, strides, 0)
    return [b + i * step for b, i in zip(base, idx)]


def gather(x, dim, index):
    """The primitive ``gather``: ``x`` read along ``dim`` at the int64 ``index`` (same rank; the result has its
    shape)."""
    xv = values(x)
    positions = _positions(x, dim, index, "gather")
    return CpuArray(build(x.dtype, len(positions), lambda i, j: [xv[p] for p in positions[i:j]]),
                    index.shape, x.dtype)


def scatter(x, dim, index, src, mode):
    """The primitive ``scatter``: a new array, ``x`` with ``src`` written (``mode`` 'set') or added ('add') at
    ``index`` along ``dim``."""
    strides, offset = src.layout()
    sv = src.data
    picked = [sv[i] for i in flat_indices(index.shape, strides, offset)]
    positions = _positions(x, dim, index, "scatter")
    if mode == "set":
        out = _copy(x)
        for p, v in zip(positions, picked):
            out[p] = v
        return CpuArray(out, x.shape, x.dtype)
    # sums in Python numbers, rounded or wrapped once at the end (an array would round each add)
    out = list(values(x))
    for p, v in zip(positions, picked):
        out[p] = out[p] + v
    if x.dtype.kind == "b":
        return CpuArray([bool(v) for v in out], x.shape, x.dtype)
    return CpuArray(pack(out, x.dtype), x.shape, x.dtype)
