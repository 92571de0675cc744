"""Elementwise primitives of the Cpu backend: unary, binary, where, cast."""
import math

from ... import dtypes, ops
from . import scalar as S
from .array import CpuArray, numel, values
from . import storage
from .storage import build, convert, empty

_SCALARS = (bool, int, float)

_FLOAT_UNARY = {
    # op: (fast, safe) — safe runs only if fast raised on a special value
    "exp": (math.exp, S.safe_exp),
    "log": (math.log, S.safe_log),
    "sqrt": (math.sqrt, S.safe_sqrt),
    "sin": (math.sin, S.safe_trig(math.sin)),
    "cos": (math.cos, S.safe_trig(math.cos)),
    "tanh": (S.special("tanh"), S.special("tanh")),
    "rsqrt": (S.rsqrt, S.safe_rsqrt),
    "tan": (math.tan, S.safe_domain(math.tan)),
    "asin": (math.asin, S.safe_domain(math.asin)),
    "acos": (math.acos, S.safe_domain(math.acos)),
    "atan": (math.atan, math.atan),
    "sinh": (S.special("sinh"), S.safe_hyperbolic(S.special("sinh"), True)),
    "cosh": (S.special("cosh"), S.safe_hyperbolic(S.special("cosh"), False)),
    "erf": (S.special("erf"), S.special("erf")),
    "sigmoid": (S.sigmoid, S.safe_sigmoid),
    "expm1": (S.special("expm1"), S.safe_expm1),
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
_IDENTITY_ON_INT = ops.ROUNDING
_TO_BOOL = {"isnan": S.isnan, "isinf": S.isinf, "logical_not": S.logical_not}


def unary(op, a):
    """The primitive ``unary``: ``op`` (``ember.ops.UNARY_OPS``) of every element; isnan, isinf, logical_not give
    bool."""
    dtype = a.dtype
    if dtype.kind != "f" and op in _IDENTITY_ON_INT:
        return a
    out = dtypes.bool_ if op in _TO_BOOL else dtype
    return CpuArray(unary_data(op, dtype, values(a)), a.shape, out)


def unary_data(op, dtype, av):
    """``op`` over the stored values ``av`` of ``dtype``, stored as the result's dtype stores it
    (the fused-kernel interpreter runs its nodes through this too)."""
    n = len(av)
    if op in _TO_BOOL:
        fn = _TO_BOOL[op]
        if dtype.kind != "f" and op != "logical_not":
            return [False] * n
        return [bool(fn(v)) for v in av]
    if dtype.kind == "f":
        fast, safe = _FLOAT_UNARY[op]

        def part(i, j):
            x = _part(av, i, j)
            try:
                return list(map(fast, x))
            except (OverflowError, ValueError, ZeroDivisionError):
                return list(map(safe, x))
        return build(dtype, n, part)
    if op in _IDENTITY_ON_INT:
        return av
    if dtype is dtypes.bool_:
        return [not v for v in av]  # only bitwise_not reaches here
    fn = _INT_UNARY[op]
    return build(dtype, n, lambda i, j: list(map(fn, _part(av, i, j))))


def _part(seq, i, j):
    """``seq[i:j]``, without a copy when that is all of it."""
    if i == 0 and j == len(seq):
        return seq
    return seq[i:j]


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
_COMPARE = {name: S._binop(name) for name in ops.COMPARISONS}
_BOOL_BINARY = {"and": _INT_BINARY["and"][0], "or": _INT_BINARY["or"][0], "xor": _INT_BINARY["xor"][0],
                "maximum": _INT_BINARY["or"][0], "minimum": _INT_BINARY["and"][0]}


def _operands(a, b):
    # at most one side is a Python scalar; kernels get it repeated to the length of their part
    if type(a) is CpuArray:
        return values(a), values(b) if type(b) is CpuArray else b, a.shape, a.dtype
    return a, values(b), b.shape, b.dtype


def _sides(av, bv, i, j):
    """Both operands' values for ``[i, j)``, a scalar side repeated to that length."""
    if type(av) in _SCALARS:
        return [av] * (j - i), _part(bv, i, j)
    if type(bv) in _SCALARS:
        return _part(av, i, j), [bv] * (j - i)
    return _part(av, i, j), _part(bv, i, j)


def binary(op, a, b):
    """The primitive ``binary``: ``a op b`` (``BINARY_OPS``) of one shape and dtype, or one side a Python scalar."""
    av, bv, shape, dtype = _operands(a, b)
    out = dtypes.bool_ if op in _COMPARE else dtype
    return CpuArray(binary_data(op, dtype, av, bv, numel(shape)), shape, out)


def binary_data(op, dtype, av, bv, n):
    """``op`` over ``n`` pairs of stored values of ``dtype`` (one side may be a Python scalar),
    stored as the result's dtype stores it."""
    if op in _COMPARE:
        x, y = _sides(av, bv, 0, n)
        return list(map(_COMPARE[op], x, y))
    kind = dtype.kind
    if kind == "b":
        x, y = _sides(av, bv, 0, n)
        return [bool(v) for v in map(_BOOL_BINARY[op], x, y)]
    if kind == "i" and op == "pow":
        fast, safe = S.ipow(dtype.bits), None
    else:
        fast, safe = (_FLOAT_BINARY if kind == "f" else _INT_BINARY)[op]
    inline = S.INLINE.get(op) if S.INLINE is not None else None

    def part(i, j):
        x, y = _sides(av, bv, i, j)
        try:
            return inline(x, y) if inline is not None else list(map(fast, x, y))
        except (OverflowError, ValueError, ZeroDivisionError):
            if safe is None:
                raise
            return list(map(safe, x, y))
    return build(dtype, n, part)


def where(cond, a, b):
    """The primitive ``where``: ``a`` where the bool ``cond`` holds, else ``b`` (all of one shape)."""
    return CpuArray(where_data(a.dtype, values(cond), values(a), values(b)), a.shape, a.dtype)


def where_data(dtype, cv, av, bv):
    """Stored values of ``av`` where ``cv`` is true, else of ``bv`` (all of one length)."""
    def part(i, j):
        return [x if c else y for c, x, y in zip(_part(cv, i, j), _part(av, i, j), _part(bv, i, j))]
    return build(dtype, len(av), part)


def cast(a, dtype):
    """The primitive ``cast``: ``a`` in ``dtype`` (floats to ints truncate, nan and inf become 0)."""
    if a.dtype is dtype:
        return a
    av = values(a)
    chunk = storage.CHUNK
    if len(av) <= chunk:
        return CpuArray(convert(av, dtype), a.shape, dtype)
    out = empty(dtype, len(av))
    for i in range(0, len(av), chunk):
        part = convert(av[i:i + chunk], dtype)
        out[i:i + len(part)] = part
    return CpuArray(out, a.shape, dtype)
