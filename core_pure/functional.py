"""PyTorch's top-level functional forms: ``ember.abs(x)``, ``ember.add(a, b, alpha=2)``, ``ember.max(x, 1)``.

Every Tensor method that PyTorch also offers as ``torch.X`` is here as ``ember.X`` (the ones that
``import ember`` already defines, such as ``ember.cat`` or ``ember.where``, stay where they are).
Each is a thin call of the method, so there is one definition of every op. ``ember.X`` finds these
through the package's module ``__getattr__``: ``import ember`` does not load this file, a board
pays for it only when a program uses one of them.
"""
from .elementwise import binary
from .tensor import Tensor


# -- arithmetic with PyTorch's extra arguments ---------------------------------------------------

def add(input, other, alpha=1):
    """input + alpha · other, broadcasting."""
    return binary("add", input, other if alpha == 1 else other * alpha)


def sub(input, other, alpha=1):
    """input - alpha · other, broadcasting."""
    return binary("sub", input, other if alpha == 1 else other * alpha)


def div(input, other, rounding_mode=None):
    """input / other (a float result); ``rounding_mode`` as the method takes it."""
    if rounding_mode is None:
        return binary("div", input, other)
    return input.div(other, rounding_mode=rounding_mode)


def true_divide(input, other):
    """input / other (a float result)."""
    return binary("div", input, other)


def pow(input, exponent):
    """input ** exponent; ``input`` may be a number (``ember.pow(2, x)``)."""
    return binary("pow", input, exponent)


def clip(input, min=None, max=None):
    """Each element limited to [min, max] (``clamp``)."""
    return input.clamp(min, max)


def lerp(input, end, weight):
    """input + weight · (end - input); ``weight`` a number or a tensor."""
    return input.lerp(end, weight)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where |input - other| <= atol + rtol · |other| (bool)."""
    return input.isclose(other, rtol, atol, equal_nan)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of input is close to other (a Python bool)."""
    return input.allclose(other, rtol, atol, equal_nan)


def relu(input):
    """max(input, 0), elementwise."""
    return input.relu()


def softmax(input, dim, dtype=None):
    """softmax along ``dim``; ``dtype`` casts the input first."""
    return input.softmax(dim, dtype)


def log_softmax(input, dim, dtype=None):
    """log_softmax along ``dim``; ``dtype`` casts the input first."""
    return input.log_softmax(dim, dtype)


# -- reductions and scans --------------------------------------------------------------------------

def _extreme(op, input, dim, keepdim, kwargs):
    if type(dim) is Tensor:  # torch.max(a, b) is maximum
        return binary("maximum" if op == "max" else "minimum", input, dim)
    return getattr(input, op)(dim, keepdim, **kwargs)


def max(input, dim=None, keepdim=False, **kwargs):
    """The largest element; with ``dim``, ``(values, indices)``; with a tensor, ``maximum``."""
    return _extreme("max", input, dim, keepdim, kwargs)


def min(input, dim=None, keepdim=False, **kwargs):
    """The smallest element; with ``dim``, ``(values, indices)``; with a tensor, ``minimum``."""
    return _extreme("min", input, dim, keepdim, kwargs)


def sum(input, dim=None, keepdim=False, **kwargs):
    """The sum of the elements, over ``dim`` when given."""
    return input.sum(dim, keepdim, **kwargs)


def mean(input, dim=None, keepdim=False, **kwargs):
    """The mean of the elements, over ``dim`` when given."""
    return input.mean(dim, keepdim, **kwargs)


def prod(input, dim=None, keepdim=False, **kwargs):
    """The product of the elements, over ``dim`` when given."""
    return input.prod(dim, keepdim, **kwargs)


def var(input, dim=None, unbiased=True, keepdim=False, **kwargs):
    """The variance (Bessel-corrected by default), over ``dim`` when given."""
    return input.var(dim, unbiased, keepdim, **kwargs)


def std(input, dim=None, unbiased=True, keepdim=False, **kwargs):
    """The standard deviation (Bessel-corrected by default), over ``dim`` when given."""
    return input.std(dim, unbiased, keepdim, **kwargs)


def argmax(input, dim=None, keepdim=False):
    """The index of the largest element (of the flattened tensor without ``dim``)."""
    return input.argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """The index of the smallest element (of the flattened tensor without ``dim``)."""
    return input.argmin(dim, keepdim)


def all(input, dim=None, keepdim=False, **kwargs):
    """Whether every element is nonzero, over ``dim`` when given (bool)."""
    return input.all(dim, keepdim, **kwargs)


def any(input, dim=None, keepdim=False, **kwargs):
    """Whether any element is nonzero, over ``dim`` when given (bool)."""
    return input.any(dim, keepdim, **kwargs)


def cummax(input, dim):
    """The running maximum along ``dim``: ``(values, indices)``."""
    return input.cummax(dim)


def cummin(input, dim):
    """The running minimum along ``dim``: ``(values, indices)``."""
    return input.cummin(dim)


# -- shape and indexing ------------------------------------------------------------------------------

def reshape(input, shape):
    """The same values in ``shape`` (one dim may be -1)."""
    return input.reshape(shape)


def flatten(input, start_dim=0, end_dim=-1):
    """Dims ``start_dim`` to ``end_dim`` merged into one."""
    return input.flatten(start_dim, end_dim)


def squeeze(input, dim=None):
    """``input`` without its size-1 dims (or only ``dim``)."""
    return input.squeeze(dim)


def unsqueeze(input, dim):
    """``input`` with a size-1 dim inserted at ``dim``."""
    return input.unsqueeze(dim)


def permute(input, dims):
    """``input`` with its dims reordered."""
    return input.permute(dims)


def transpose(input, dim0, dim1):
    """``input`` with ``dim0`` and ``dim1`` swapped."""
    return input.transpose(dim0, dim1)


def numel(input):
    """The number of elements."""
    return input.numel()


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written (or added) at the tensor ``indices``."""
    return input.index_put(indices, values, accumulate)


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    return input.scatter_add(dim, index, src)


# -- elementwise -------------------------------------------------------------------------------------

def abs(input):
    """|input|, elementwise."""
    return input.abs()


def acos(input):
    """Arc cosine, elementwise."""
    return input.acos()


def asin(input):
    """Arc sine, elementwise."""
    return input.asin()


def atan(input):
    """Arc tangent, elementwise."""
    return input.atan()


def ceil(input):
    """The smallest integer >= each element."""
    return input.ceil()


def cos(input):
    """Cosine, elementwise."""
    return input.cos()


def cosh(input):
    """Hyperbolic cosine, elementwise."""
    return input.cosh()


def erf(input):
    """The error function, elementwise."""
    return input.erf()


def exp(input):
    """e to the power of each element."""
    return input.exp()


def expm1(input):
    """exp(input) - 1, accurate near 0."""
    return input.expm1()


def floor(input):
    """The largest integer <= each element."""
    return input.floor()


def isinf(input):
    """Where input is +inf or -inf (bool)."""
    return input.isinf()


def isnan(input):
    """Where input is nan (bool)."""
    return input.isnan()


def log(input):
    """Natural logarithm, elementwise."""
    return input.log()


def log1p(input):
    """log(1 + input), accurate near 0."""
    return input.log1p()


def logical_not(input):
    """Where input is zero or False (bool)."""
    return input.logical_not()


def neg(input):
    """-input, elementwise."""
    return input.neg()


def reciprocal(input):
    """1 / input, elementwise."""
    return input.reciprocal()


def round(input):
    """Each element rounded half to even."""
    return input.round()


def rsqrt(input):
    """1 / sqrt(input), elementwise."""
    return input.rsqrt()


def sigmoid(input):
    """1 / (1 + exp(-input)), elementwise."""
    return input.sigmoid()


def sign(input):
    """-1, 0 or 1 by the sign of each element."""
    return input.sign()


def sin(input):
    """Sine, elementwise."""
    return input.sin()


def sinh(input):
    """Hyperbolic sine, elementwise."""
    return input.sinh()


def sqrt(input):
    """Square root, elementwise."""
    return input.sqrt()


def tan(input):
    """Tangent, elementwise."""
    return input.tan()


def tanh(input):
    """Hyperbolic tangent, elementwise."""
    return input.tanh()


def trunc(input):
    """Each element rounded toward zero."""
    return input.trunc()


def bitwise_not(input):
    """~input for bool and integer tensors."""
    return input.bitwise_not()


def asinh(input):
    """Inverse hyperbolic sine, elementwise."""
    return input.asinh()


def acosh(input):
    """Inverse hyperbolic cosine, elementwise."""
    return input.acosh()


def atanh(input):
    """Inverse hyperbolic tangent, elementwise."""
    return input.atanh()


def log2(input):
    """Base-2 logarithm, elementwise."""
    return input.log2()


def log10(input):
    """Base-10 logarithm, elementwise."""
    return input.log10()


def exp2(input):
    """2 to the power of each element."""
    return input.exp2()


def clone(input):
    """A tensor with the same values."""
    return input.clone()


def detach(input):
    """The same values, cut from the autodiff graph."""
    return input.detach()


def atan2(input, other):
    """atan(input / other) in the right quadrant, elementwise."""
    return input.atan2(other)


def eq(input, other):
    """input == other (bool)."""
    return input.eq(other)


def ne(input, other):
    """input != other (bool)."""
    return input.ne(other)


def lt(input, other):
    """input < other (bool)."""
    return input.lt(other)


def le(input, other):
    """input <= other (bool)."""
    return input.le(other)


def gt(input, other):
    """input > other (bool)."""
    return input.gt(other)


def ge(input, other):
    """input >= other (bool)."""
    return input.ge(other)


def mul(input, other):
    """input * other, broadcasting."""
    return input.mul(other)


def maximum(input, other):
    """The larger of input and other, elementwise (nan wins)."""
    return input.maximum(other)


def minimum(input, other):
    """The smaller of input and other, elementwise (nan wins)."""
    return input.minimum(other)


def remainder(input, other):
    """input % other with the sign of other (Python's rule)."""
    return input.remainder(other)


def floor_divide(input, other):
    """input // other, rounding down."""
    return input.floor_divide(other)


def logical_and(input, other):
    """Where both are nonzero (bool)."""
    return input.logical_and(other)


def logical_or(input, other):
    """Where either is nonzero (bool)."""
    return input.logical_or(other)


def logical_xor(input, other):
    """Where exactly one is nonzero (bool)."""
    return input.logical_xor(other)


def bitwise_and(input, other):
    """input & other for bool and integer tensors."""
    return input.bitwise_and(other)


def bitwise_or(input, other):
    """input | other for bool and integer tensors."""
    return input.bitwise_or(other)


def bitwise_xor(input, other):
    """input ^ other for bool and integer tensors."""
    return input.bitwise_xor(other)


def bitwise_left_shift(input, other):
    """input << other for integer tensors."""
    return input.bitwise_left_shift(other)


def bitwise_right_shift(input, other):
    """input >> other (arithmetic) for integer tensors."""
    return input.bitwise_right_shift(other)


def copysign(input, other):
    """|input| with the sign of other, elementwise."""
    return input.copysign(other)


def fmod(input, other):
    """C's remainder of input / other (the sign of input)."""
    return input.fmod(other)


def logaddexp(input, other):
    """log(exp(input) + exp(other)), elementwise."""
    return input.logaddexp(other)


def logaddexp2(input, other):
    """log2(2**input + 2**other), elementwise."""
    return input.logaddexp2(other)

