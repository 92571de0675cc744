"""Reductions of the Candle device: sums, NaN-aware max/min and their first index, any/all.
"""
import candle
from ember.accel.numpy.arrays import from_values

from .exchange import BOOL, F32, F64, FLOATS, HALVES, I64, CandleArray, empty, scalar, upload
from .host import host

_host = {name: host(name) for name in ("reduce",)}


def _nan_fill(t, r, dim, dtype):
    # candle's max/min skip NaN; ember's propagate it
    has_nan = (t != t).max_keepdim(dim)
    return has_nan.where_cond(scalar(float("nan"), dtype, r.shape), r)


def reduce(op, x, dim):
    """The primitive ``reduce`` over ``dim`` (kept with size 1): sums (floats accumulated in f64),
    NaN-aware max/min and their first index, any/all of bools in candle; prod and the sums that
    must wrap on the host."""
    dtype = x.dtype
    if empty(x):
        return _host["reduce"](op, x, dim)
    t = x.t
    if op == "sum":
        if dtype is F64 or dtype is I64:
            return CandleArray(t.sum_keepdim(dim), dtype)
        if dtype is F32:  # accumulate in f64, round once
            return CandleArray(t.to_dtype(candle.f64).sum_keepdim(dim).to_dtype(candle.f32), dtype)
        if dtype in HALVES:
            r = t.to_dtype(candle.f64).sum_keepdim(dim).to_dtype(candle.f32)
            return CandleArray(r.to_dtype(t.dtype), dtype)
    if op in ("max", "min"):
        r = t.max_keepdim(dim) if op == "max" else t.min_keepdim(dim)
        if dtype in FLOATS:
            r = _nan_fill(t, r, dim, dtype)
        return CandleArray(r, dtype)
    if op in ("argmax", "argmin"):
        return CandleArray(_arg_extreme(op, t, dim, dtype), I64)
    if dtype is BOOL and op in ("any", "all"):
        return CandleArray(t.max_keepdim(dim) if op == "any" else t.min_keepdim(dim), BOOL)
    return _host["reduce"](op, x, dim)


def _arg_extreme(op, t, dim, dtype):
    # the first index holding the (NaN-aware) extreme: candle's argmax skips NaN and returns u32
    r = t.max_keepdim(dim) if op == "argmax" else t.min_keepdim(dim)
    if dtype in FLOATS:
        r = _nan_fill(t, r, dim, dtype)
    r = r.broadcast_as(t.shape)
    hit = t == r
    if dtype in FLOATS:
        hit = (t != t).where_cond(r != r, hit)
    n = t.shape[dim]
    pos = [1] * len(t.shape)
    pos[dim] = n
    idx = upload(from_values(list(range(n)), I64).reshape(tuple(pos)), I64).t.broadcast_as(t.shape)
    return hit.where_cond(idx, scalar(n, I64, t.shape)).min_keepdim(dim)
