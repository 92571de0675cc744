"""Elementwise primitives of the NumPy device: unary, binary, where, cast.

Every kernel runs with numpy's floating-point warnings off (IEEE results, integer ``x // 0 == 0``)
and restores the caller's error state afterwards. ``+ - * /`` and ``sqrt`` run in the dtype itself
(float32 stays float32: one correctly rounded operation, as on the Cpu backend). Operations that the
Cpu backend computes as one double-precision function and rounds once (``//``, ``%``, ``**``,
``atan2``, ``rsqrt``, ``sigmoid``, ``erf``) run in float64 here and are rounded the same way, so the
two devices agree on them to the last bit. float16 and bfloat16 compute in float32 or float64
and round to nearest even.
"""
import numpy as np

from ember.ops import COMPARISONS, ROUNDING

from .arrays import (BF16, BOOL, F32, F64, I64, NP, QUIET, as_array, ember_dtype, from_float, from_values,
                     like, ndarray, plain, reset_state, round_float, set_state, to_bf16)
from .special import erf as _erf

_COMPARE = COMPARISONS

# ops whose ufunc gives ember's result on every dtype the frontend sends them (bfloat16 apart)
_DIRECT = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}
# integer ops that numpy gets right too (x // 0 == x % 0 == 0; signs follow the divisor)
_INT_DIRECT = {"floordiv": np.floor_divide, "mod": np.remainder}
# float ops computed in float64 and rounded once (numpy's float64 // and % follow Python's rules)
_FLOAT64 = {"floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "atan2": np.arctan2}


def binary(op, a, b):
    """``a op b``: arrays of one shape and dtype, or one side a Python scalar of that dtype."""
    f = _DIRECT.get(op)
    if f is not None and type(a) is not BF16 and type(b) is not BF16:
        token = set_state(QUIET)
        try:
            out = f(a, b)
        except OverflowError:  # a Python int outside the array's integer dtype
            out = _wide_scalar(op, a, b)
        finally:
            reset_state(token)
        return out if type(out) is ndarray else np.asarray(out)
    return _binary(op, a, b)


def _binary(op, a, b):
    x = b if type(a) in (bool, int, float) else a
    token = set_state(QUIET)
    try:
        if type(x) is BF16:
            pa = a.view(ndarray) if type(a) is BF16 else a
            pb = b.view(ndarray) if type(b) is BF16 else b
            out = as_array(_float_binary(op, pa, pb, F32))
            return out if op in _COMPARE else to_bf16(out)
        kind = x.dtype.kind
        if kind == "f":
            return as_array(_float_binary(op, a, b, x.dtype))
        if op in _INT_DIRECT:
            try:
                return as_array(_INT_DIRECT[op](a, b))
            except OverflowError:
                return _wide_scalar(op, a, b)
        if op == "pow":
            return _int_pow(a, b, x.dtype)
    finally:
        reset_state(token)
    raise ValueError("binary: op %r is not defined on %s" % (op, ember_dtype(x).name))


def _float_binary(op, a, b, dt):
    """A float op on plain arrays (or scalars) of numpy dtype ``dt``; the result has dtype ``dt``."""
    f = _DIRECT.get(op)
    if f is not None:
        return f(a, b)
    f = _FLOAT64[op]
    if dt == F64:
        return f(a, b)
    wa = a.astype(F64) if type(a) is ndarray else a
    wb = b.astype(F64) if type(b) is ndarray else b
    out = f(wa, wb)
    out = out.astype(F32)  # the Cpu backend rounds to float32 first, float16 after
    return out.astype(dt) if dt != F32 else out


def _wide_scalar(op, a, b):
    """``a op b`` where a Python int does not fit the array's integer dtype: the int64 result
    (exact for every op here, modulo 2**64) wrapped into the dtype, as the Cpu backend wraps."""
    scalar_first = type(a) is int
    s, x = (a, b) if scalar_first else (b, a)
    if -(1 << 63) <= s < (1 << 63) and x.dtype != I64:
        w = x.astype(I64)
        out = binary(op, s, w) if scalar_first else binary(op, w, s)
        return out if op in _COMPARE else out.astype(x.dtype)
    return _via_cpu(op, a, b)


def _via_cpu(op, a, b):
    """The Cpu backend's own kernel, for operands numpy's integers cannot hold (beyond 64 bits)."""
    from ember.backends.cpu import elementwise as cpu_ew
    from ember.backends.cpu.array import values

    def lift(v):
        if type(v) in (bool, int, float):
            return v
        return _cpu_array(v)

    out = cpu_ew.binary(op, lift(a), lift(b))
    return from_values(values(out), out.dtype).reshape(out.shape)


def _cpu_array(x):
    from ember.backends.cpu.array import CpuArray
    return CpuArray(plain(x).ravel().tolist(), tuple(x.shape), ember_dtype(x))


def _int_pow(a, b, dt):
    """Integer ``a ** b``, wrapped; exponents below zero truncate like C: 0, except base 1 (1)
    and base -1 (-1 for odd exponents, 1 for even)."""
    try:
        pa = a if type(a) is ndarray else np.asarray(a, dtype=dt)
        pb = b if type(b) is ndarray else np.asarray(b, dtype=dt)
    except OverflowError:
        return _via_cpu("pow", a, b)
    neg = pb < 0
    if not neg.any():
        return as_array(np.power(pa, pb))
    out = np.power(pa, np.where(neg, 0, pb).astype(dt))
    odd = (pb & 1) == 1
    fix = np.where(pa == 1, 1, np.where(pa == -1, np.where(odd, -1, 1), 0)).astype(dt)
    return as_array(np.where(neg, fix, out))


# -- unary ------------------------------------------------------------------------------------

def _in_float64(fn):
    """``fn`` computed in float64 and rounded once to the input's float dtype."""
    def f(x):
        if x.dtype == F64:
            return fn(x)
        out = fn(x.astype(F64)).astype(F32)
        return out if x.dtype == F32 else out.astype(x.dtype)
    return f


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    d = 1.0 + e
    return np.where(x >= 0, 1.0 / d, e / d)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


_FLOAT_UNARY = {
    "neg": np.negative, "abs": np.absolute, "sign": np.sign,
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": _in_float64(_rsqrt),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "erf": _in_float64(_erf),
    "sigmoid": _in_float64(_sigmoid), "expm1": np.expm1, "log1p": np.log1p,
    "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc,
    "reciprocal": np.reciprocal,
    "isnan": np.isnan, "isinf": np.isinf,
}
_INT_UNARY = {"neg": np.negative, "abs": np.absolute, "sign": np.sign, "bitwise_not": np.invert}
_KEEP = ROUNDING


def unary(op, x):
    """The primitive ``unary``: numpy's ufunc for ``op``, with ember's dtype and integer rules."""
    if type(x) is BF16:
        return _unary_bf16(op, x)
    kind = x.dtype.kind
    if kind == "f":
        f = _FLOAT_UNARY.get(op)
        if f is not None:
            token = set_state(QUIET)
            try:
                out = f(x)
            finally:
                reset_state(token)
            return out if type(out) is ndarray else np.asarray(out)
    elif op in _KEEP:
        return x
    elif op == "isnan" or op == "isinf":
        return np.zeros(x.shape, dtype=BOOL)
    elif kind == "b":
        if op == "bitwise_not" or op == "logical_not":
            return as_array(np.logical_not(x))
    elif op in _INT_UNARY:
        return as_array(_INT_UNARY[op](x))
    if op == "logical_not":
        return as_array(x == 0)
    raise ValueError("unary: op %r is not defined on %s" % (op, ember_dtype(x).name))


def _unary_bf16(op, x):
    p = x.view(ndarray)
    if op == "isnan" or op == "isinf" or op == "logical_not":
        return unary(op, p)
    token = set_state(QUIET)
    try:
        return to_bf16(unary(op, p))
    finally:
        reset_state(token)


# -- where, cast ------------------------------------------------------------------------------

def where(cond, a, b):
    """The primitive ``where``: ``np.where(cond, a, b)``."""
    out = np.where(cond, plain(a), plain(b))
    return like(as_array(out), a)


def cast(x, dtype):
    """The primitive ``cast``: ``x`` in ``dtype`` with ember's rules (truncation; nan and inf to 0)."""
    src = ember_dtype(x)
    if src is dtype:
        return x
    p = plain(x)
    if dtype.kind == "f":
        return round_float(p, dtype)
    if dtype.kind == "b":
        return as_array(p != 0)
    if src.kind == "f":
        return from_float(p, dtype)
    return p.astype(NP[dtype])
