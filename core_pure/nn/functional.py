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
    x, dtype = _upcast(x)
    e = (x - x.max(d, keepdim=True).values).exp()
    return _down(e / e.sum(d, keepdim=True), dtype)


@composite
def log_softmax(x, dim=-1):
    """x - logsumexp(x) along ``dim``, computed stably."""
    x = _floating(x, "log_softmax")
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
    x, weight = x.to(dtype), weight.to(dtype)
    data = dev.conv(x._data, weight._data, stride, pads, dilation, groups)
    spatial = tuple(conv_out_size(x.shape[2 + i], kernel[i], stride[i], pads[i], dilation[i]) for i in range(n))
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
        size = conv_out_size(x.shape[2 + i], kernel[i], stride[i], (pad[i], pad[i]), dilation[i])
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


# -- activations -------------------------------------------------------------------------------

@composite
def leaky_relu(x, negative_slope=0.01):
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
    return _down(x.where(bx > threshold, bx.exp().log1p() / beta), dtype)


@composite
def elu(x, alpha=1.0):
    return x.where(x > 0, x.expm1() * alpha)


@composite
def mish(x):
    x, dtype = _upcast(x)
    return _down(x * softplus(x).tanh(), dtype)


@composite
def hardsigmoid(x):
    return (x / 6 + 0.5).clamp(0.0, 1.0)


@composite
def hardswish(x):
    return x * (x + 3).clamp(0.0, 6.0) / 6


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
    else:
        idx = [0] * before + list(range(n)) + [n - 1] * after
    return idx


@composite
def pad(x, pad, mode="constant", value=0.0):
    """Pad the last dims: ``pad`` is (left, right[, top, bottom[, ...]]), the last dim first, as in
    PyTorch. Modes: constant (negative amounts crop), reflect, replicate."""
    from ..creation import full, tensor
    from ..movement import cat
    if type(pad) not in (tuple, list) or len(pad) % 2 or len(pad) // 2 > len(x.shape):
        raise ArgumentError("pad: expected an even number of pads, at most 2 per dim of shape %s, found %r"
                            % (x.shape, pad))
    if mode not in ("constant", "reflect", "replicate"):
        raise ArgumentError("pad: mode must be constant, reflect or replicate, found %r" % (mode,))
    for i in range(len(pad) // 2):
        d = len(x.shape) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if mode == "constant":
            if before < 0:
                x = x.narrow(d, -before, x.shape[d] + before)
                before = 0
            if after < 0:
                x = x.narrow(d, 0, x.shape[d] + after)
                after = 0
            parts = []
            if before:
                parts.append(full(x.shape[:d] + (before,) + x.shape[d + 1:], value, dtype=x.dtype, device=x.device))
            parts.append(x)
            if after:
                parts.append(full(x.shape[:d] + (after,) + x.shape[d + 1:], value, dtype=x.dtype, device=x.device))
            x = cat(parts, d) if len(parts) > 1 else x
        else:
            if x.shape[d] == 0 or before < 0 or after < 0:
                raise ArgumentError("pad: %s padding needs a non-empty dim and pads >= 0" % mode)
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
    """Resize the spatial dims of (N, C, L) or (N, C, H, W): mode nearest or (bi)linear."""
    from ..creation import tensor
    n = len(x.shape) - 2
    if n not in (1, 2):
        raise ShapeError("interpolate: expected (N, C, L) or (N, C, H, W), found shape %s" % (x.shape,))
    if mode not in ("nearest", "linear", "bilinear"):
        raise ArgumentError("interpolate: mode must be nearest, linear or bilinear, found %r" % (mode,))
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
        if mode == "nearest":
            idx = [min(int(j * ratio), src - 1) for j in range(dst)]
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
    from ..creation import zeros
    from ..movement import cat
    if len(x.shape) != 4 or len(weight.shape) != 4:
        raise ShapeError("conv_transpose2d: expected 4-D input and weight, found %s and %s" % (x.shape, weight.shape))
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise ShapeError("conv_transpose2d: input has %d channels, weight expects %d (groups=%d)"
                         % (x.shape[1], weight.shape[0], groups))
    stride = _tuple(stride, 2, "stride", "conv_transpose2d")
    padding = _tuple(padding, 2, "padding", "conv_transpose2d")
    output_padding = _tuple(output_padding, 2, "output_padding", "conv_transpose2d")
    dilation = _tuple(dilation, 2, "dilation", "conv_transpose2d")
    _check_positive(stride, "stride", "conv_transpose2d")
    _check_positive(dilation, "dilation", "conv_transpose2d")
    for op_, s, dl in zip(output_padding, stride, dilation):
        if op_ < 0 or op_ >= max(s, dl):
            raise ArgumentError("conv_transpose2d: output_padding must be smaller than stride or dilation, found %s"
                                % (output_padding,))
    if [k for k in weight.shape[2:] if k < 1]:
        raise ShapeError("conv_transpose2d: expected a kernel of size >= 1 in every spatial dim, found weight "
                         "of shape %s" % (weight.shape,))
    x = _floating(x, "conv_transpose2d")
    n, c, h, w = x.shape
    # spread the input: stride - 1 zeros between neighbours
    for d, s in ((2, stride[0]), (3, stride[1])):
        if s > 1 and x.shape[d] > 1:
            size = x.shape[d]
            parts = x.unsqueeze(d + 1)
            gap = zeros(parts.shape[:d + 1] + (s - 1,) + parts.shape[d + 2:], dtype=x.dtype, device=x.device)
            spread = cat([parts, gap], d + 1).reshape(x.shape[:d] + (size * s,) + x.shape[d + 1:])
            x = spread.narrow(d, 0, (size - 1) * s + 1)
    kh, kw = weight.shape[2:]
    pads = []
    for k, p, dl, op_ in ((kh, padding[0], dilation[0], output_padding[0]), (kw, padding[1], dilation[1], output_padding[1])):
        edge = dl * (k - 1) - p
        pads += [edge, edge + op_]
    x = pad(x, (pads[2], pads[3], pads[0], pads[1]))
    cin, cout_g = weight.shape[0], weight.shape[1]
    # (in, out/g, kh, kw) -> (out, in/g, kh, kw), spatially flipped
    wg = weight.reshape(groups, cin // groups, cout_g, kh, kw).permute(0, 2, 1, 3, 4)
    wg = wg.reshape(groups * cout_g, cin // groups, kh, kw).flip((2, 3))
    return conv2d(x, wg, bias, 1, 0, dilation, groups)


# -- attention -----------------------------------------------------------------------------------

@composite
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, generator=None):
    """softmax(q·kᵀ·scale + mask)·v over (..., L, E) queries and (..., S, E) keys.

    A bool ``attn_mask`` marks positions that may attend (True); a float mask is added to the
    scores. ``is_causal`` lets query i see keys j <= i.
    """
    from ..creation import ones
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
    _check_same_shape(input, target, "mse_loss")
    d = input - target
    return _reduce_loss(d * d, reduction, "mse_loss")


@composite
def l1_loss(input, target, reduction="mean"):
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


# Where the C kernels load, the C-backed Cpu runs some of these as fused kernels (nn/fused_c.py).
from ..backends.cpu import ckernels as _ckernels  # noqa: E402

if _ckernels.available():
    from . import fused_c  # noqa: E402, F401
