"""Movement primitives of the Candle device: candle views where the binding has them (``narrow``,
``transpose``, ``broadcast_as``), ``index_select`` for stepped ranges, ``gather``; empties on the host.
"""
import candle
from ember.accel.numpy.arrays import from_values

from .exchange import I64, CandleArray, empty, numel, upload
from .host import host

_host = {name: host(name) for name in ("reshape", "expand", "slice", "cat", "gather")}


def reshape(x, shape):
    """The primitive ``reshape``: candle's (a strided view is copied)."""
    if empty(x) or numel(shape) == 0:
        return _host["reshape"](x, shape)
    return CandleArray(x.t.reshape(tuple(shape)), x.dtype)


def permute(x, dims):
    """The primitive ``permute``: a chain of ``transpose`` views."""
    # the binding has transpose only: a permutation is at most rank - 1 swaps
    t, order = x.t, list(range(len(dims)))
    for i, d in enumerate(dims):
        j = order.index(d)
        if j != i:
            t = t.transpose(i, j)
            order[i], order[j] = order[j], order[i]
    return CandleArray(t, x.dtype)


def expand(x, shape):
    """The primitive ``expand``: candle's ``broadcast_as`` (a stride-0 view)."""
    if empty(x) or numel(shape) == 0:
        return _host["expand"](x, shape)
    return CandleArray(x.t.broadcast_as(tuple(shape)), x.dtype)


def slice_(x, ranges):
    """The primitive ``slice``: ``narrow`` per step-1 range, ``index_select`` of the positions otherwise."""
    out = [len(range(*r)) for r in ranges]
    if empty(x) or 0 in out:
        return _host["slice"](x, ranges)
    t = x.t
    for dim, ((start, _, step), n) in enumerate(zip(ranges, out)):
        if step != 1 or n != t.shape[dim]:
            t = take(t, dim, start, step, n)
    return CandleArray(t, x.dtype)


def cat(xs, dim):
    """The primitive ``cat``: ``candle.cat`` of the non-empty parts."""
    full = [x for x in xs if not empty(x)]
    if not full:
        return _host["cat"](xs, dim)
    if len(full) == 1:
        return full[0]
    return CandleArray(candle.cat([x.t for x in full], dim), xs[0].dtype)


def gather(x, dim, index):
    """The primitive ``gather``: candle's; an index out of range is the NumPy kernel's error."""
    if empty(x, index):
        return _host["gather"](x, dim, index)
    t = x.t
    for d, (n, m) in enumerate(zip(t.shape, index.t.shape)):
        if d != dim and m != n:  # candle wants equal sizes off dim; only the first m are read
            t = t.narrow(d, 0, m)
    try:
        return CandleArray(t.contiguous().gather(index.t.contiguous(), dim), x.dtype)
    except ValueError as e:
        if "InvalidIndex" not in str(e):
            raise
    return _host["gather"](x, dim, index)  # the NumPy kernel raises IndexOutOfRange naming the index


def take(t, dim, start, step, count):
    """The candle tensor ``t`` at positions ``start, start + step, ...`` (``count`` of them) along ``dim``."""
    if step == 1:
        return t.narrow(dim, start, count)
    idx = from_values(list(range(start, start + step * count, step)), I64)
    return t.contiguous().index_select(upload(idx, I64).t, dim)
