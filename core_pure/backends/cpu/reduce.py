"""Reductions of the Cpu backend along one dim; the reduced dim stays with size 1."""
import math

from ... import dtypes
from . import scalar as S
from .array import CpuArray, numel, values


def _segments(a, dim):
    """Each output element's inputs, as a list (strided slices of the row-major values)."""
    v = values(a)
    shape = a.shape
    n = shape[dim]
    inner = numel(shape[dim + 1:])
    outer = numel(shape[:dim])
    block = n * inner
    if inner == 1:
        return [v[o * n:(o + 1) * n] for o in range(outer)]
    return [v[o * block + i:(o + 1) * block:inner] for o in range(outer) for i in range(inner)]


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


def reduce(op, a, dim):
    segs = _segments(a, dim)
    dtype = a.dtype
    is_float = dtype.kind == "f"
    out_shape = a.shape[:dim] + (1,) + a.shape[dim + 1:]
    if op == "sum" or op == "prod":
        fold = sum if op == "sum" else _prod
        if dtype.kind == "b":
            dtype = dtypes.int64
        out = [fold(s) for s in segs]
        if is_float:
            out = dtypes.round_values(out, dtype)
        else:
            out = dtypes.wrap_int([int(x) for x in out], dtype)
        return CpuArray(out, out_shape, dtype)
    if op == "any":
        return CpuArray([any(s) for s in segs], out_shape, dtypes.bool_)
    if op == "all":
        return CpuArray([all(s) for s in segs], out_shape, dtypes.bool_)
    if op == "max" or op == "min":
        pick = max if op == "max" else min
        if is_float:
            nan = S.NAN
            out = [nan if _has_nan(s) else pick(s) for s in segs]
        else:
            out = [pick(s) for s in segs]
        return CpuArray(out, out_shape, dtype)
    # argmax / argmin: the first index of the extreme, or of the first nan
    pick = max if op == "argmax" else min
    out = []
    for s in segs:
        i = _first_nan(s) if is_float and _has_nan(s) else -1
        out.append(i if i >= 0 else s.index(pick(s)))
    return CpuArray(out, out_shape, dtypes.int64)


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
        return CpuArray(out, shape, dtypes.int64)
    if dtype.kind == "f":
        out = dtypes.round_values(out, dtype)
    elif dtype.kind == "i":
        out = dtypes.wrap_int(out, dtype)
    return CpuArray(out, shape, dtype)


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
    return CpuArray(vals, shape, a.dtype), CpuArray(idxs, shape, dtypes.int64)
