"""Reductions of the Cpu backend along one dim; the reduced dim stays with size 1."""
import math

from ... import dtypes
from . import scalar as S
from .array import CpuArray, numel, values
from .storage import build, pack, strided


def _segments(a, dim):
    """``segment(k)``: output element k's inputs (a slice of the row-major values)."""
    v = values(a)
    shape = a.shape
    n = shape[dim]
    inner = numel(shape[dim + 1:])
    block = n * inner
    if inner == 1:
        return lambda k: v[k * n:(k + 1) * n]
    return lambda k: strided(v, (k // inner) * block + k % inner, n, inner)


def _has_nan(seg):
    s = sum(seg)
    if s == s:
        return False
    for x in seg:
        if x != x:
            return True
    return False  # inf - inf, not a nan in the input


def _first_nan(seg):
    for i, x in enumerate(seg):
        if x != x:
            return i
    return -1


if hasattr(math, "prod"):
    _prod = math.prod
else:
    def _prod(seg):
        p = 1
        for v in seg:
            p = p * v
        return p


def _index(seg, value):
    for i, x in enumerate(seg):  # (MicroPython's array has no index())
        if x == value:
            return i
    return -1


def folder(op, dtype):
    """``(fold, out_dtype)``: ``fold(seg)`` is the sum, prod, max or min of one segment's stored
    values, before ``out_dtype`` stores it (the fused-kernel interpreter folds its rows with it)."""
    if op == "sum" or op == "prod":
        fold = sum if op == "sum" else _prod
        if dtype.kind == "f":
            return fold, dtype
        return (lambda s: int(fold(s))), dtypes.int64 if dtype.kind == "b" else dtype
    pick = max if op == "max" else min
    if dtype.kind != "f":
        return pick, dtype
    nan = S.NAN
    return (lambda s: nan if _has_nan(s) else pick(s)), dtype


def reduce(op, a, dim):
    """The primitive ``reduce``: ``op`` (``REDUCE_OPS``) over ``dim``, which stays with size 1; arg* give int64,
    any/all bool."""
    seg = _segments(a, dim)
    dtype = a.dtype
    is_float = dtype.kind == "f"
    out_shape = a.shape[:dim] + (1,) + a.shape[dim + 1:]
    count = numel(out_shape)
    if op in ("sum", "prod", "max", "min"):
        fold, dtype = folder(op, dtype)
        return CpuArray(build(dtype, count, lambda i, j: [fold(seg(k)) for k in range(i, j)]), out_shape, dtype)
    if op == "any":
        return CpuArray([any(seg(k)) for k in range(count)], out_shape, dtypes.bool_)
    if op == "all":
        return CpuArray([all(seg(k)) for k in range(count)], out_shape, dtypes.bool_)
    # argmax / argmin: the first index of the extreme, or of the first nan
    pick = max if op == "argmax" else min

    def first(s):
        i = _first_nan(s) if is_float and _has_nan(s) else -1
        return i if i >= 0 else _index(s, pick(s))
    return CpuArray(build(dtypes.int64, count, lambda i, j: [first(seg(k)) for k in range(i, j)]), out_shape,
                    dtypes.int64)


def _index(seg, value):
    for i, x in enumerate(seg):  # (MicroPython's array has no index())
        if x == value:
            return i
    return -1


def _running(seg, better):
    """Running extreme of ``seg`` and the index where it was reached (nan, once seen, stays)."""
    vals, idxs = [], []
    best, at = None, 0
    for i, v in enumerate(seg):
        if best is None or (best == best and (v != v or better(v, best) or v == best)):
            best, at = v, i
        vals.append(best)
        idxs.append(at)
    return vals, idxs


def _gt(a, b):
    return a > b


def _lt(a, b):
    return a < b


def _lines(shape, dim):
    """For each line along ``dim``, the positions of its elements in the row-major values."""
    n = shape[dim]
    inner = numel(shape[dim + 1:])
    for o in range(numel(shape[:dim])):
        for i in range(inner):
            yield range(o * n * inner + i, (o + 1) * n * inner, inner)


def scan(op, a, dim):
    """Inclusive scans along ``dim``: cumsum, cumprod, cummax/cummin and their indices."""
    v = values(a)
    shape = a.shape
    out = [None] * len(v)
    dtype = a.dtype
    for pos in _lines(shape, dim):
        seg = [v[p] for p in pos]
        if op == "cumsum" or op == "cumprod":
            acc, res = (0, []) if op == "cumsum" else (1, [])
            for x in seg:
                acc = acc + x if op == "cumsum" else acc * x
                res.append(acc)
        else:
            vals, idxs = _running(seg, _gt if op in ("cummax", "cumargmax") else _lt)
            res = vals if op in ("cummax", "cummin") else idxs
        for p, r in zip(pos, res):
            out[p] = r
    if op in ("cumargmax", "cumargmin"):
        return CpuArray(pack(out, dtypes.int64), shape, dtypes.int64)
    return CpuArray(pack(out, dtype), shape, dtype)


# nan sorts last ascending and first descending, as torch does; the position breaks ties, so
# the sort is stable even on MicroPython, whose list.sort is not
def _ascending(item):
    k, v = item
    return (1, 0, k) if v != v else (0, v, k)


def _descending(item):
    k, v = item
    return (0, 0, k) if v != v else (1, -v, k)


def sort(a, dim, descending):
    """(values, indices) sorted along ``dim``; stable."""
    v = values(a)
    shape = a.shape
    vals = [None] * len(v)
    idxs = [0] * len(v)
    key = _descending if descending else _ascending
    for pos in _lines(shape, dim):
        pairs = sorted([(k, v[p]) for k, p in enumerate(pos)], key=key)
        for p, (k, x) in zip(pos, pairs):
            vals[p] = x
            idxs[p] = k
    return CpuArray(pack(vals, a.dtype), shape, a.dtype), CpuArray(pack(idxs, dtypes.int64), shape, dtypes.int64)
