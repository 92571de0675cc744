"""Argument checks and dtype handling shared by the op families of ``ember.nn.functional``."""
from ... import dtypes
from ...errors import ArgumentError, ArgumentTypeError
from ...tensor import Tensor


def _upcast(x):
    """float16/bfloat16 composites compute in float32 and round once at the end, as PyTorch does:
    rounding every intermediate step to 11 or 8 bits would lose most of the result."""
    if x.dtype is dtypes.float16 or x.dtype is dtypes.bfloat16:
        return x.to(dtypes.float32), x.dtype
    return x, None


def _down(out, dtype):
    return out if dtype is None else out.to(dtype)


def _cast(x, dtype, op):
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (op, type(x).__name__))
    return x.to(dtypes.get(dtype, op))


def _floating(x, op):
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (op, type(x).__name__))
    return x if x.dtype.kind == "f" else x.to(dtypes.default_float)


def _tuple(v, n, name, op):
    if type(v) is int:
        return (v,) * n
    if type(v) in (tuple, list) and len(v) == n and all(type(i) is int for i in v):
        return tuple(v)
    raise ArgumentTypeError("%s: expected %s as an int or %d ints, found %r" % (op, name, n, v))


def _check_positive(values, name, op):
    if any(v < 1 for v in values):
        raise ArgumentError("%s: %s must be >= 1, found %s" % (op, name, values))
