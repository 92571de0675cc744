"""Stateless neural-network ops, composed from primitives (each replaceable per backend)."""
from .. import dtypes
from ..composite import composite
from ..elementwise import relu, same_device  # noqa: F401  (relu is a core composite; F.relu is it)
from ..errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, checking
from ..shapes import conv_out_size, dim as _dim
from ..tensor import Tensor

_SQRT1_2 = 0.7071067811865476
_SQRT_2_OVER_PI = 0.7978845608028654


def _upcast(x):
    """float16/bfloat16 composites compute in float32 and round once at the end, as PyTorch does:
    rounding every intermediate step to 11 or 8 bits would lose most of the result."""
    if x.dtype is dtypes.float16 or x.dtype is dtypes.bfloat16:
        return x.to(dtypes.float32), x.dtype
    return x, None


def _down(out, dtype):
    return out if dtype is None else out.to(dtype)


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
def linear(x, weight, bias=None):
    """x @ weightᵀ + bias, with PyTorch's layout: ``weight`` is [out_features, in_features]."""
    for name, t in (("input", x), ("weight", weight), ("bias", bias)):
        if (t is not None or name != "bias") and type(t) is not Tensor:
            raise ArgumentTypeError("linear: expected a tensor %s, found %s" % (name, type(t).__name__))
    if len(weight.shape) not in (1, 2):
        raise ShapeError("linear: expected a weight of shape (out_features, in_features), found %s" % (weight.shape,))
    out = x @ weight.transpose(0, 1) if len(weight.shape) == 2 else x @ weight
    if bias is not None and bias.shape not in ((), out.shape[-1:]):
        raise ShapeError("linear: expected bias of shape (%d,) (out_features), found %s" % (out.shape[-1], bias.shape))
    return out + bias if bias is not None else out


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
    if type(padding) is str:
        raise ArgumentError("%s: padding must be 'valid', 'same', an int or %d ints, found %r" % (op, n, padding))
    p = _tuple(padding, n, "padding", op)
    if any(v < 0 for v in p):
        raise ArgumentError("%s: padding must be >= 0, found %s" % (op, p))
    return tuple((v, v) for v in p)


def _check_positive(values, name, op):
    if any(v < 1 for v in values):
        raise ArgumentError("%s: %s must be >= 1, found %s" % (op, name, values))


_LAYOUTS = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def conv_args(x, weight, stride, padding, dilation, groups, n, op):
    """The checked arguments of an ``n``-D convolution: ``(device, x, weight, stride, pads,
    dilation)`` with both tensors in their common float dtype and ``pads`` (before, after) per dim."""
    if type(x) is not Tensor or type(weight) is not Tensor:
        raise ArgumentTypeError("%s: expected tensors for input and weight" % op)
    dev = same_device(x, weight, op)
    if len(x.shape) != n + 2:
        raise ShapeError("%s: expected input of %d dims %s, found shape %s" % (op, n + 2, _LAYOUTS[n], x.shape))
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
    if [k for k in kernel if k < 1]:
        raise ShapeError("%s: expected a kernel of size >= 1 in every spatial dim, found weight of shape %s"
                         % (op, weight.shape))
    pads = _conv_padding(padding, n, kernel, dilation, stride, op)
    for i in range(n):
        size = x.shape[2 + i] + pads[i][0] + pads[i][1]
        if size < dilation[i] * (kernel[i] - 1) + 1:
            raise ShapeError("%s: input of shape %s (padded %s) is smaller than the dilated kernel %s"
                             % (op, x.shape, pads, tuple(kernel)))
    dtype = dtypes.promote(x.dtype, weight.dtype)
    if dtype.kind != "f":
        dtype = dtypes.default_float
    return dev, x.to(dtype), weight.to(dtype), stride, pads, dilation


def add_bias(out, bias, op):
    """``out`` (N, O, *spatial) plus a per-channel ``bias`` of shape (O,), when given."""
    if bias is None:
        return out
    o = out.shape[1]
    if type(bias) is not Tensor or bias.shape != (o,):
        found = bias.shape if type(bias) is Tensor else type(bias).__name__
        raise ShapeError("%s: expected bias of shape (%d,), found %s" % (op, o, found))
    return out + bias.reshape((1, o) + (1,) * (len(out.shape) - 2))


def _conv(x, weight, bias, stride, padding, dilation, groups, n, op):
    """An ``n``-D convolution (n = 1, 2) by the backend's ``conv`` primitive, plus the bias."""
    dev, x, weight, stride, pads, dilation = conv_args(x, weight, stride, padding, dilation, groups, n, op)
    kernel = weight.shape[2:]
    data = dev.conv(x._data, weight._data, stride, pads, dilation, groups)
    spatial = tuple(conv_out_size(x.shape[2 + i], kernel[i], stride[i], pads[i], dilation[i]) for i in range(n))
    return add_bias(Tensor(data, (x.shape[0], weight.shape[0]) + spatial, x.dtype, dev), bias, op)


@composite
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) with weight (out, C/groups, k); padding int, 'valid' or 'same'."""
    return _conv(x, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@composite
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) with weight (out, C/groups, kh, kw), PyTorch's semantics."""
    return _conv(x, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's output length of a pooling window: with ``ceil_mode`` a last partial window that
    starts inside the input or its left padding counts too."""
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def _pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, n, name):
    """(kernel, stride, padding, dilation, pads, spatial): ``pads`` per dim is (before, after), the
    after side widened to cover ``ceil_mode``'s last window; ``spatial`` the output sizes."""
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (name, type(x).__name__))
    if len(x.shape) != n + 2:
        raise ShapeError("%s: expected input of %d dims (N, C, spatial...), found shape %s" % (name, n + 2, x.shape))
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
    spatial, pads = [], []
    for i in range(n):
        size, k, s, p, d = x.shape[2 + i], kernel[i], stride[i], pad[i], dilation[i]
        out = _pool_out(size, k, s, p, d, ceil_mode)
        if out < 1:
            raise ShapeError("%s: input of shape %s is smaller than the kernel %s" % (name, x.shape, kernel))
        spatial.append(out)
        pads.append((p, max(p, (out - 1) * s + d * (k - 1) + 1 - size - p)))
    return kernel, stride, pad, dilation, tuple(pads), tuple(spatial)


def _grid(lists):
    """Row-major sums over the grid of per-dim lists (one list of ints or floats per dim)."""
    out = [0]
    for values in lists:
        out = [a + b for a in out for b in values]
    return out


def _window_max(x, kernel, stride, before, dilation, pads, spatial, values):
    """The max pool's indices (and, with ``values``, its values) from the window's taps stacked on a
    new last dim: ``argmax`` picks the first maximum (the first nan, as ember's argmax does) and a
    table maps each tap to its flat position in the input plane. A pad tap maps to the window's
    first input element, which is what wins when every input equals the pad (PyTorch's pick).
    Serves ``return_indices`` and integer inputs (no -inf to pad them with)."""
    from ..creation import tensor
    from ..movement import stack
    n = len(kernel)
    sizes = x.shape[2:]
    plane = [1] * n
    for i in range(n - 2, -1, -1):
        plane[i] = plane[i + 1] * sizes[i + 1]
    low = float("-inf") if x.dtype.kind == "f" else -(1 << (x.dtype.bits - 1))
    flat_pads = []
    for i in range(n - 1, -1, -1):
        flat_pads += [pads[i][0], pads[i][1]]
    xp = pad(x, flat_pads, value=low)
    out_shape = x.shape[:2] + spatial
    taps = [[]]
    for k in kernel:
        taps = [t + [o] for t in taps for o in range(k)]
    # per dim and output position: the first tap inside the input, then each tap's coordinate
    firsts, coords = [], []
    for i in range(n):
        f, c = [], []
        for j in range(spatial[i]):
            start = j * stride[i] - before[i]
            first = start
            while first < 0:
                first += dilation[i]
            f.append(first)
            c.append([start + o * dilation[i] for o in range(kernel[i])])
        firsts.append(f)
        coords.append(c)
    table = []
    grid = [[]]
    for i in range(n):
        grid = [g + [j] for g in grid for j in range(spatial[i])]
    for pos in grid:
        first = 0
        for i in range(n):
            first += firsts[i][pos[i]] * plane[i]
        for tap in taps:
            at, inside = 0, True
            for i in range(n):
                c = coords[i][pos[i]][tap[i]]
                inside = inside and 0 <= c < sizes[i]
                at += c * plane[i]
            table.append(at if inside else first)
    parts = []
    for tap in taps:
        ranges = ((0, x.shape[0], 1), (0, x.shape[1], 1)) + tuple(
            (o * dilation[i], o * dilation[i] + (spatial[i] - 1) * stride[i] + 1, stride[i]) for i, o in enumerate(tap))
        parts.append(Tensor(x.device.slice(xp._data, ranges), out_shape, x.dtype, x.device))
    stacked = stack(parts, 2)  # (N, C, taps, *spatial): the C reduction runs along whole rows
    pick = stacked.argmax(2, keepdim=True)
    where = tensor(table, dtype=dtypes.int64, device=x.device).reshape(spatial + (len(taps),))
    where = where.permute((n,) + tuple(range(n))).unsqueeze(0).unsqueeze(0)
    indices = where.expand(x.shape[:2] + (len(taps),) + spatial).gather(2, pick).squeeze(2)
    if not values:
        return indices
    return stacked.gather(2, pick).squeeze(2), indices


def _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, n, name):
    kernel, stride, pad_, dilation, pads, spatial = _pool_geometry(x, kernel_size, stride, padding, dilation,
                                                                   ceil_mode, n, name)
    if x.dtype is dtypes.bool_:
        raise DTypeError("%s: expected a float or integer tensor, found bool" % name)
    if x.dtype.kind == "f":
        values = Tensor(x.device.pool("max", x._data, kernel, stride, pads, dilation), x.shape[:2] + spatial,
                        x.dtype, x.device)
        if not return_indices:
            return values
        return values, _window_max(x, kernel, stride, pad_, dilation, pads, spatial, False)
    values, indices = _window_max(x, kernel, stride, pad_, dilation, pads, spatial, True)
    return (values, indices) if return_indices else values


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, n, name):
    """The mean over each window; the divisor is PyTorch's: the window's size clipped to the padded
    input (``ceil_mode``'s last window is shorter), or only its input elements without
    ``count_include_pad``, or ``divisor_override``."""
    kernel, stride, pad_, _, pads, spatial = _pool_geometry(x, kernel_size, stride, padding, 1, ceil_mode, n, name)
    if x.dtype.kind != "f":
        raise DTypeError("%s: expected a float tensor, found %s" % (name, x.dtype.name))
    ones = (1,) * n
    out = Tensor(x.device.pool("avg", x._data, kernel, stride, pads, ones), x.shape[:2] + spatial, x.dtype, x.device)
    size = 1
    for k in kernel:
        size *= k
    if divisor_override is not None:
        if type(divisor_override) is not int or divisor_override == 0:
            raise ArgumentError("%s: divisor_override must be a nonzero int, found %r" % (name, divisor_override))
        return out * (size / divisor_override)
    counts = []
    for i in range(n):
        lengths = []
        for j in range(spatial[i]):
            start = j * stride[i] - pad_[i]
            end = min(start + kernel[i], x.shape[2 + i] + pad_[i])
            if not count_include_pad:
                start, end = max(start, 0), min(end, x.shape[2 + i])
            lengths.append(end - start)
        counts.append(lengths)
    if all(c == k for lengths, k in zip(counts, kernel) for c in lengths):
        return out
    from ..creation import tensor
    grid = [1]
    for lengths in counts:
        grid = [a * b for a in grid for b in lengths]
    ratio = tensor([size / c for c in grid], dtype=x.dtype, device=x.device).reshape(spatial)
    return out * ratio


@composite
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of (N, C, H, W); ``stride`` defaults to ``kernel_size``; pads count as -inf.
    ``return_indices`` also gives each max's flat position in its input plane (int64)."""
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


@composite
def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of (N, C, L); ``stride`` defaults to ``kernel_size``; pads count as -inf."""
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


@composite
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of (N, C, H, W); zero padding counts in the mean unless not
    ``count_include_pad``; ``divisor_override`` replaces the window size (PyTorch's arguments)."""
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2, "avg_pool2d")


@composite
def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of (N, C, L); zero padding counts in the mean unless not ``count_include_pad``."""
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


# -- activations -------------------------------------------------------------------------------

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


@composite
def normalize(x, p=2.0, dim=1, eps=1e-12):
    """x / max(‖x‖_p, eps) along ``dim`` (PyTorch's F.normalize)."""
    x = _floating(x, "normalize")
    if type(p) not in (int, float) or p <= 0:
        raise ArgumentError("normalize: p must be a number > 0, found %r" % (p,))
    d = _dim(dim, max(len(x.shape), 1), "normalize")
    xf, dtype = _upcast(x)
    a = xf.abs()
    if p == 2:
        norm = (xf * xf).sum(d, keepdim=True).sqrt()
    elif p == 1:
        norm = a.sum(d, keepdim=True)
    elif p == float("inf"):
        norm = a.max(d, keepdim=True).values
    else:
        norm = (a ** p).sum(d, keepdim=True) ** (1.0 / p)
    return _down(xf / norm.maximum(eps), dtype)


@composite
def dropout(x, p=0.5, training=True, generator=None):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p); identity when not training."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError("dropout: p must be in [0, 1], found %r" % (p,))
    if not training or p == 0.0:
        return x.clone()
    if p == 1.0:
        return x * 0
    from ..creation import draw
    # keep = (uniform >= p) = 1 - (uniform < p), drawn on the device, in x's dtype
    dropped = draw("bernoulli", x.shape, (p,), generator, x.dtype if x.dtype.kind == "f" else None, x.device,
                   "dropout")
    return x * (1 - dropped) / (1.0 - p)


def _channel_dropout(x, p, training, generator, n, op):
    """Zero whole channels: one draw per (batch, channel) of an input with ``n`` spatial dims."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError("%s: p must be in [0, 1], found %r" % (op, p))
    if x.ndim not in (n + 1, n + 2):
        raise ShapeError("%s: expected a %d-D (C, *spatial) or %d-D (N, C, *spatial) input, found shape %s"
                         % (op, n + 1, n + 2, x.shape))
    if not training or p == 0.0:
        return x.clone()
    if p == 1.0:
        return x * 0
    from ..creation import draw
    mask = x.shape[:x.ndim - n] + (1,) * n
    dropped = draw("bernoulli", mask, (p,), generator, x.dtype if x.dtype.kind == "f" else None, x.device, op)
    return x * (1 - dropped) / (1.0 - p)


@composite
def dropout1d(x, p=0.5, training=True, generator=None):
    """Zero each channel of (N, C, L) or (C, L) with probability ``p``, scale the rest by 1/(1-p)."""
    return _channel_dropout(x, p, training, generator, 1, "dropout1d")


@composite
def dropout2d(x, p=0.5, training=True, generator=None):
    """Zero each channel of (N, C, H, W) or (C, H, W) with probability ``p``, scale the rest by 1/(1-p)."""
    return _channel_dropout(x, p, training, generator, 2, "dropout2d")


@composite
def dropout3d(x, p=0.5, training=True, generator=None):
    """Zero each channel of (N, C, D, H, W) or (C, D, H, W) with probability ``p``, scale the rest."""
    return _channel_dropout(x, p, training, generator, 3, "dropout3d")


# -- lookup ------------------------------------------------------------------------------------

@composite
def embedding(index, weight, padding_idx=None):
    """Rows of ``weight`` ([num_embeddings, dim]) at ``index``; output shape index.shape + (dim,)."""
    from ..indexing import index_select
    if type(weight) is not Tensor or len(weight.shape) != 2:
        raise ShapeError("embedding: expected a 2-D weight, found %s"
                         % (("shape %s" % (weight.shape,)) if type(weight) is Tensor else type(weight).__name__))
    if type(index) is not Tensor:
        raise ArgumentTypeError("embedding: expected an int tensor index, found %s" % type(index).__name__)
    flat = index.reshape(-1)
    rows = index_select(weight, 0, flat, "embedding")
    if padding_idx is not None:  # the padding row's lookups carry no gradient back to the weight
        from ..elementwise import where
        rows = where((flat == padding_idx).unsqueeze(1), index_select(weight.detach(), 0, flat, "embedding"), rows)
    return rows.reshape(index.shape + (weight.shape[1],))


def one_hot(index, num_classes=-1):
    """int64 one-hot vectors of ``index`` along a new last dim (``num_classes=-1``: the max index + 1)."""
    from ..indexing import one_hot as _one_hot
    return _one_hot(index, num_classes)


# -- normalization -----------------------------------------------------------------------------

def _normalize(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * (var + eps).rsqrt()


@composite
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the last ``len(normalized_shape)`` dims, then scale and shift."""
    ns = (normalized_shape,) if type(normalized_shape) is int else tuple(normalized_shape)
    if tuple(x.shape[len(x.shape) - len(ns):]) != ns or len(ns) > len(x.shape):
        raise ShapeError("layer_norm: expected input ending in %s, found shape %s" % (ns, x.shape))
    x, dtype = _upcast(_floating(x, "layer_norm"))
    out = _normalize(x, tuple(range(len(x.shape) - len(ns), len(x.shape))), eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return _down(out, dtype)


@composite
def rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps) over the last dims (eps defaults to float32's machine epsilon)."""
    ns = (normalized_shape,) if type(normalized_shape) is int else tuple(normalized_shape)
    if tuple(x.shape[len(x.shape) - len(ns):]) != ns or len(ns) > len(x.shape):
        raise ShapeError("rms_norm: expected input ending in %s, found shape %s" % (ns, x.shape))
    x, dtype = _upcast(_floating(x, "rms_norm"))
    eps = 1.1920928955078125e-07 if eps is None else eps
    dims = tuple(range(len(x.shape) - len(ns), len(x.shape)))
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return _down(out * weight if weight is not None else out, dtype)


def _channel_view(t, ndim):
    return t.reshape((1, t.shape[0]) + (1,) * (ndim - 2))


@composite
def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize (N, C, ...) over groups of C/num_groups channels, then a per-channel affine."""
    if len(x.shape) < 2 or x.shape[1] % num_groups:
        raise ShapeError("group_norm: channels of shape %s must divide into %d groups" % (x.shape, num_groups))
    x, dtype = _upcast(_floating(x, "group_norm"))
    n = x.shape[0]
    grouped = x.reshape(n, num_groups, -1) if x.numel() else x.reshape(n, num_groups, 0)
    out = _normalize(grouped, (2,), eps).reshape(x.shape)
    if weight is not None:
        out = out * _channel_view(weight, len(x.shape))
    if bias is not None:
        out = out + _channel_view(bias, len(x.shape))
    return _down(out, dtype)


@composite
def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize (N, C, ...) per channel. Training uses batch statistics and updates the running
    ones in place (``running_mean[...] = ...``, unbiased variance), as PyTorch does."""
    x, dtype = _upcast(_floating(x, "batch_norm"))
    if len(x.shape) < 2:
        raise ShapeError("batch_norm: expected (N, C, ...), found shape %s" % (x.shape,))
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and (type(t) is not Tensor or t.shape != (c,)):
            raise ShapeError("batch_norm: expected %s of shape (%d,) (the channels of input %s), found %s"
                             % (name, c, x.shape, t.shape if type(t) is Tensor else type(t).__name__))
    dims = (0,) + tuple(range(2, len(x.shape)))
    if training:
        count = x.numel() // c
        if count <= 1:
            raise ShapeError("batch_norm: training needs more than 1 value per channel, found shape %s" % (x.shape,))
        mean = x.mean(dims)
        var = x.var(dims, unbiased=False)
        if running_mean is not None:
            running_mean[...] = running_mean * (1 - momentum) + mean * momentum
        if running_var is not None:
            running_var[...] = running_var * (1 - momentum) + var * (momentum * count / (count - 1))
    else:
        if running_mean is None or running_var is None:
            raise ArgumentError("batch_norm: evaluation needs running_mean and running_var")
        mean, var = running_mean, running_var
    out = (x - _channel_view(mean, len(x.shape))) * _channel_view((var + eps).rsqrt(), len(x.shape))
    if weight is not None:
        out = out * _channel_view(weight, len(x.shape))
    if bias is not None:
        out = out + _channel_view(bias, len(x.shape))
    return _down(out, dtype)


# -- padding, resizing ---------------------------------------------------------------------------

def _pad_indices(n, before, after, mode):
    if mode == "reflect":
        if before >= n or after >= n:
            raise ArgumentError("pad: reflect padding (%d, %d) must be smaller than the dim size %d"
                                % (before, after, n))
        idx = list(range(before, 0, -1)) + list(range(n)) + list(range(n - 2, n - 2 - after, -1))
    elif mode == "circular":
        if before > n or after > n:
            raise ArgumentError("pad: circular padding (%d, %d) must be at most the dim size %d (it wraps once)"
                                % (before, after, n))
        idx = [(j - before) % n for j in range(before + n + after)]
    else:
        idx = [0] * before + list(range(n)) + [n - 1] * after
    return idx


@composite
def pad(x, pad, mode="constant", value=0.0):
    """Pad the last dims: ``pad`` is (left, right[, top, bottom[, ...]]), the last dim first, as in
    PyTorch. Modes: constant, reflect, replicate, circular; negative amounts crop first."""
    from ..creation import full, tensor
    from ..movement import cat
    if type(pad) not in (tuple, list) or len(pad) % 2 or len(pad) // 2 > len(x.shape):
        raise ArgumentError("pad: expected an even number of pads, at most 2 per dim of shape %s, found %r"
                            % (x.shape, pad))
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ArgumentError("pad: mode must be constant, reflect, replicate or circular, found %r" % (mode,))
    for i in range(len(pad) // 2):
        d = len(x.shape) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if x.shape[d] + min(before, 0) + min(after, 0) < 0:
            raise ArgumentError("pad: cropping %s from dim %d of size %d leaves fewer than 0 elements"
                                % ((before, after), d, x.shape[d]))
        if before < 0:
            x = x.narrow(d, -before, x.shape[d] + before)
            before = 0
        if after < 0:
            x = x.narrow(d, 0, x.shape[d] + after)
            after = 0
        if mode == "constant":
            parts = []
            if before:
                parts.append(full(x.shape[:d] + (before,) + x.shape[d + 1:], value, dtype=x.dtype, device=x.device))
            parts.append(x)
            if after:
                parts.append(full(x.shape[:d] + (after,) + x.shape[d + 1:], value, dtype=x.dtype, device=x.device))
            x = cat(parts, d) if len(parts) > 1 else x
        elif before or after:
            if x.shape[d] == 0:
                raise ArgumentError("pad: %s padding needs a non-empty dim, found shape %s" % (mode, x.shape))
            idx = _pad_indices(x.shape[d], before, after, mode)
            x = x.index_select(d, tensor(idx, dtype=dtypes.int64, device=x.device))
    return x


def _out_size(in_size, size, scale, op):
    if size is not None:
        return size
    if scale is None:
        raise ArgumentError("%s: expected size or scale_factor" % op)
    return int(in_size * scale)


@composite
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resize the spatial dims of (N, C, L), (N, C, H, W) or (N, C, D, H, W): mode nearest,
    nearest-exact or (bi/tri)linear."""
    from ..creation import tensor
    n = len(x.shape) - 2
    if n not in (1, 2, 3):
        raise ShapeError("interpolate: expected (N, C, L), (N, C, H, W) or (N, C, D, H, W), found shape %s"
                         % (x.shape,))
    if mode not in ("nearest", "nearest-exact", "linear", "bilinear", "trilinear"):
        raise ArgumentError("interpolate: mode must be nearest, nearest-exact, linear, bilinear or trilinear, "
                            "found %r" % (mode,))
    sizes = size if type(size) in (tuple, list) else (size,) * n
    scales = scale_factor if type(scale_factor) in (tuple, list) else (scale_factor,) * n
    x = _floating(x, "interpolate")
    for i in range(n):
        d = 2 + i
        src = x.shape[d]
        dst = _out_size(src, sizes[i], scales[i], "interpolate")
        if dst <= 0:
            raise ShapeError("interpolate: output size must be > 0, found %d" % dst)
        ratio = (src / dst) if scales[i] is None or size is not None else 1.0 / scales[i]
        if mode == "nearest" or mode == "nearest-exact":
            half = 0.5 if mode == "nearest-exact" else 0.0  # nearest-exact samples pixel centres
            idx = [min(int((j + half) * ratio), src - 1) for j in range(dst)]
            x = x.index_select(d, tensor(idx, dtype=dtypes.int64, device=x.device))
            continue
        if align_corners:
            pos = [j * (src - 1) / (dst - 1) if dst > 1 else 0.0 for j in range(dst)]
        else:
            pos = [max((j + 0.5) * ratio - 0.5, 0.0) for j in range(dst)]
        lo = [min(int(p), src - 1) for p in pos]
        hi = [min(l + 1, src - 1) for l in lo]
        w = [p - l for p, l in zip(pos, lo)]
        shape = (1,) * d + (dst,) + (1,) * (len(x.shape) - d - 1)
        wt = tensor(w, dtype=x.dtype, device=x.device).reshape(shape)
        a = x.index_select(d, tensor(lo, dtype=dtypes.int64, device=x.device))
        b = x.index_select(d, tensor(hi, dtype=dtypes.int64, device=x.device))
        x = a + (b - a) * wt
    return x


@composite
def adaptive_avg_pool2d(x, output_size):
    """Average pooling of (N, C, H, W) to ``output_size``; window i spans [⌊iH/o⌋, ⌈(i+1)H/o⌉)."""
    from ..movement import cat
    if len(x.shape) != 4:
        raise ShapeError("adaptive_avg_pool2d: expected (N, C, H, W), found shape %s" % (x.shape,))
    out = _tuple(output_size, 2, "output_size", "adaptive_avg_pool2d")
    x = _floating(x, "adaptive_avg_pool2d")
    for i, o in enumerate(out):
        d = 2 + i
        n = x.shape[d]
        if o <= 0 or n == 0:
            raise ShapeError("adaptive_avg_pool2d: sizes must be > 0, found input %s, output %s" % (x.shape, out))
        parts = []
        for j in range(o):
            start, stop = (j * n) // o, -(-((j + 1) * n) // o)
            parts.append(x.narrow(d, start, stop - start).mean(d, keepdim=True))
        x = cat(parts, d)
    return x


@composite
def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The gradient of conv2d with respect to its input: weight is (in, out/groups, kh, kw)."""
    return conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, 2, conv2d,
                          "conv_transpose2d")


def conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, n, conv, op):
    """An ``n``-D transposed convolution as ``conv`` of the spread, padded input with the flipped
    weight: weight is (in, out/groups, *kernel)."""
    from ..creation import zeros
    from ..movement import cat
    if type(x) is not Tensor or type(weight) is not Tensor:
        raise ArgumentTypeError("%s: expected tensors for input and weight" % op)
    if len(x.shape) != n + 2 or len(weight.shape) != n + 2:
        raise ShapeError("%s: expected %d-D input and weight, found %s and %s" % (op, n + 2, x.shape, weight.shape))
    if type(groups) is not int or groups < 1:
        raise ArgumentError("%s: groups must be an int >= 1, found %r" % (op, groups))
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise ShapeError("%s: input has %d channels, weight expects %d (groups=%d)"
                         % (op, x.shape[1], weight.shape[0], groups))
    stride = _tuple(stride, n, "stride", op)
    padding = _tuple(padding, n, "padding", op)
    output_padding = _tuple(output_padding, n, "output_padding", op)
    dilation = _tuple(dilation, n, "dilation", op)
    _check_positive(stride, "stride", op)
    _check_positive(dilation, "dilation", op)
    for op_, s, dl in zip(output_padding, stride, dilation):
        if op_ < 0 or op_ >= max(s, dl):
            raise ArgumentError("%s: output_padding must be smaller than stride or dilation, found %s"
                                % (op, output_padding))
    if [k for k in weight.shape[2:] if k < 1]:
        raise ShapeError("%s: expected a kernel of size >= 1 in every spatial dim, found weight of shape %s"
                         % (op, weight.shape))
    x = _floating(x, op)
    # spread the input: stride - 1 zeros between neighbours
    for i in range(n):
        d, s = 2 + i, stride[i]
        if s > 1 and x.shape[d] > 1:
            size = x.shape[d]
            parts = x.unsqueeze(d + 1)
            gap = zeros(parts.shape[:d + 1] + (s - 1,) + parts.shape[d + 2:], dtype=x.dtype, device=x.device)
            spread = cat([parts, gap], d + 1).reshape(x.shape[:d] + (size * s,) + x.shape[d + 1:])
            x = spread.narrow(d, 0, (size - 1) * s + 1)
    kernel = weight.shape[2:]
    pads = []
    for i in range(n - 1, -1, -1):  # pad() takes the last dim first
        edge = dilation[i] * (kernel[i] - 1) - padding[i]
        pads += [edge, edge + output_padding[i]]
    x = pad(x, tuple(pads))
    cin, cout_g = weight.shape[0], weight.shape[1]
    # (in, out/g, *k) -> (out, in/g, *k), spatially flipped
    wg = weight.reshape((groups, cin // groups, cout_g) + kernel).permute((0, 2, 1) + tuple(range(3, n + 3)))
    wg = wg.reshape((groups * cout_g, cin // groups) + kernel).flip(tuple(range(2, n + 2)))
    return conv(x, wg, bias, 1, 0, dilation, groups)


# -- attention -----------------------------------------------------------------------------------

@composite
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False, generator=None):
    """softmax(q·kᵀ·scale + mask)·v over (..., L, E) queries and (..., S, E) keys.

    A bool ``attn_mask`` marks positions that may attend (True); a float mask is added to the
    scores. ``is_causal`` lets query i see keys j <= i. ``enable_gqa`` lets (..., Hq, L, E)
    queries share (..., Hkv, S, E) keys and values, each kv head serving Hq / Hkv query heads.
    """
    from ..creation import ones
    if enable_gqa:
        key, value = _gqa_heads(query, key, "key"), _gqa_heads(query, value, "value")
    L, S = query.shape[-2], key.shape[-2]
    if query.shape[-1] != key.shape[-1]:
        raise ShapeError("scaled_dot_product_attention: query and key feature sizes differ: %s vs %s"
                         % (query.shape, key.shape))
    scale = 1.0 / (query.shape[-1] ** 0.5) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    if is_causal:
        allowed = ones(L, S, dtype=dtypes.bool_, device=query.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    if attn_mask is not None:
        from ..shapes import broadcast_shapes
        if type(attn_mask) is not Tensor:
            raise ArgumentTypeError("scaled_dot_product_attention: expected attn_mask as a tensor, found %s"
                                    % type(attn_mask).__name__)
        broadcast_shapes(scores.shape, attn_mask.shape, "scaled_dot_product_attention")
        if attn_mask.dtype is dtypes.bool_:
            scores = scores.where(attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p:
        weights = dropout(weights, dropout_p, True, generator)
    return weights @ value


def _gqa_heads(query, t, what):
    """``t``'s heads (dim -3) each repeated Hq / Hkv times in place, as grouped-query attention reads them."""
    if len(query.shape) < 3 or len(t.shape) < 3:
        raise ShapeError("scaled_dot_product_attention: enable_gqa needs (..., heads, L, E) tensors, found %s and %s"
                         % (query.shape, t.shape))
    hq, hk = query.shape[-3], t.shape[-3]
    if hk == 0 or hq % hk:
        raise ShapeError("scaled_dot_product_attention: with enable_gqa the query heads (%d) must be a multiple "
                         "of the %s heads (%d)" % (hq, what, hk))
    if hq == hk:
        return t
    lead = t.shape[:-3]
    spread = t.unsqueeze(-3).expand(lead + (hk, hq // hk) + t.shape[-2:])
    return spread.reshape(lead + (hq,) + t.shape[-2:])


# -- losses -------------------------------------------------------------------------------------------

def _reduce_loss(loss, reduction, op, weight_sum=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight_sum if weight_sum is not None else loss.mean()
    raise ArgumentError("%s: reduction must be 'mean', 'sum' or 'none', found %r" % (op, reduction))


def _check_same_shape(a, b, op):
    for name, t in (("input", a), ("target", b)):
        if type(t) is not Tensor:
            raise ArgumentTypeError("%s: expected a tensor %s, found %s" % (op, name, type(t).__name__))
    if a.shape != b.shape:
        raise ShapeError("%s: expected a target of the input's shape %s, found %s" % (op, a.shape, b.shape))


def _class_weights(target, weight, ignore_index, dtype):
    """Per target element: 0 where ignored, else its class weight (1 without ``weight``)."""
    keep = target != ignore_index
    w = keep.to(dtype)
    if weight is None:
        return w
    safe = target.where(keep, 0)
    return w * weight.index_select(0, safe.reshape(-1)).reshape(target.shape)


@composite
def nll_loss(log_probs, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of class indices ``target`` (N, ...) under ``log_probs`` (N, C, ...)."""
    return _nll(log_probs, target, weight, ignore_index, reduction, "nll_loss")


def _nll(log_probs, target, weight, ignore_index, reduction, op):
    if type(target) is not Tensor or target.dtype.kind != "i":
        raise DTypeError("%s: expected int64 class indices as target, found %s"
                         % (op, target.dtype.name if type(target) is Tensor else type(target).__name__))
    cdim = 1 if len(log_probs.shape) > 1 else 0
    c = log_probs.shape[cdim] if log_probs.shape else 0
    expected = log_probs.shape[:cdim] + log_probs.shape[cdim + 1:]
    if not log_probs.shape or target.shape != expected:
        raise ShapeError("%s: expected target of shape %s for input %s, found %s"
                         % (op, expected, log_probs.shape, target.shape))
    if weight is not None and (type(weight) is not Tensor or weight.shape != (c,)):
        raise ShapeError("%s: expected a weight of shape (%d,), found %s"
                         % (op, c, weight.shape if type(weight) is Tensor else type(weight).__name__))
    safe = target.where(target != ignore_index, 0)
    # one read of the device (a sync on a GPU) says whether any class is out of range
    if safe.numel():
        with checking():  # a check only: a captured step skips it, gather's own check stays
            bad = ((safe < 0) | (safe >= c)).any().item()
    if safe.numel() and bad:
        from ..errors import IndexOutOfRange
        raise IndexOutOfRange("%s: class indices must be in [0, %d) (or ignore_index), found %d..%d"
                              % (op, c, safe.min().item(), safe.max().item()))
    picked = log_probs.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim)
    w = _class_weights(target, weight, ignore_index, log_probs.dtype)
    return _reduce_loss(-picked * w, reduction, op, w.sum() if reduction == "mean" else None)


@composite
def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits (N, C, ...) against class indices (N, ...) or class probabilities
    (same shape as the input), with PyTorch's ``weight``, ``ignore_index`` and ``label_smoothing``."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError("cross_entropy: label_smoothing must be in [0, 1], found %r" % (label_smoothing,))
    for name, t in (("input", input), ("target", target)):
        if type(t) is not Tensor:
            raise ArgumentTypeError("cross_entropy: expected a tensor %s, found %s" % (name, type(t).__name__))
    cdim = 1 if len(input.shape) > 1 else 0
    c = input.shape[cdim] if input.shape else 1
    if weight is not None and (type(weight) is not Tensor or weight.shape != (c,)):
        raise ShapeError("cross_entropy: expected weight of shape (%d,) (one per class), found %s"
                         % (c, weight.shape if type(weight) is Tensor else type(weight).__name__))
    logp = log_softmax(input, cdim)
    c = input.shape[cdim] if input.shape else 1
    wlogp = logp if weight is None else logp * weight.reshape((c,) + (1,) * (len(input.shape) - cdim - 1))
    if target.dtype.kind == "f":  # class probabilities
        _check_same_shape(input, target, "cross_entropy")
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        return _reduce_loss(-(wlogp * target).sum(cdim), reduction, "cross_entropy")
    nll = _nll(logp, target, weight, ignore_index, "none", "cross_entropy")
    if label_smoothing:
        keep = (target != ignore_index).to(input.dtype)
        smooth = -wlogp.sum(cdim) * keep
        nll = nll * (1 - label_smoothing) + smooth * (label_smoothing / c)
    if reduction == "mean":
        return nll.sum() / _class_weights(target, weight, ignore_index, input.dtype).sum()
    return _reduce_loss(nll, reduction, "cross_entropy")


@composite
def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t·log p + (1-t)·log(1-p)) for probabilities ``input``; logs clamped at -100 like PyTorch."""
    _check_same_shape(input, target, "binary_cross_entropy")
    loss = -(target * input.log().clamp(min=-100.0) + (1 - target) * (1 - input).log().clamp(min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss, reduction, "binary_cross_entropy")


@composite
def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """Binary cross entropy of logits, computed stably: (1-t)·x + (1 + (pw-1)·t)·softplus(-x)."""
    _check_same_shape(input, target, "binary_cross_entropy_with_logits")
    sp = (-input).maximum(0) + (-(input.abs())).exp().log1p()  # softplus(-x), stable
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * sp
    else:
        loss = (1 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss, reduction, "binary_cross_entropy_with_logits")


@composite
def mse_loss(input, target, reduction="mean"):
    """The squared error (input - target)², reduced by ``reduction`` ('mean', 'sum' or 'none')."""
    _check_same_shape(input, target, "mse_loss")
    d = input - target
    return _reduce_loss(d * d, reduction, "mse_loss")


@composite
def l1_loss(input, target, reduction="mean"):
    """The absolute error |input - target|, reduced by ``reduction`` ('mean', 'sum' or 'none')."""
    _check_same_shape(input, target, "l1_loss")
    return _reduce_loss((input - target).abs(), reduction, "l1_loss")


@composite
def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5·d² where |d| < delta, else delta·(|d| - 0.5·delta)."""
    _check_same_shape(input, target, "huber_loss")
    if not delta > 0:
        raise ArgumentError("huber_loss: delta must be > 0, found %r" % (delta,))
    d = (input - target).abs()
    loss = (d * d * 0.5).where(d < delta, (d - 0.5 * delta) * delta)
    return _reduce_loss(loss, reduction, "huber_loss")


@composite
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5·d²/beta where |d| < beta, else |d| - 0.5·beta (beta = 0 is the L1 loss)."""
    _check_same_shape(input, target, "smooth_l1_loss")
    if not beta >= 0:
        raise ArgumentError("smooth_l1_loss: beta must be >= 0, found %r" % (beta,))
    d = (input - target).abs()
    if beta == 0:
        return _reduce_loss(d, reduction, "smooth_l1_loss")
    loss = (d * d * (0.5 / beta)).where(d < beta, d - 0.5 * beta)
    return _reduce_loss(loss, reduction, "smooth_l1_loss")


@composite
def kl_div(input, target, reduction="mean", log_target=False):
    """KL divergence with ``input`` as log-probabilities: target·(log target - input).
    ``reduction="batchmean"`` divides the sum by the batch size, as PyTorch recommends."""
    _check_same_shape(input, target, "kl_div")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = (target * (target.log() - input)).where(target > 0, 0.0)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.shape else 1)
    return _reduce_loss(loss, reduction, "kl_div")


# 3-D convolution and pooling, unpooling and im2col (nn/spatial.py) load on first use, so a board
# that never calls them does not hold them
_SPATIAL = ("avg_pool3d", "conv3d", "conv_transpose3d", "max_pool3d", "max_unpool2d", "unfold")


def __getattr__(name):
    """``F.conv3d`` and the other ops of ``nn/spatial.py``, imported when first asked for."""
    if name in _SPATIAL:
        from . import spatial
        return getattr(spatial, name)
    raise AttributeError("module 'ember.nn.functional' has no attribute '%s'" % name)


# Where the C kernels load, the C-backed Cpu runs some of these as fused kernels (nn/fused_c.py).
from ..backends.cpu import ckernels as _ckernels  # noqa: E402

if _ckernels.available():
    from . import fused_c  # noqa: E402, F401
