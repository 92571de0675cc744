"""Elementwise primitives of the Candle device: unary, binary, where, cast.

Each runs in candle where candle gives ember's values bit for bit (or as ember's tolerances allow, for
the transcendental functions) and takes the host road for the rest: docs/candle.md lists which.
"""
import candle
from ember import dtypes

from .exchange import BOOL, F32, F64, FLOATS, I64, STORE, CandleArray, empty, scalar
from .host import host

_host = {name: host(name) for name in ("unary", "binary", "where", "cast")}


def _tanh(t):
    return candle.functional.tanh(t)


_UNARY_FLOAT = {
    "abs": candle.Tensor.abs, "exp": candle.Tensor.exp, "log": candle.Tensor.log,
    "sqrt": candle.Tensor.sqrt, "sin": candle.Tensor.sin, "cos": candle.Tensor.cos,
    "tanh": _tanh, "reciprocal": candle.Tensor.recip,
}


def _sigmoid(t):
    return ((t * -1.0).exp() + 1.0).recip()


def _rsqrt(t):
    return t.sqrt().recip()


# what the NumPy device computes in float64 and rounds once, here the same way
_UNARY_F64 = {"sigmoid": _sigmoid, "rsqrt": _rsqrt}


def unary(op, x):
    """The primitive ``unary``: candle's function where it gives ember's values, else the host's."""
    dtype = x.dtype
    if empty(x):
        return _host["unary"](op, x)
    t = x.t
    if dtype in FLOATS:
        f = _UNARY_FLOAT.get(op)
        if f is not None:
            return CandleArray(f(t), dtype)
        if op in _UNARY_F64 and dtype in (F32, F64):  # one double-precision function, rounded once
            return CandleArray(_UNARY_F64[op](t.to_dtype(candle.f64)).to_dtype(t.dtype), dtype)
        if op == "neg":  # a multiply by -1, so that 0 gives -0
            return CandleArray(t * scalar(-1.0, dtype, t.shape), dtype)
        if op == "isnan":
            return CandleArray(t != t, BOOL)
    if dtype is BOOL and op == "logical_not":
        return CandleArray(t == scalar(False, BOOL, t.shape), BOOL)
    return _host["unary"](op, x)


_COMPARE = {"eq": candle.Tensor.__eq__, "ne": candle.Tensor.__ne__, "lt": candle.Tensor.__lt__,
            "le": candle.Tensor.__le__, "gt": candle.Tensor.__gt__, "ge": candle.Tensor.__ge__}
_ARITH = {"add": candle.Tensor.__add__, "sub": candle.Tensor.__sub__, "mul": candle.Tensor.__mul__,
          "div": candle.Tensor.__truediv__}
# the arithmetic candle does as ember does, by storage dtype (i64 and u8 wrap as two's complement)
_ARITH_DTYPES = {"add": FLOATS + (I64, dtypes.uint8), "sub": FLOATS + (I64, dtypes.uint8),
                 "mul": FLOATS + (I64, dtypes.uint8), "div": FLOATS}


def binary(op, a, b):
    """The primitive ``binary``: arrays of one shape and dtype, or one side a Python scalar of it."""
    arr = a if type(a) is CandleArray else b
    dtype = arr.dtype
    if empty(arr):
        return _host["binary"](op, a, b)
    shape = arr.t.shape
    ta = a.t if type(a) is CandleArray else scalar(a, dtype, shape)
    tb = b.t if type(b) is CandleArray else scalar(b, dtype, shape)
    f = _COMPARE.get(op)
    if f is not None:
        return CandleArray(f(ta, tb), BOOL)
    f = _ARITH.get(op)
    if f is not None and dtype in _ARITH_DTYPES[op]:
        return CandleArray(f(ta, tb), dtype)
    if op in ("maximum", "minimum"):
        return CandleArray(extreme(op, ta, tb, dtype in FLOATS), dtype)
    if dtype is BOOL:
        if op == "and":
            return CandleArray(ta * tb, BOOL)
        if op == "xor":
            return CandleArray(ta != tb, BOOL)
        if op == "or":
            return CandleArray((ta + tb) != scalar(False, BOOL, shape), BOOL)
    return _host["binary"](op, a, b)


def extreme(op, ta, tb, floats):
    """Candle tensors ``ta``, ``tb`` of one shape: their elementwise ``maximum`` or ``minimum``."""
    r = (ta >= tb if op == "maximum" else ta <= tb).where_cond(ta, tb)
    if floats:  # a NaN on either side wins, as numpy's maximum and minimum give
        r = (tb != tb).where_cond(tb, r)
        r = (ta != ta).where_cond(ta, r)
    return r


def where(cond, a, b):
    """The primitive ``where``: candle's ``where_cond`` on the u8 condition."""
    if empty(cond):
        return _host["where"](cond, a, b)
    return CandleArray(cond.t.where_cond(a.t, b.t), a.dtype)


# casts candle makes exactly as ember does: (from, to) by ember dtype. None from or to float16 and
# bfloat16: candle's conversions quiet a signalling NaN (0x7C40 comes back 0x7E40), ember's keep its bits
_CASTS = {(F32, F64), (F64, F32)}
for _f in (dtypes.int64, dtypes.int32, dtypes.int8, dtypes.uint8, BOOL):
    _CASTS.add((_f, F32))
    _CASTS.add((_f, F64))
    _CASTS.add((_f, dtypes.int64))
for _f in (dtypes.int8, dtypes.uint8, BOOL):
    _CASTS.add((_f, dtypes.int32))
_CASTS |= {(BOOL, dtypes.int8), (BOOL, dtypes.uint8)}


def cast(x, dtype):
    """The primitive ``cast``: candle's ``to_dtype`` where it converts as ember does, else the host's."""
    src = x.dtype
    if src is dtype:
        return CandleArray(x.t, dtype)
    if empty(x):
        return _host["cast"](x, dtype)
    if dtype is BOOL:  # != 0: nan is True, as in every ember backend
        return CandleArray(x.t != scalar(False if src is BOOL else 0, src, x.t.shape), BOOL)
    if (src, dtype) in _CASTS:
        return CandleArray(x.t.to_dtype(STORE[dtype][0]), dtype)
    return _host["cast"](x, dtype)
