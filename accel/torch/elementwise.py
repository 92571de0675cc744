"""Elementwise primitives of the Torch device: unary, binary, where.

torch gives ember's result directly for most ops. Where it does not, this file says so and mends it:
integer ``x // 0`` and ``x % 0`` (torch raises on the CPU) give 0, ``int ** negative`` truncates like
C, shifts by 64 or more (or below 0) give 0 (``>>`` of a negative value -1), and the ops that the Cpu
backend computes as one double-precision function and rounds once (``//``, ``%``, ``**``, ``atan2``,
``rsqrt``, ``sigmoid``, ``erf``) run in float64 for float32, float16 and bfloat16, so both devices
agree on them to the last bit. ``+ - * /`` and ``sqrt`` run in the dtype itself, as on the Cpu.
"""
import torch

from .arrays import BOOL, F64, I64, round_float

_tensor = torch.Tensor

# ops whose torch function gives ember's result on every dtype the frontend sends them
_DIRECT = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.true_divide,
    "maximum": torch.maximum, "minimum": torch.minimum,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor,
}
# a Python scalar on the left: the same op with its operands swapped
_SWAPPED = {"add": "add", "mul": "mul", "eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt",
            "ge": "le", "and": "and", "or": "or", "xor": "xor"}
# float ops the Cpu computes in double and rounds once
_WIDE = {"floordiv": torch.floor_divide, "mod": torch.remainder, "pow": torch.pow, "atan2": torch.atan2}


def binary(op, a, b):
    """``a op b``: tensors of one shape and dtype, or one side a Python scalar of that dtype."""
    f = _DIRECT.get(op)
    if f is not None:
        if type(a) is _tensor or isinstance(a, _tensor):
            if not isinstance(b, _tensor) and (op == "maximum" or op == "minimum" or (op == "div" and a.is_cuda)):
                # CUDA divides by a Python scalar as a product with its reciprocal (1 ulp off)
                b = torch.full_like(a, b)
            return f(a, b)
        if op in _SWAPPED:
            return _DIRECT[_SWAPPED[op]](b, a)
        if op == "sub":
            return torch.rsub(b, a)
        return f(torch.full_like(b, a), b)
    if not isinstance(a, _tensor):
        a = torch.full_like(b, a)
    elif not isinstance(b, _tensor):
        b = torch.full_like(a, b)
    if a.is_floating_point():
        return _float_wide(op, a, b)
    if op == "floordiv" or op == "mod":
        zero = b == 0
        safe = torch.where(zero, torch.ones_like(b), b)
        out = torch.floor_divide(a, safe) if op == "floordiv" else torch.remainder(a, safe)
        return torch.where(zero, torch.zeros_like(out), out)
    if op == "pow":
        return _int_pow(a, b)
    if op == "lshift" or op == "rshift":
        return _shift(op, a, b)
    raise ValueError("binary: op %r is not defined on %s" % (op, a.dtype))


def _float_wide(op, a, b):
    dt = a.dtype
    if dt is not F64:
        a, b = a.to(F64), b.to(F64)
    out = _WIDE[op](a, b)
    if op == "mod":  # a zero remainder takes the divisor's sign (Python's and numpy's rule)
        out = torch.where(out == 0, torch.copysign(out, b), out)
    return out if dt is F64 else round_float(out, dt)


def _int_pow(a, b):
    """Integer ``a ** b``, wrapped; exponents below zero truncate like C: 0, except base 1 (1)
    and base -1 (-1 for odd exponents, 1 for even)."""
    neg = b < 0
    out = torch.pow(a, torch.where(neg, torch.zeros_like(b), b))
    if not bool(neg.any()):
        return out
    one = torch.ones_like(a)
    odd = torch.remainder(b, 2) == 1
    fix = torch.where(a == 1, one, torch.where(a == -1, torch.where(odd, -one, one), torch.zeros_like(a)))
    return torch.where(neg, fix, out)


def _shift(op, a, b):
    """Shifts by 0..63 as torch computes them in int64, wrapped back; other counts as the Cpu does."""
    wide = a.to(I64) if a.dtype is not I64 else a
    n = b.to(I64)
    ok = (n >= 0) & (n < 64)
    safe = torch.where(ok, n, torch.zeros_like(n))
    if op == "lshift":
        out = torch.where(ok, torch.bitwise_left_shift(wide, safe), torch.zeros_like(wide))
    else:
        out = torch.where(ok, torch.bitwise_right_shift(wide, safe), torch.where(wide < 0, -1, 0))
    return out if out.dtype is a.dtype else out.to(a.dtype)


# -- unary ------------------------------------------------------------------------------------

def _wide(fn):
    """``fn`` computed in float64 and rounded once (to float32, then to the input's dtype)."""
    def f(x):
        if x.dtype is F64:
            return fn(x)
        return round_float(fn(x.to(F64)), x.dtype)
    return f


def _sqrt(x):
    # CUDA's float32 sqrt is correctly rounded (IEEE, as on the Cpu); torch's vectorized CPU one can
    # be 1 ulp off, so off CUDA it runs in float64 and rounds once (exact: sqrt's double rounding is harmless)
    if x.is_cuda or x.dtype is F64:
        return torch.sqrt(x)
    return round_float(torch.sqrt(x.to(F64)), x.dtype)


def _sign(x):
    return torch.where(torch.isnan(x), x, torch.sign(x))  # torch gives 0 for nan; ember keeps nan


_FLOAT_UNARY = {
    "neg": torch.neg, "abs": torch.abs, "sign": _sign,
    "exp": torch.exp, "log": torch.log, "sqrt": _sqrt, "rsqrt": _wide(torch.rsqrt),
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos,
    "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "erf": _wide(torch.erf),
    "sigmoid": _wide(torch.sigmoid), "expm1": torch.expm1, "log1p": torch.log1p,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
    "reciprocal": torch.reciprocal, "isnan": torch.isnan, "isinf": torch.isinf,
    "logical_not": torch.logical_not,
}
_INT_UNARY = {"neg": torch.neg, "abs": torch.abs, "sign": torch.sign, "bitwise_not": torch.bitwise_not,
              "logical_not": torch.logical_not}
_KEEP = ("floor", "ceil", "round", "trunc")


def unary(op, x):
    """The primitive ``unary``: torch's function for ``op``, with ember's dtype and integer rules."""
    if x.is_floating_point():
        f = _FLOAT_UNARY.get(op)
        if f is not None:
            return f(x)
    elif op in _KEEP:
        return x
    elif op == "isnan" or op == "isinf":
        return torch.zeros(x.shape, dtype=BOOL, device=x.device)
    elif x.dtype is BOOL:
        if op == "bitwise_not" or op == "logical_not":
            return torch.logical_not(x)
    else:
        f = _INT_UNARY.get(op)
        if f is not None:
            return f(x)
    raise ValueError("unary: op %r is not defined on %s" % (op, x.dtype))


def where(cond, a, b):
    """The primitive ``where``: ``torch.where(cond, a, b)``."""
    return torch.where(cond, a, b)
