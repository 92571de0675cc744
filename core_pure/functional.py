"""PyTorch's top-level functional forms: ``ember.abs(x)``, ``ember.add(a, b, alpha=2)``, ``ember.max(x, 1)``.

Every Tensor method that PyTorch also offers as ``torch.X`` is here as ``ember.X`` (the ones that
``import ember`` already defines, such as ``ember.cat`` or ``ember.where``, stay where they are).
Each is a thin call of the method, so there is one definition of every op. ``ember.X`` finds these
through the package's module ``__getattr__``: ``import ember`` does not load this file, a board
pays for it only when a program uses one of them.
"""
from .elementwise import binary as _binary
from .errors import ArgumentTypeError as _ArgumentTypeError
from .tensor import Tensor as _Tensor


def _t(x, op):
    if type(x) is not _Tensor:
        raise _ArgumentTypeError("%s: expected a tensor, found %s" % (op, type(x).__name__))
    return x


# -- arithmetic with PyTorch's extra arguments ---------------------------------------------------

def add(input, other, alpha=1):
    """input + alpha · other, broadcasting."""
    return _binary("add", input, other if alpha == 1 else other * alpha)


def sub(input, other, alpha=1):
    """input - alpha · other, broadcasting."""
    return _binary("sub", input, other if alpha == 1 else other * alpha)


def div(input, other, rounding_mode=None):
    """input / other (a float result); ``rounding_mode`` as the method takes it."""
    if rounding_mode is None:
        return _binary("div", input, other)
    return _t(input, "div").div(other, rounding_mode=rounding_mode)


def true_divide(input, other):
    """input / other (a float result)."""
    return _binary("div", input, other)


def pow(input, exponent):
    """input ** exponent; ``input`` may be a number (``ember.pow(2, x)``)."""
    return _binary("pow", input, exponent)


def clip(input, min=None, max=None):
    """Each element limited to [min, max] (``clamp``)."""
    return _t(input, "clamp").clamp(min, max)


def lerp(input, end, weight):
    """input + weight · (end - input); ``weight`` a number or a tensor."""
    return _t(input, "lerp").lerp(end, weight)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where |input - other| <= atol + rtol · |other| (bool)."""
    return _t(input, "isclose").isclose(other, rtol, atol, equal_nan)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of input is close to other (a Python bool)."""
    return _t(input, "allclose").allclose(other, rtol, atol, equal_nan)


def relu(input):
    """max(input, 0), elementwise."""
    return _t(input, "relu").relu()


def softmax(input, dim, dtype=None):
    """softmax along ``dim``; ``dtype`` casts the input first."""
    return _t(input, "softmax").softmax(dim, dtype)


def log_softmax(input, dim, dtype=None):
    """log_softmax along ``dim``; ``dtype`` casts the input first."""
    return _t(input, "log_softmax").log_softmax(dim, dtype)


# -- reductions and scans --------------------------------------------------------------------------

def _extreme(op, input, dim, keepdim, kwargs):
    if type(dim) is _Tensor:  # torch.max(a, b) is maximum
        return _binary("maximum" if op == "max" else "minimum", input, dim)
    return getattr(_t(input, op), op)(dim, keepdim, **kwargs)


def max(input, dim=None, keepdim=False, **kwargs):
    """The largest element; with ``dim``, ``(values, indices)``; with a tensor, ``maximum``."""
    return _extreme("max", input, dim, keepdim, kwargs)


def min(input, dim=None, keepdim=False, **kwargs):
    """The smallest element; with ``dim``, ``(values, indices)``; with a tensor, ``minimum``."""
    return _extreme("min", input, dim, keepdim, kwargs)


def sum(input, dim=None, keepdim=False, **kwargs):
    """The sum of the elements, over ``dim`` when given."""
    return _t(input, "sum").sum(dim, keepdim, **kwargs)


def mean(input, dim=None, keepdim=False, **kwargs):
    """The mean of the elements, over ``dim`` when given."""
    return _t(input, "mean").mean(dim, keepdim, **kwargs)


def prod(input, dim=None, keepdim=False, **kwargs):
    """The product of the elements, over ``dim`` when given."""
    return _t(input, "prod").prod(dim, keepdim, **kwargs)


def var(input, dim=None, unbiased=True, keepdim=False, **kwargs):
    """The variance (Bessel-corrected by default), over ``dim`` when given."""
    return _t(input, "var").var(dim, unbiased, keepdim, **kwargs)


def std(input, dim=None, unbiased=True, keepdim=False, **kwargs):
    """The standard deviation (Bessel-corrected by default), over ``dim`` when given."""
    return _t(input, "std").std(dim, unbiased, keepdim, **kwargs)


def argmax(input, dim=None, keepdim=False):
    """The index of the largest element (of the flattened tensor without ``dim``)."""
    return _t(input, "argmax").argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """The index of the smallest element (of the flattened tensor without ``dim``)."""
    return _t(input, "argmin").argmin(dim, keepdim)


def all(input, dim=None, keepdim=False, **kwargs):
    """Whether every element is nonzero, over ``dim`` when given (bool)."""
    return _t(input, "all").all(dim, keepdim, **kwargs)


def any(input, dim=None, keepdim=False, **kwargs):
    """Whether any element is nonzero, over ``dim`` when given (bool)."""
    return _t(input, "any").any(dim, keepdim, **kwargs)


def cummax(input, dim):
    """The running maximum along ``dim``: ``(values, indices)``."""
    return _t(input, "cummax").cummax(dim)


def cummin(input, dim):
    """The running minimum along ``dim``: ``(values, indices)``."""
    return _t(input, "cummin").cummin(dim)


# -- shape and indexing ------------------------------------------------------------------------------

def reshape(input, shape):
    """The same values in ``shape`` (one dim may be -1)."""
    return _t(input, "reshape").reshape(shape)


def flatten(input, start_dim=0, end_dim=-1):
    """Dims ``start_dim`` to ``end_dim`` merged into one."""
    return _t(input, "flatten").flatten(start_dim, end_dim)


def squeeze(input, dim=None):
    """``input`` without its size-1 dims (or only ``dim``)."""
    return _t(input, "squeeze").squeeze(dim)


def unsqueeze(input, dim):
    """``input`` with a size-1 dim inserted at ``dim``."""
    return _t(input, "unsqueeze").unsqueeze(dim)


def permute(input, dims):
    """``input`` with its dims reordered."""
    return _t(input, "permute").permute(dims)


def transpose(input, dim0, dim1):
    """``input`` with ``dim0`` and ``dim1`` swapped."""
    return _t(input, "transpose").transpose(dim0, dim1)


def numel(input):
    """The number of elements."""
    return _t(input, "numel").numel()


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written (or added) at the tensor ``indices``."""
    return _t(input, "index_put").index_put(indices, values, accumulate)


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    return _t(input, "scatter_add").scatter_add(dim, index, src)


# -- elementwise -------------------------------------------------------------------------------------

def abs(input):
    """|input|, elementwise."""
    return _t(input, "abs").abs()


def acos(input):
    """Arc cosine, elementwise."""
    return _t(input, "acos").acos()


def asin(input):
    """Arc sine, elementwise."""
    return _t(input, "asin").asin()


def atan(input):
    """Arc tangent, elementwise."""
    return _t(input, "atan").atan()


def ceil(input):
    """The smallest integer >= each element."""
    return _t(input, "ceil").ceil()


def cos(input):
    """Cosine, elementwise."""
    return _t(input, "cos").cos()


def cosh(input):
    """Hyperbolic cosine, elementwise."""
    return _t(input, "cosh").cosh()


def erf(input):
    """The error function, elementwise."""
    return _t(input, "erf").erf()


def exp(input):
    """e to the power of each element."""
    return _t(input, "exp").exp()


def expm1(input):
    """exp(input) - 1, accurate near 0."""
    return _t(input, "expm1").expm1()


def floor(input):
    """The largest integer <= each element."""
    return _t(input, "floor").floor()


def isinf(input):
    """Where input is +inf or -inf (bool)."""
    return _t(input, "isinf").isinf()


def isnan(input):
    """Where input is nan (bool)."""
    return _t(input, "isnan").isnan()


def log(input):
    """Natural logarithm, elementwise."""
    return _t(input, "log").log()


def log1p(input):
    """log(1 + input), accurate near 0."""
    return _t(input, "log1p").log1p()


def logical_not(input):
    """Where input is zero or False (bool)."""
    return _t(input, "logical_not").logical_not()


def neg(input):
    """-input, elementwise."""
    return _t(input, "neg").neg()


def reciprocal(input):
    """1 / input, elementwise."""
    return _t(input, "reciprocal").reciprocal()


def round(input):
    """Each element rounded half to even."""
    return _t(input, "round").round()


def rsqrt(input):
    """1 / sqrt(input), elementwise."""
    return _t(input, "rsqrt").rsqrt()


def sigmoid(input):
    """1 / (1 + exp(-input)), elementwise."""
    return _t(input, "sigmoid").sigmoid()


def sign(input):
    """-1, 0 or 1 by the sign of each element."""
    return _t(input, "sign").sign()


def sin(input):
    """Sine, elementwise."""
    return _t(input, "sin").sin()


def sinh(input):
    """Hyperbolic sine, elementwise."""
    return _t(input, "sinh").sinh()


def sqrt(input):
    """Square root, elementwise."""
    return _t(input, "sqrt").sqrt()


def tan(input):
    """Tangent, elementwise."""
    return _t(input, "tan").tan()


def tanh(input):
    """Hyperbolic tangent, elementwise."""
    return _t(input, "tanh").tanh()


def trunc(input):
    """Each element rounded toward zero."""
    return _t(input, "trunc").trunc()


def bitwise_not(input):
    """~input for bool and integer tensors."""
    return _t(input, "bitwise_not").bitwise_not()


def asinh(input):
    """Inverse hyperbolic sine, elementwise."""
    return _t(input, "asinh").asinh()


def acosh(input):
    """Inverse hyperbolic cosine, elementwise."""
    return _t(input, "acosh").acosh()


def atanh(input):
    """Inverse hyperbolic tangent, elementwise."""
    return _t(input, "atanh").atanh()


def log2(input):
    """Base-2 logarithm, elementwise."""
    return _t(input, "log2").log2()


def log10(input):
    """Base-10 logarithm, elementwise."""
    return _t(input, "log10").log10()


def exp2(input):
    """2 to the power of each element."""
    return _t(input, "exp2").exp2()


def clone(input):
    """A tensor with the same values."""
    return _t(input, "clone").clone()


def detach(input):
    """The same values, cut from the autodiff graph."""
    return _t(input, "detach").detach()


def atan2(input, other):
    """atan(input / other) in the right quadrant, elementwise."""
    return _t(input, "atan2").atan2(other)


def eq(input, other):
    """input == other (bool)."""
    return _t(input, "eq").eq(other)


def ne(input, other):
    """input != other (bool)."""
    return _t(input, "ne").ne(other)


def lt(input, other):
    """input < other (bool)."""
    return _t(input, "lt").lt(other)


def le(input, other):
    """input <= other (bool)."""
    return _t(input, "le").le(other)


def gt(input, other):
    """input > other (bool)."""
    return _t(input, "gt").gt(other)


def ge(input, other):
    """input >= other (bool)."""
    return _t(input, "ge").ge(other)


def mul(input, other):
    """input * other, broadcasting."""
    return _t(input, "mul").mul(other)


def maximum(input, other):
    """The larger of input and other, elementwise (nan wins)."""
    return _t(input, "maximum").maximum(other)


def minimum(input, other):
    """The smaller of input and other, elementwise (nan wins)."""
    return _t(input, "minimum").minimum(other)


def remainder(input, other):
    """input % other with the sign of other (Python's rule)."""
    return _t(input, "remainder").remainder(other)


def floor_divide(input, other):
    """input // other, rounding down."""
    return _t(input, "floor_divide").floor_divide(other)


def logical_and(input, other):
    """Where both are nonzero (bool)."""
    return _t(input, "logical_and").logical_and(other)


def logical_or(input, other):
    """Where either is nonzero (bool)."""
    return _t(input, "logical_or").logical_or(other)


def logical_xor(input, other):
    """Where exactly one is nonzero (bool)."""
    return _t(input, "logical_xor").logical_xor(other)


def bitwise_and(input, other):
    """input & other for bool and integer tensors."""
    return _t(input, "bitwise_and").bitwise_and(other)


def bitwise_or(input, other):
    """input | other for bool and integer tensors."""
    return _t(input, "bitwise_or").bitwise_or(other)


def bitwise_xor(input, other):
    """input ^ other for bool and integer tensors."""
    return _t(input, "bitwise_xor").bitwise_xor(other)


def bitwise_left_shift(input, other):
    """input << other for integer tensors."""
    return _t(input, "bitwise_left_shift").bitwise_left_shift(other)


def bitwise_right_shift(input, other):
    """input >> other (arithmetic) for integer tensors."""
    return _t(input, "bitwise_right_shift").bitwise_right_shift(other)


def copysign(input, other):
    """|input| with the sign of other, elementwise."""
    return _t(input, "copysign").copysign(other)


def fmod(input, other):
    """C's remainder of input / other (the sign of input)."""
    return _t(input, "fmod").fmod(other)


def logaddexp(input, other):
    """log(exp(input) + exp(other)), elementwise."""
    return _t(input, "logaddexp").logaddexp(other)


def logaddexp2(input, other):
    """log2(2**input + 2**other), elementwise."""
    return _t(input, "logaddexp2").logaddexp2(other)

