"""Elementwise functions composed from primitives: inverse hyperbolics, log2/log10/exp2, logaddexp,
fmod, copysign, lerp, isclose.

Each is a composite (a backend may replace it by name) that runs on every backend and decorator.
Integer inputs compute in the default float; float16 and bfloat16 compute in float32 and round
once, as the nn composites do. Autodiff has a backward for each differentiable one
(``ember.accel.autodiff.composites``), so a branch that ``where`` discards (an overflowing
``x * x``) never turns a gradient into nan. Loaded on first use, not by ``import ember``.
"""
from . import dtypes
from .composite import composite
from .elementwise import binary, where
from .errors import ArgumentError, ArgumentTypeError, DTypeError
from .shapes import broadcast_shapes
from .tensor import Tensor

_LN2 = 0.6931471805599453
_INV_LN2 = 1.4426950408889634
_INV_LN10 = 0.4342944819032518
_BIG = 268435456.0  # 2**28: above it x*x + 1 == x*x in float32, so asinh/acosh are log(2x)


def _tensor(x, op):
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (op, type(x).__name__))
    return x


def _float(x, op):
    """``x`` in the dtype the function computes in, and the dtype to round the result to (or None)."""
    dt = _tensor(x, op).dtype
    if dt.kind != "f":
        return x.to(dtypes.default_float), None
    if dt is dtypes.float16 or dt is dtypes.bfloat16:
        return x.to(dtypes.float32), dt
    return x, None


def _down(out, dtype):
    return out if dtype is None else out.to(dtype)


def _common(a, b, op):
    """``a`` and ``b`` (tensors or numbers, one a tensor) in one float dtype, and the dtype to round to."""
    ta, tb = type(a) is Tensor, type(b) is Tensor
    if not ta and not tb:
        raise ArgumentTypeError("%s: expected a tensor, found %s and %s" % (op, type(a).__name__, type(b).__name__))
    if ta and tb:
        broadcast_shapes(a.shape, b.shape, op)  # a mismatch names this op, not the primitive that meets it
        dt = dtypes.promote(a.dtype, b.dtype)
    else:
        t, s = (a, b) if ta else (b, a)
        dt = dtypes.promote_scalar(t.dtype, s, op)
    out = None
    if dt.kind != "f":
        dt = dtypes.default_float
    elif dt is dtypes.float16 or dt is dtypes.bfloat16:
        dt, out = dtypes.float32, dt
    return (a.to(dt) if ta else float(a)), (b.to(dt) if tb else float(b)), out


# -- inverse hyperbolic functions ------------------------------------------------------------------

@composite
def asinh(x):
    """Inverse hyperbolic sine, elementwise: log(x + sqrt(x² + 1)), accurate near 0 and for large |x|."""
    x, dt = _float(x, "asinh")
    a = x.abs()
    small = (a + a * a / ((a * a + 1).sqrt() + 1)).log1p()
    r = where(a > _BIG, a.log() + _LN2, small)
    return _down(where(signbit(x), -r, r), dt)


@composite
def acosh(x):
    """Inverse hyperbolic cosine, elementwise: log(x + sqrt(x² - 1)); nan below 1."""
    x, dt = _float(x, "acosh")
    t = x - 1
    small = (t + t.sqrt() * (x + 1).sqrt()).log1p()  # sqrt(t): nan below 1, where (x-1)(x+1) > 0 again
    return _down(where(x > _BIG, x.log() + _LN2, small), dt)


@composite
def atanh(x):
    """Inverse hyperbolic tangent, elementwise: log((1 + x) / (1 - x)) / 2; ±inf at ±1, nan beyond."""
    x, dt = _float(x, "atanh")
    return _down((x * 2 / (1 - x)).log1p() * 0.5, dt)


# -- logarithms and exponentials of other bases ------------------------------------------------------

@composite
def log2(x):
    """Base-2 logarithm, elementwise."""
    x, dt = _float(x, "log2")
    return _down(x.log() * _INV_LN2, dt)


@composite
def log10(x):
    """Base-10 logarithm, elementwise."""
    x, dt = _float(x, "log10")
    return _down(x.log() * _INV_LN10, dt)


@composite
def exp2(x):
    """2 to the power x, elementwise (the pow primitive: exact where 2**x is representable)."""
    x, dt = _float(x, "exp2")
    return _down(binary("pow", 2.0, x), dt)


@composite
def logaddexp(a, b):
    """log(exp(a) + exp(b)), elementwise, without overflow."""
    a, b, dt = _common(a, b, "logaddexp")
    r = binary("maximum", a, b) + (-(binary("sub", a, b).abs())).exp().log1p()
    tie = (a if type(a) is Tensor else b) + _LN2  # equal infinities too, where a - b is nan
    return _down(where(binary("eq", a, b), tie, r), dt)


@composite
def logaddexp2(a, b):
    """log2(2**a + 2**b), elementwise, without overflow."""
    a, b, dt = _common(a, b, "logaddexp2")
    r = binary("maximum", a, b) + binary("pow", 2.0, -(binary("sub", a, b).abs())).log1p() * _INV_LN2
    tie = (a if type(a) is Tensor else b) + 1.0
    return _down(where(binary("eq", a, b), tie, r), dt)


# -- sign and remainder --------------------------------------------------------------------------------

def signbit(x):
    """Whether each element's sign bit is set: x < 0, and -0.0 (1 / -0.0 is -inf); bool."""
    if type(x) is not Tensor:
        return x < 0 or (x == 0 and str(x).startswith("-"))
    if x.dtype.kind != "f":
        return x < 0
    return (x < 0) | ((x == 0) & (x.reciprocal() < 0))


@composite
def copysign(a, b):
    """|a| with the sign of b, elementwise (-0.0 counts as negative); always a float result."""
    a, b, dt = _common(_tensor(a, "copysign"), b, "copysign")
    m = a.abs()
    neg = signbit(b)
    if type(neg) is not Tensor:
        return _down(-m if neg else m, dt)
    return _down(where(neg, -m, m), dt)


@composite
def fmod(a, b):
    """C's remainder of a / b: the sign of the dividend a (``remainder``/``%`` take the divisor's)."""
    ta, tb = type(a) is Tensor, type(b) is Tensor
    if not ta:
        raise ArgumentTypeError("fmod: expected a tensor dividend, found %s" % type(a).__name__)
    if a.dtype.kind == "b" and (not tb or b.dtype.kind == "b"):
        raise DTypeError("fmod: expected integer or float tensors, found bool")
    if tb:
        broadcast_shapes(a.shape, b.shape, "fmod")
    ab = b.abs() if tb else abs(b)
    m = binary("mod", a.abs(), ab)  # both positive: Python's rule and C's agree, exactly
    dt = m.dtype
    if dt.kind == "f":
        neg = signbit(a) if a.dtype is dt else signbit(a.to(dt))
    else:
        neg = a < 0
    return where(neg, -m, m)


# -- interpolation ---------------------------------------------------------------------------------------

@composite
def lerp(start, end, weight):
    """start + weight · (end - start), elementwise; ``weight`` a number or a tensor (PyTorch's formula:
    exact at weight 0 and 1)."""
    _tensor(start, "lerp")
    if type(end) is not Tensor:
        raise ArgumentTypeError("lerp: expected a tensor end, found %s" % type(end).__name__)
    if start.dtype.kind != "f" or end.dtype.kind != "f":
        raise DTypeError("lerp: expected float tensors, found %s and %s" % (start.dtype.name, end.dtype.name))
    if type(weight) is Tensor:
        if weight.dtype.kind != "f":
            raise DTypeError("lerp: expected a float weight, found %s" % weight.dtype.name)
    elif type(weight) not in (int, float):
        raise ArgumentTypeError("lerp: expected a number or a tensor weight, found %s" % type(weight).__name__)
    shape = broadcast_shapes(start.shape, end.shape, "lerp")
    if type(weight) is Tensor:
        broadcast_shapes(shape, weight.shape, "lerp")
    diff = end - start
    if type(weight) is not Tensor:
        return start + diff * weight if abs(weight) < 0.5 else end - diff * (1 - weight)
    return where(weight.abs() < 0.5, start + diff * weight, end - diff * (1 - weight))


# -- closeness -----------------------------------------------------------------------------------------

def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol · |b| elementwise (PyTorch's rule; equal infinities are close); bool."""
    op = "isclose"
    _tensor(a, op)
    if type(b) is not Tensor and type(b) not in (bool, int, float):
        raise ArgumentTypeError("isclose: expected a tensor or a number other, found %s" % type(b).__name__)
    for name, v in (("rtol", rtol), ("atol", atol)):
        if type(v) not in (int, float) or not v >= 0:
            raise ArgumentError("isclose: %s must be a number >= 0, found %r" % (name, v))
    close = a == b
    if equal_nan:
        close = close | (a.isnan() & (b.isnan() if type(b) is Tensor else b != b))
    if rtol == 0 and atol == 0:
        return close
    fa, fb, _ = _common(a, b, op)
    diff = binary("sub", fa, fb).abs()
    allowed = (fb.abs() if type(fb) is Tensor else abs(fb)) * rtol + atol
    return close | (diff.isfinite() & binary("le", diff, allowed))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of ``a`` is close to ``b`` (``isclose``); a Python bool."""
    return bool(isclose(a, b, rtol, atol, equal_nan).all().item())
