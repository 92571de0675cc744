"""Elementwise primitives of the Cpu backend: unary, binary, where, cast."""
import math

from ... import dtypes
from . import scalar as S
from .array import CpuArray, values

_FLOAT_UNARY = {
    # op: (fast, safe) — safe runs only if fast raised on a special value
    "exp": (math.exp, S.safe_exp),
    "log": (math.log, S.safe_log),
    "sqrt": (math.sqrt, S.safe_sqrt),
    "sin": (math.sin, S.safe_trig(math.sin)),
    "cos": (math.cos, S.safe_trig(math.cos)),
    "tanh": (math.tanh, math.tanh),
    "rsqrt": (S.rsqrt, S.safe_rsqrt),
    "tan": (math.tan, S.safe_domain(math.tan)),
    "asin": (math.asin, S.safe_domain(math.asin)),
    "acos": (math.acos, S.safe_domain(math.acos)),
    "atan": (math.atan, math.atan),
    "sinh": (math.sinh, S.safe_hyperbolic(math.sinh, True)),
    "cosh": (math.cosh, S.safe_hyperbolic(math.cosh, False)),
    "erf": (math.erf, math.erf),
    "sigmoid": (S.sigmoid, S.safe_sigmoid),
    "expm1": (math.expm1, S.safe_expm1),
    "log1p": (S.safe_log1p, S.safe_log1p),
    "floor": (S._rounding(math.floor), None),
    "ceil": (S._rounding(math.ceil), None),
    "round": (S._rounding(S.round_half_even), None),
    "trunc": (S._rounding(math.trunc), None),
    "reciprocal": (S.reciprocal, S.safe_reciprocal),
    "neg": (S.neg, None),
    "abs": (abs, None),
    "sign": (S.fsign, None),
}
_INT_UNARY = {"neg": S.neg, "abs": abs, "sign": S.sign, "bitwise_not": S.bitwise_not}
_IDENTITY_ON_INT = ("floor", "ceil", "round", "trunc")
_TO_BOOL = {"isnan": S.isnan, "isinf": S.isinf, "logical_not": S.logical_not}


def unary(op, a):
    av = values(a)
    dtype = a.dtype
    if op in _TO_BOOL:
        fn = _TO_BOOL[op]
        if dtype.kind != "f" and op != "logical_not":
            return CpuArray([False] * len(av), a.shape, dtypes.bool_)
        return CpuArray([bool(fn(v)) for v in av], a.shape, dtypes.bool_)
    if dtype.kind == "f":
        fast, safe = _FLOAT_UNARY[op]
        try:
            out = list(map(fast, av))
        except (OverflowError, ValueError, ZeroDivisionError):
            out = list(map(safe, av))
        return CpuArray(_round(out, dtype), a.shape, dtype)
    if op in _IDENTITY_ON_INT:
        return a
    if dtype is dtypes.bool_:
        return CpuArray([not v for v in av], a.shape, dtype)  # only bitwise_not reaches here
    return CpuArray(dtypes.wrap_int(list(map(_INT_UNARY[op], av)), dtype), a.shape, dtype)


def _round(out, dtype):
    if dtype is dtypes.float64:
        return out
    return dtypes.round_values(out, dtype)


_FLOAT_BINARY = {
    "add": (S.add, None),
    "sub": (S.sub, None),
    "mul": (S.mul, None),
    "div": (S.truediv, S.safe_div),
    "pow": (S.fpow, S.safe_fpow),
    "maximum": (S.maximum, None),
    "minimum": (S.minimum, None),
    "floordiv": (S.ffloordiv, S.safe_ffloordiv),
    "mod": (S.fmod, S.safe_fmod),
    "atan2": (math.atan2, math.atan2),
}
_INT_BINARY = {
    "add": (S.add, None),
    "sub": (S.sub, None),
    "mul": (S.mul, None),
    "maximum": (S.maximum, None),
    "minimum": (S.minimum, None),
    "floordiv": (S.ifloordiv, S.safe_ifloordiv),
    "mod": (S.imod, S.safe_imod),
    "and": (S._binop("and_"), None),
    "or": (S._binop("or_"), None),
    "xor": (S._binop("xor"), None),
    "lshift": (S.lshift, None),
    "rshift": (S.rshift, None),
}
_COMPARE = {name: S._binop(name) for name in ("eq", "ne", "lt", "le", "gt", "ge")}
_BOOL_BINARY = {"and": _INT_BINARY["and"][0], "or": _INT_BINARY["or"][0], "xor": _INT_BINARY["xor"][0],
                "maximum": _INT_BINARY["or"][0], "minimum": _INT_BINARY["and"][0]}


def _operands(a, b):
    # at most one side is a Python scalar; it is repeated to the other side's length
    if type(a) is CpuArray:
        av = values(a)
        bv = values(b) if type(b) is CpuArray else [b] * len(av)
        return av, bv, a.shape, a.dtype
    bv = values(b)
    return [a] * len(bv), bv, b.shape, b.dtype


def binary(op, a, b):
    av, bv, shape, dtype = _operands(a, b)
    if op in _COMPARE:
        return CpuArray(list(map(_COMPARE[op], av, bv)), shape, dtypes.bool_)
    kind = dtype.kind
    if kind == "b":
        return CpuArray([bool(v) for v in map(_BOOL_BINARY[op], av, bv)], shape, dtype)
    if kind == "i" and op == "pow":
        fast, safe = S.ipow(dtype.bits), None
    else:
        fast, safe = (_FLOAT_BINARY if kind == "f" else _INT_BINARY)[op]
    inline = S.INLINE.get(op) if S.INLINE is not None else None
    try:
        out = inline(av, bv) if inline is not None else list(map(fast, av, bv))
    except (OverflowError, ValueError, ZeroDivisionError):
        if safe is None:
            raise
        out = list(map(safe, av, bv))
    if kind == "f":
        return CpuArray(_round(out, dtype), shape, dtype)
    return CpuArray(dtypes.wrap_int(out, dtype), shape, dtype)


def where(cond, a, b):
    out = [x if c else y for c, x, y in zip(values(cond), values(a), values(b))]
    return CpuArray(out, a.shape, a.dtype)


def cast(a, dtype):
    if a.dtype is dtype:
        return a
    return CpuArray(dtypes.round_values(values(a), dtype), a.shape, dtype)
