"""Stateless neural-network ops, composed from primitives (each replaceable per backend)."""
from .. import dtypes
from ..composite import composite
from ..elementwise import same_device
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ..shapes import dim as _dim
from ..tensor import Tensor

_SQRT1_2 = 0.7071067811865476
_SQRT_2_OVER_PI = 0.7978845608028654


@composite
def relu(x):
    """max(x, 0), elementwise (nan stays nan)."""
    return x.maximum(0)


@composite
def gelu(x, approximate="none"):
    """x · Φ(x): exact with erf, or PyTorch's tanh approximation with ``approximate="tanh"``."""
    if approximate == "none":
        return x * ((x * _SQRT1_2).erf() + 1) * 0.5
    if approximate == "tanh":
        return x * 0.5 * (((x + x * x * x * 0.044715) * _SQRT_2_OVER_PI).tanh() + 1)
    raise ArgumentError("gelu: approximate must be 'none' or 'tanh', found %r" % (approximate,))


@composite
def sigmoid(x):
    return x.sigmoid()


@composite
def tanh(x):
    return x.tanh()


@composite
def softmax(x, dim=-1):
    """exp(x) / sum(exp(x)) along ``dim``, shifted by the max so large inputs do not overflow."""
    x = _floating(x, "softmax")
    d = _dim(dim, max(len(x.shape), 1), "softmax")
    if not x.shape:
        return x - x + 1
    e = (x - x.max(d, keepdim=True).values).exp()
    return e / e.sum(d, keepdim=True)


@composite
def log_softmax(x, dim=-1):
    """x - logsumexp(x) along ``dim``, computed stably."""
    x = _floating(x, "log_softmax")
    d = _dim(dim, max(len(x.shape), 1), "log_softmax")
    if not x.shape:
        return x - x
    shifted = x - x.max(d, keepdim=True).values
    return shifted - shifted.exp().sum(d, keepdim=True).log()


@composite
def linear(x, weight, bias=None):
    """x @ weightᵀ + bias, with PyTorch's layout: ``weight`` is [out_features, in_features]."""
    out = x @ weight.transpose(0, 1) if len(weight.shape) == 2 else x @ weight
    return out + bias if bias is not None else out


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


def _conv_padding(padding, n, kernel, dilation, stride, op):
    """Per spatial dim (before, after) padding from an int, ints, "valid" or "same"."""
    if padding == "valid":
        return ((0, 0),) * n
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ArgumentError("%s: padding='same' needs stride 1, found %s" % (op, stride))
        pads = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    p = _tuple(padding, n, "padding", op)
    if any(v < 0 for v in p):
        raise ArgumentError("%s: padding must be >= 0, found %s" % (op, p))
    return tuple((v, v) for v in p)


def _check_positive(values, name, op):
    if any(v < 1 for v in values):
        raise ArgumentError("%s: %s must be >= 1, found %s" % (op, name, values))


def _conv(x, weight, bias, stride, padding, dilation, groups, n, op):
    if type(x) is not Tensor or type(weight) is not Tensor:
        raise ArgumentTypeError("%s: expected tensors for input and weight" % op)
    dev = same_device(x, weight, op)
    if len(x.shape) != n + 2:
        raise ShapeError("%s: expected input of %d dims %s, found shape %s"
                         % (op, n + 2, "(N, C, L)" if n == 1 else "(N, C, H, W)", x.shape))
    if len(weight.shape) != n + 2:
        raise ShapeError("%s: expected weight of %d dims (out, in/groups, kernel...), found shape %s"
                         % (op, n + 2, weight.shape))
    if type(groups) is not int or groups < 1:
        raise ArgumentError("%s: groups must be an int >= 1, found %r" % (op, groups))
    c, o = x.shape[1], weight.shape[0]
    if c % groups or o % groups:
        raise ShapeError("%s: in channels %d and out channels %d must both divide by groups=%d"
                         % (op, c, o, groups))
    if weight.shape[1] * groups != c:
        raise ShapeError("%s: weight expects %d input channels (%d per group x %d groups), input has %d"
                         % (op, weight.shape[1] * groups, weight.shape[1], groups, c))
    stride = _tuple(stride, n, "stride", op)
    dilation = _tuple(dilation, n, "dilation", op)
    _check_positive(stride, "stride", op)
    _check_positive(dilation, "dilation", op)
    kernel = weight.shape[2:]
    pads = _conv_padding(padding, n, kernel, dilation, stride, op)
    for i in range(n):
        size = x.shape[2 + i] + pads[i][0] + pads[i][1]
        if size < dilation[i] * (kernel[i] - 1) + 1:
            raise ShapeError("%s: input of shape %s (padded %s) is smaller than the dilated kernel %s"
                             % (op, x.shape, pads, tuple(kernel)))
    dtype = dtypes.promote(x.dtype, weight.dtype)
    if dtype.kind != "f":
        dtype = dtypes.default_float
    x, weight = x.to(dtype), weight.to(dtype)
    data = dev.conv(x._data, weight._data, stride, pads, dilation, groups)
    spatial = tuple((x.shape[2 + i] + pads[i][0] + pads[i][1] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
                    for i in range(n))
    out = Tensor(data, (x.shape[0], o) + spatial, dtype, dev)
    if bias is not None:
        if type(bias) is not Tensor or bias.shape != (o,):
            found = bias.shape if type(bias) is Tensor else type(bias).__name__
            raise ShapeError("%s: expected bias of shape (%d,), found %s" % (op, o, found))
        out = out + bias.reshape((1, o) + (1,) * n)
    return out


@composite
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) with weight (out, C/groups, k); padding int, 'valid' or 'same'."""
    return _conv(x, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@composite
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) with weight (out, C/groups, kh, kw), PyTorch's semantics."""
    return _conv(x, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def _pool(op, x, kernel_size, stride, padding, dilation, n, name):
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (name, type(x).__name__))
    if len(x.shape) != n + 2:
        raise ShapeError("%s: expected input of %d dims (N, C, spatial...), found shape %s" % (name, n + 2, x.shape))
    if x.dtype.kind != "f":
        raise DTypeError("%s: expected a float tensor, found %s" % (name, x.dtype.name))
    kernel = _tuple(kernel_size, n, "kernel_size", name)
    stride = kernel if stride is None else _tuple(stride, n, "stride", name)
    pad = _tuple(padding, n, "padding", name)
    dilation = _tuple(dilation, n, "dilation", name)
    _check_positive(kernel, "kernel_size", name)
    _check_positive(stride, "stride", name)
    _check_positive(dilation, "dilation", name)
    for k, p in zip(kernel, pad):
        if p < 0 or p > k // 2:
            raise ArgumentError("%s: padding must be between 0 and kernel_size // 2, found %s for kernel %s"
                                % (name, pad, kernel))
    spatial = []
    for i in range(n):
        size = (x.shape[2 + i] + 2 * pad[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
        if size < 1:
            raise ShapeError("%s: input of shape %s is smaller than the kernel %s" % (name, x.shape, kernel))
        spatial.append(size)
    pads = tuple((p, p) for p in pad)
    data = x.device.pool(op, x._data, kernel, stride, pads, dilation)
    return Tensor(data, x.shape[:2] + tuple(spatial), x.dtype, x.device)


@composite
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1):
    """Max over windows of (N, C, H, W); ``stride`` defaults to ``kernel_size``; pads count as -inf."""
    return _pool("max", x, kernel_size, stride, padding, dilation, 2, "max_pool2d")


@composite
def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1):
    return _pool("max", x, kernel_size, stride, padding, dilation, 1, "max_pool1d")


@composite
def avg_pool2d(x, kernel_size, stride=None, padding=0):
    """Mean over windows of (N, C, H, W); zero padding counts in the mean (PyTorch's default)."""
    return _pool("avg", x, kernel_size, stride, padding, 1, 2, "avg_pool2d")


@composite
def avg_pool1d(x, kernel_size, stride=None, padding=0):
    return _pool("avg", x, kernel_size, stride, padding, 1, 1, "avg_pool1d")
