"""Elementwise ONNX ops: arithmetic, comparisons, logic, activations, casts."""
import ember
import ember.nn.functional as F

from . import op
from .util import onnx_dtype, scalar_like


def _unary(name, fn, attrs=""):
    op(name, attrs=attrs)(lambda n, x: fn(x))


def _binary(name, fn):
    op(name)(lambda n, a, b: fn(a, b))


for _name, _fn in (("Abs", lambda x: x.abs()), ("Neg", lambda x: -x), ("Exp", lambda x: x.exp()),
                   ("Log", lambda x: x.log()), ("Sqrt", lambda x: x.sqrt()), ("Reciprocal", lambda x: x.reciprocal()),
                   ("Floor", lambda x: x.floor()), ("Ceil", lambda x: x.ceil()), ("Sin", lambda x: x.sin()),
                   ("Cos", lambda x: x.cos()), ("Tan", lambda x: x.tan()), ("Asin", lambda x: x.asin()),
                   ("Acos", lambda x: x.acos()), ("Atan", lambda x: x.atan()), ("Sinh", lambda x: x.sinh()),
                   ("Cosh", lambda x: x.cosh()), ("Asinh", lambda x: x.asinh()), ("Acosh", lambda x: x.acosh()),
                   ("Atanh", lambda x: x.atanh()), ("Tanh", lambda x: x.tanh()), ("Sigmoid", lambda x: x.sigmoid()),
                   ("Relu", lambda x: F.relu(x)), ("Erf", lambda x: x.erf()), ("Sign", lambda x: x.sign()),
                   ("Not", lambda x: x.logical_not()), ("Softsign", lambda x: x / (x.abs() + 1)),
                   ("Softplus", lambda x: F.softplus(x)), ("IsNaN", lambda x: x.isnan()),
                   ("Round", lambda x: x.round()),                    ("Mish", lambda x: F.mish(x)), ("Identity", lambda x: x)):
    _unary(_name, _fn)

for _name, _fn in (("Add", lambda a, b: a + b), ("Sub", lambda a, b: a - b), ("Mul", lambda a, b: a * b),
                   ("Equal", lambda a, b: a == b), ("Less", lambda a, b: a < b), ("Greater", lambda a, b: a > b),
                   ("LessOrEqual", lambda a, b: a <= b), ("GreaterOrEqual", lambda a, b: a >= b),
                   ("And", lambda a, b: a.logical_and(b)), ("Or", lambda a, b: a.logical_or(b)),
                   ("Xor", lambda a, b: a.logical_xor(b)), ("BitwiseAnd", lambda a, b: a.bitwise_and(b)),
                   ("BitwiseOr", lambda a, b: a.bitwise_or(b)), ("BitwiseXor", lambda a, b: a.bitwise_xor(b))):
    _binary(_name, _fn)


@op("Div")
def div(n, a, b):
    if a.dtype.kind == "i":  # ONNX integer division truncates toward zero
        q = (a.to(ember.float64) / b.to(ember.float64)).trunc()
        return q.to(a.dtype)
    return a / b


@op("Pow")
def pow_(n, a, b):
    if b.dtype != a.dtype:
        b = b.to(a.dtype)
    return a.pow(b)


@op("Mod", attrs="fmod")
def mod(n, a, b):
    if n.attr("fmod", 0):
        return a.fmod(b)
    return a.remainder(b)


@op("BitShift", attrs="direction")
def bitshift(n, a, b):
    if n.attr("direction") == "LEFT":
        return a.bitwise_left_shift(b)
    return a.bitwise_right_shift(b)


def _variadic(name, fn):
    def run(n, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = fn(out, x)
        return out
    op(name)(run)


_variadic("Sum", lambda a, b: a + b)
_variadic("Max", lambda a, b: a.maximum(b))
_variadic("Min", lambda a, b: a.minimum(b))


@op("Mean")
def mean(n, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out / len(xs)


@op("IsInf", attrs="detect_negative detect_positive")
def isinf(n, x):
    neg, pos = n.attr("detect_negative", 1), n.attr("detect_positive", 1)
    inf = x.isinf()
    if neg and pos:
        return inf
    return inf.logical_and(x > 0 if pos else x < 0)


@op("Where")
def where(n, c, a, b):
    return ember.where(c, a, b)


@op("Cast", attrs="to saturate round_mode")
def cast(n, x):
    to = onnx_dtype(n.attr("to"), n)
    if x.dtype.kind == "f" and to.kind in "i" and to is not ember.bool:
        x = x.trunc()
    return x.to(to)


@op("CastLike", attrs="saturate round_mode")
def cast_like(n, x, like):
    if x.dtype.kind == "f" and like.dtype.kind == "i":
        x = x.trunc()
    return x.to(like.dtype)


@op("Clip", attrs="min max")
def clip_6(n, x):
    return x.clamp(n.attr("min", -3.4028234663852886e38), n.attr("max", 3.4028234663852886e38))


@op("Clip", since=11)
def clip(n, x, lo=None, hi=None):
    if lo is not None:
        x = x.maximum(lo.to(x.dtype))
    if hi is not None:
        x = x.minimum(hi.to(x.dtype))
    return x


@op("LeakyRelu", attrs="alpha")
def leaky_relu(n, x):
    return F.leaky_relu(x, n.attr("alpha", 0.01))


@op("Elu", attrs="alpha")
def elu(n, x):
    return F.elu(x, n.attr("alpha", 1.0))


@op("Celu", attrs="alpha")
def celu(n, x):
    return F.celu(x, n.attr("alpha", 1.0))


@op("Selu", attrs="alpha gamma")
def selu(n, x):
    alpha, gamma = n.attr("alpha", 1.67326319217681884765625), n.attr("gamma", 1.05070102214813232421875)
    return ember.where(x > 0, x * gamma, (x.exp() - 1) * (alpha * gamma))


@op("ThresholdedRelu", attrs="alpha")
def thresholded_relu(n, x):
    return ember.where(x > n.attr("alpha", 1.0), x, scalar_like(0, x))


@op("HardSigmoid", attrs="alpha beta")
def hard_sigmoid(n, x):
    return (x * n.attr("alpha", 0.2) + n.attr("beta", 0.5)).clamp(0, 1)


@op("HardSwish")
def hard_swish(n, x):
    return x * (x / 6 + 0.5).clamp(0, 1)


@op("Shrink", attrs="bias lambd")
def shrink(n, x):
    bias, lambd = n.attr("bias", 0.0), n.attr("lambd", 0.5)
    zero = scalar_like(0, x)
    return ember.where(x < -lambd, x + bias, ember.where(x > lambd, x - bias, zero)).to(x.dtype)


@op("PRelu")
def prelu(n, x, slope):
    return ember.where(x < 0, x * slope, x)


@op("Gelu", since=20, attrs="approximate")
def gelu(n, x):
    return F.gelu(x, approximate=n.attr("approximate", "none"))


@op("Swish", since=24, attrs="alpha")
def swish(n, x):
    return x * (x * n.attr("alpha", 1.0)).sigmoid()


@op("BitwiseNot")
def bitwise_not(n, x):
    t = n.input_types[0] if n.input_types else None
    if t in (4, 12):  # uint16, uint32, held in wider ints: keep their own bits
        return x.bitwise_not().bitwise_and(scalar_like(0xFFFF if t == 4 else 0xFFFFFFFF, x))
    return x.bitwise_not()
