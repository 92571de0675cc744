"""Activations and the softmax family: elementwise composites, PyTorch's names and arguments."""
from ...composite import composite
from ...errors import ArgumentError, ArgumentTypeError
from ...shapes import dim as _dim
from ...tensor import Tensor
from .args import _cast, _down, _floating, _upcast


_SQRT1_2 = 0.7071067811865476
_SQRT_2_OVER_PI = 0.7978845608028654


@composite
def gelu(x, approximate="none"):
    """x · Φ(x): exact with erf, or PyTorch's tanh approximation with ``approximate="tanh"``."""
    x, dtype = _upcast(x)
    if approximate == "none":
        return _down(x * ((x * _SQRT1_2).erf() + 1) * 0.5, dtype)
    if approximate == "tanh":
        return _down(x * 0.5 * (((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI).tanh() + 1), dtype)
    raise ArgumentError("gelu: approximate must be 'none' or 'tanh', found %r" % (approximate,))


@composite
def sigmoid(x):
    """1 / (1 + exp(-x)), elementwise."""
    return x.sigmoid()


@composite
def tanh(x):
    """tanh(x), elementwise."""
    return x.tanh()


@composite
def softmax(x, dim=-1, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, shifted by the max so large inputs do not overflow;
    ``dtype`` casts the input first (PyTorch's ``dtype=``)."""
    x = _floating(x if dtype is None else _cast(x, dtype, "softmax"), "softmax")
    d = _dim(dim, max(len(x.shape), 1), "softmax")
    if not x.shape:
        return x - x + 1
    x, dtype = _upcast(x)
    e = (x - x.max(d, keepdim=True).values).exp()
    return _down(e / e.sum(d, keepdim=True), dtype)


@composite
def log_softmax(x, dim=-1, dtype=None):
    """x - logsumexp(x) along ``dim``, computed stably; ``dtype`` casts the input first."""
    x = _floating(x if dtype is None else _cast(x, dtype, "log_softmax"), "log_softmax")
    d = _dim(dim, max(len(x.shape), 1), "log_softmax")
    if not x.shape:
        return x - x
    x, dtype = _upcast(x)
    shifted = x - x.max(d, keepdim=True).values
    return _down(shifted - shifted.exp().sum(d, keepdim=True).log(), dtype)


@composite
def leaky_relu(x, negative_slope=0.01):
    """x where x >= 0, else ``negative_slope`` · x."""
    if type(negative_slope) not in (int, float):
        raise ArgumentTypeError("leaky_relu: expected negative_slope as a number, found %s"
                                % type(negative_slope).__name__)
    return x.where(x >= 0, x * negative_slope)


@composite
def silu(x):
    """x · sigmoid(x) (also called swish)."""
    x, dtype = _upcast(x)
    return _down(x * x.sigmoid(), dtype)


@composite
def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta·x)) / beta, linear where beta·x > threshold (PyTorch's rule)."""
    x, dtype = _upcast(x)
    bx = x * beta
    # the discarded branch sees at most the threshold: exp never overflows, so no gradient is nan
    return _down(x.where(bx > threshold, bx.minimum(threshold).exp().log1p() / beta), dtype)


@composite
def elu(x, alpha=1.0):
    """x where x > 0, else ``alpha`` · (exp(x) - 1)."""
    return x.where(x > 0, x.minimum(0).expm1() * alpha)  # minimum: no inf in the discarded branch


@composite
def mish(x):
    """x · tanh(softplus(x))."""
    x, dtype = _upcast(x)
    return _down(x * softplus(x).tanh(), dtype)


@composite
def hardsigmoid(x):
    """relu6(x + 3) / 6: 0 below -3, 1 above 3, linear between."""
    return (x / 6 + 0.5).clamp(0.0, 1.0)


@composite
def hardswish(x):
    """x · relu6(x + 3) / 6."""
    return x * (x + 3).clamp(0.0, 6.0) / 6


@composite
def softsign(x):
    """x / (1 + |x|), elementwise."""
    x, dtype = _upcast(_floating(x, "softsign"))
    return _down(x / (x.abs() + 1), dtype)


@composite
def celu(x, alpha=1.0):
    """max(0, x) + min(0, alpha · (exp(x / alpha) - 1)), elementwise."""
    if alpha == 0:
        raise ArgumentError("celu: alpha must not be 0, found %r" % (alpha,))
    x, dtype = _upcast(_floating(x, "celu"))
    return _down(x.where(x > 0, (x.minimum(0.0) / alpha).expm1() * alpha), dtype)


_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


@composite
def selu(x):
    """scale · (max(0, x) + min(0, alpha · (exp(x) - 1))) with PyTorch's alpha and scale."""
    x, dtype = _upcast(_floating(x, "selu"))
    return _down(x.where(x > 0, x.minimum(0.0).expm1() * _SELU_ALPHA) * _SELU_SCALE, dtype)


@composite
def hardtanh(x, min_val=-1.0, max_val=1.0):
    """x clamped to [min_val, max_val], elementwise."""
    if type(x) is not Tensor:
        raise ArgumentTypeError("hardtanh: expected a tensor, found %s" % type(x).__name__)
    if not min_val <= max_val:
        raise ArgumentError("hardtanh: expected min_val <= max_val, found %r and %r" % (min_val, max_val))
    return x.clamp(min_val, max_val)


@composite
def relu6(x):
    """min(max(0, x), 6), elementwise."""
    return hardtanh(x, 0.0, 6.0)


@composite
def logsigmoid(x):
    """log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), elementwise, without overflow."""
    x, dtype = _upcast(_floating(x, "logsigmoid"))
    return _down(x.minimum(0.0) - (-(x.abs())).exp().log1p(), dtype)


@composite
def softmin(x, dim=-1):
    """softmax(-x) along ``dim``: the smallest elements get the largest weights."""
    x = _floating(x, "softmin")
    _dim(dim, max(len(x.shape), 1), "softmin")
    return softmax(-x, dim)
