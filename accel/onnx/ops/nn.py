"""ONNX layers: convolutions, pools, matrix products, normalizations, resizing, dropout."""
import ember
import ember.nn.functional as F

from . import op
from .util import axis


def auto_pads(n, in_sizes, kernel, strides, dilations):
    """ONNX pads (begin..., end...) from ``pads`` or ``auto_pad``."""
    k = len(kernel)
    mode = n.attr("auto_pad", "NOTSET")
    if mode in ("NOTSET", "VALID"):
        pads = n.attr("pads", [0] * (2 * k)) if mode == "NOTSET" else [0] * (2 * k)
        return list(pads)
    before, after = [], []
    for i in range(k):
        out = -(-in_sizes[i] // strides[i])
        total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_sizes[i])
        small, big = total // 2, total - total // 2
        before.append(small if mode == "SAME_UPPER" else big)
        after.append(big if mode == "SAME_UPPER" else small)
    return before + after


def _auto_pad_check(n):
    mode = n.attr("auto_pad", "NOTSET")
    if mode not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        return "auto_pad %r not supported" % mode
    return None


def _explicit_pad(x, pads, value):
    """Pad the spatial dims of ``x`` by ONNX pads (begin..., end...)."""
    k = len(pads) // 2
    flat = []
    for i in range(k - 1, -1, -1):
        flat.extend([pads[i], pads[i + k]])
    return F.pad(x, flat, mode="constant", value=value)


def _spatial(n, x, kernel, pad_value):
    """(x padded where pads are uneven, symmetric pads, strides, dilations)."""
    k = len(kernel)
    strides = n.attr("strides", [1] * k)
    dilations = n.attr("dilations", [1] * k)
    pads = auto_pads(n, x.shape[2:], kernel, strides, dilations)
    if pads[:k] != pads[k:]:
        x = _explicit_pad(x, pads, pad_value)
        pads = [0] * (2 * k)
    return x, pads[:k], strides, dilations


@op("Conv", attrs="auto_pad dilations group kernel_shape pads strides", check=_auto_pad_check)
def conv(n, x, w, b=None):
    kernel = list(w.shape[2:])
    x, pads, strides, dil = _spatial(n, x, kernel, 0.0)
    g = n.attr("group", 1)
    if len(kernel) == 1:
        return F.conv1d(x, w, b, strides[0], pads[0], dil[0], g)
    if len(kernel) == 2:
        return F.conv2d(x, w, b, tuple(strides), tuple(pads), tuple(dil), g)
    if len(kernel) == 3:
        return F.conv3d(x, w, b, tuple(strides), tuple(pads), tuple(dil), g)
    n.fail("expected a 1-D, 2-D or 3-D Conv, found %d spatial dims" % len(kernel))


@op("ConvTranspose", attrs="auto_pad dilations group kernel_shape output_padding output_shape pads strides",
    check=_auto_pad_check)
def conv_transpose(n, x, w, b=None):
    kernel = list(w.shape[2:])
    k = len(kernel)
    strides = n.attr("strides", [1] * k)
    dil = n.attr("dilations", [1] * k)
    outpad = n.attr("output_padding", [0] * k)
    g = n.attr("group", 1)
    full = [(x.shape[2 + i] - 1) * strides[i] + outpad[i] + (kernel[i] - 1) * dil[i] + 1 for i in range(k)]
    shape = n.attr("output_shape")
    if shape is not None or n.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        target = list(shape)[-k:] if shape is not None else [x.shape[2 + i] * strides[i] for i in range(k)]
        total = [full[i] - target[i] for i in range(k)]
        upper = n.attr("auto_pad", "NOTSET") == "SAME_UPPER"
        pads = [t // 2 if upper else t - t // 2 for t in total] + [t - t // 2 if upper else t // 2 for t in total]
    else:
        pads = n.attr("pads", [0] * (2 * k)) if n.attr("auto_pad", "NOTSET") == "NOTSET" else [0] * (2 * k)
    if k == 1:
        y = F.conv_transpose2d(x.unsqueeze(2), w.unsqueeze(2), None, (1, strides[0]), 0, 0, g, (1, dil[0])).squeeze(2)
    elif k == 2:
        y = F.conv_transpose2d(x, w, None, tuple(strides), 0, 0, g, tuple(dil))
    elif k == 3:
        y = F.conv_transpose3d(x, w, None, tuple(strides), 0, 0, g, tuple(dil))
    else:
        n.fail("expected a 1-D, 2-D or 3-D ConvTranspose, found %d spatial dims" % k)
    for i in range(k):
        length = full[i] - pads[i] - pads[i + k]
        if pads[i] < 0:  # an output_shape past the full result: zeros in front
            shape = list(y.shape)
            shape[2 + i] = -pads[i]
            y = ember.cat([ember.zeros(shape, dtype=y.dtype, device=y.device), y], dim=2 + i)
            pads[i] = 0
        extra = pads[i] + length - y.shape[2 + i]
        if extra > 0:
            y = _pad_dim_end(y, 2 + i, extra)
        y = y.narrow(2 + i, pads[i], length)
    if b is not None:
        y = y + b.reshape(*([1, -1] + [1] * k))
    return y


def _pad_dim_end(y, d, extra):
    shape = list(y.shape)
    shape[d] = extra
    return ember.cat([y, ember.zeros(shape, dtype=y.dtype, device=y.device)], dim=d)


def _pool_check(n):
    bad = _auto_pad_check(n)
    if bad:
        return bad
    if n.attr("storage_order", 0) and len(n.attr("kernel_shape", ())) != 2:
        return "storage_order 1 is supported for 2-D pools only"
    return None


def _lowest(x):
    if x.dtype.kind == "f":
        return float("-inf")
    if x.dtype.name == "uint8":
        return 0
    return -(1 << (x.dtype.bits - 1))


def _pool_plan(n, x, kernel):
    """(begin pads, end pads with ceil_mode's extra, output sizes, strides, dilations)."""
    k = len(kernel)
    strides = n.attr("strides", [1] * k)
    dil = n.attr("dilations", [1] * k)
    pads = auto_pads(n, x.shape[2:], kernel, strides, dil)
    ceil = bool(n.attr("ceil_mode", 0))
    begin, end, out = pads[:k], list(pads[k:]), []
    for i in range(k):
        span = (kernel[i] - 1) * dil[i] + 1
        room = x.shape[2 + i] + begin[i] + end[i] - span
        o = (-(-room // strides[i]) if ceil else room // strides[i]) + 1
        if ceil and (o - 1) * strides[i] >= x.shape[2 + i] + begin[i]:
            o -= 1
        out.append(o)
    return begin, end, out, strides, dil


def _windows(x, begin, end, out, strides, dil, kernel, value):
    """Each kernel offset's strided view of ``x`` padded with ``value`` (a generator)."""
    k = len(kernel)
    need = [max(0, (out[i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - (x.shape[2 + i] + begin[i]))
            for i in range(k)]
    xp = _explicit_pad(x, list(begin) + need, value) if any(begin) or any(need) else x
    offsets = [[]]
    for i in range(k):
        offsets = [o + [j] for o in offsets for j in range(kernel[i])]
    for o in offsets:
        index = [slice(None), slice(None)]
        for i in range(k):
            a = o[i] * dil[i]
            index.append(slice(a, a + (out[i] - 1) * strides[i] + 1, strides[i]))
        yield xp[tuple(index)]


def _pool_sum(x, n, kernel, fn):
    begin, end, out, strides, dil = _pool_plan(n, x, kernel)
    acc = None
    for w in _windows(x, begin, end, out, strides, dil, kernel, 0.0):
        w = fn(w)
        acc = w if acc is None else acc + w
    return acc, (begin, end, out, strides, dil)


def _native_ok(x, kernel, begin, end, dil, n):
    return len(kernel) == 2 and x.dtype.kind == "f" and begin == end and \
        all(b <= kk // 2 for b, kk in zip(begin, kernel)) and n.attr("auto_pad", "NOTSET") == "NOTSET"


@op("MaxPool", attrs="auto_pad ceil_mode dilations kernel_shape pads storage_order strides", check=_pool_check)
def max_pool(n, x):
    kernel = list(n.attr("kernel_shape"))
    k = len(kernel)
    strides = n.attr("strides", [1] * k)
    dil = n.attr("dilations", [1] * k)
    pads = auto_pads(n, x.shape[2:], kernel, strides, dil)
    ceil = bool(n.attr("ceil_mode", 0))
    if len(n.outputs) > 1 or _native_ok(x, kernel, pads[:k], pads[k:], dil, n):
        if pads[:k] != pads[k:]:
            x = _explicit_pad(x, pads, _lowest(x))
            pads = [0] * (2 * k)
        pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}.get(k)
        if pool is None:
            n.fail("expected a 1-D, 2-D or 3-D MaxPool with indices, found %d spatial dims" % k)
        out = pool(x, tuple(kernel), tuple(strides), tuple(pads[:k]), tuple(dil), ceil, len(n.outputs) > 1)
        if len(n.outputs) > 1:
            values, idx = out
            if n.attr("storage_order", 0):  # column-major indices within each plane
                H, W = x.shape[2:]
                idx = (idx % W) * H + idx // W
            return values, _flat_indices(x, idx, k)
        return out
    begin, end, out, strides, dil = _pool_plan(n, x, kernel)
    acc = None
    for w in _windows(x, begin, end, out, strides, dil, kernel, _lowest(x)):
        acc = w if acc is None else acc.maximum(w)
    return acc


def _flat_indices(x, idx, k):
    """PyTorch's per-plane indices as ONNX's indices into the whole (N, C, ...) tensor."""
    plane = 1
    for d in x.shape[2:]:
        plane *= d
    N, C = x.shape[:2]
    base = ember.arange(N * C, dtype=ember.int64, device=x.device).reshape(*([N, C] + [1] * k)) * plane
    return idx.to(ember.int64) + base


def _counts(x, plan, kernel, include_pad):
    """How many input (or, with ``include_pad``, input-and-pad) elements each window covers."""
    begin, end, out, strides, dil = plan
    k = len(kernel)
    if include_pad:
        shape = tuple(x.shape[2 + i] + begin[i] + end[i] for i in range(k))
        begin = [0] * k
    else:
        shape = tuple(x.shape[2:])
    ones = ember.ones((1, 1) + shape, dtype=x.dtype, device=x.device)
    acc = None
    for w in _windows(ones, begin, end, out, strides, dil, kernel, 0.0):
        acc = w if acc is None else acc + w
    return acc


@op("AveragePool", attrs="auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides",
    check=_auto_pad_check)
def average_pool(n, x):
    kernel = list(n.attr("kernel_shape"))
    include = bool(n.attr("count_include_pad", 0))
    k = len(kernel)
    strides = n.attr("strides", [1] * k)
    dil = n.attr("dilations", [1] * k)
    pads = auto_pads(n, x.shape[2:], kernel, strides, dil)
    if _native_ok(x, kernel, pads[:k], pads[k:], dil, n) and dil == [1] * k:
        return F.avg_pool2d(x, tuple(kernel), tuple(strides), tuple(pads[:k]), bool(n.attr("ceil_mode", 0)), include)
    total, plan = _pool_sum(x, n, kernel, lambda w: w)
    return total / _counts(x, plan, kernel, include)


def _global(reduce):
    def run(n, x):
        dims = tuple(range(2, x.dim()))
        if reduce == "mean":
            return x.mean(dim=dims, keepdim=True)
        for d in dims:
            x = x.max(dim=d, keepdim=True)[0]
        return x
    return run


op("GlobalAveragePool")(_global("mean"))
op("GlobalMaxPool")(_global("max"))


@op("LpPool", attrs="auto_pad ceil_mode dilations kernel_shape p pads strides", check=_auto_pad_check)
def lp_pool(n, x):
    p = n.attr("p", 2)
    total, _ = _pool_sum(x, n, list(n.attr("kernel_shape")), lambda w: w.abs().pow(p))
    return total.pow(1.0 / p)


@op("GlobalLpPool", attrs="p")
def global_lp_pool(n, x):
    p = n.attr("p", 2)
    return x.abs().pow(p).sum(dim=tuple(range(2, x.dim())), keepdim=True).pow(1.0 / p)


@op("MatMul")
def matmul(n, a, b):
    return ember.matmul(a, b)


@op("Gemm", attrs="alpha beta transA transB")
def gemm(n, a, b, c=None):
    if n.attr("transB", 0) and not n.attr("transA", 0) and n.attr("alpha", 1.0) == 1.0 \
            and n.attr("beta", 1.0) == 1.0 and c is not None and a.dim() == 2 and b.dim() == 2 \
            and c.dim() == 1 and c.shape[0] == b.shape[0] and a.dtype == b.dtype == c.dtype \
            and a.dtype.kind == "f":
        return F.linear(a, b, c)  # a torch Linear: one fused call on the C-backed Cpu
    if n.attr("transA", 0):
        a = a.T
    if n.attr("transB", 0):
        b = b.T
    y = ember.matmul(a, b)
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y


@op("BatchNormalization", attrs="epsilon momentum spatial training_mode")
def batch_norm(n, x, scale, bias, mean, var):
    shape = [1, -1] + [1] * (x.dim() - 2)
    if n.attr("training_mode", 0):
        dims = (0,) + tuple(range(2, x.dim()))
        m = x.mean(dim=dims)
        v = x.var(dim=dims, unbiased=False)
        mom = n.attr("momentum", 0.9)
        y = (x - m.reshape(*shape)) * (v.reshape(*shape) + n.attr("epsilon", 1e-5)).rsqrt() * scale.reshape(*shape) \
            + bias.reshape(*shape)
        return y, mean * mom + m * (1 - mom), var * mom + v * (1 - mom)
    inv = (var.reshape(*shape) + n.attr("epsilon", 1e-5)).rsqrt()
    return (x - mean.reshape(*shape)) * (inv * scale.reshape(*shape)) + bias.reshape(*shape)


@op("InstanceNormalization", attrs="epsilon")
def instance_norm(n, x, scale, bias):
    dims = tuple(range(2, x.dim()))
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) * (x - mean)).mean(dim=dims, keepdim=True)
    shape = [1, -1] + [1] * (x.dim() - 2)
    return (x - mean) * (var + n.attr("epsilon", 1e-5)).rsqrt() * scale.reshape(*shape) + bias.reshape(*shape)


@op("LayerNormalization", since=17, attrs="axis epsilon stash_type")
def layer_norm(n, x, scale, bias=None):
    a = axis(n.attr("axis", -1), x.dim(), n)
    ns = tuple(x.shape[a:])
    if len(n.outputs) == 1 and x.dtype == ember.float32 and tuple(scale.shape) == ns \
            and (bias is None or tuple(bias.shape) == ns):
        # the common case as one composite: the C-backed Cpu runs it as one fused kernel
        return F.layer_norm(x, ns, scale, bias, n.attr("epsilon", 1e-5))
    dims = tuple(range(a, x.dim()))
    xf = x.to(ember.float32) if x.dtype.bits < 32 else x
    mean = xf.mean(dim=dims, keepdim=True)
    d = xf - mean
    var = (d * d).mean(dim=dims, keepdim=True)
    inv = (var + n.attr("epsilon", 1e-5)).rsqrt()
    y = (d * inv).to(x.dtype) * scale
    if bias is not None:
        y = y + bias
    outs = [y]
    if len(n.outputs) > 1:
        outs.append(mean)
    if len(n.outputs) > 2:
        outs.append(inv)
    return tuple(outs)


@op("GroupNormalization", since=21, attrs="epsilon num_groups stash_type")
def group_norm(n, x, scale, bias):
    g = n.attr("num_groups")
    N, C = x.shape[:2]
    xs = x.reshape(N, g, -1)
    mean = xs.mean(dim=2, keepdim=True)
    var = ((xs - mean) * (xs - mean)).mean(dim=2, keepdim=True)
    y = ((xs - mean) * (var + n.attr("epsilon", 1e-5)).rsqrt()).reshape(*x.shape)
    shape = [1, -1] + [1] * (x.dim() - 2)
    return y * scale.reshape(*shape) + bias.reshape(*shape)


@op("RMSNormalization", since=23, attrs="axis epsilon stash_type")
def rms_norm(n, x, scale):
    a = axis(n.attr("axis", -1), x.dim(), n)
    dims = tuple(range(a, x.dim()))
    ms = (x * x).mean(dim=dims, keepdim=True)
    return x * (ms + n.attr("epsilon", 1e-5)).rsqrt() * scale


@op("MeanVarianceNormalization", attrs="axes")
def mvn(n, x):
    dims = tuple(n.attr("axes", [0, 2, 3]))
    mean = x.mean(dim=dims, keepdim=True)
    d = x - mean
    var = (d * d).mean(dim=dims, keepdim=True)
    return d / (var.sqrt() + 1e-9)


@op("LRN", attrs="alpha beta bias size")
def lrn(n, x):
    size = n.attr("size")
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    sq = x * x
    C = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = F.pad(sq, [0, 0] * (x.dim() - 2) + [lo, hi])
    acc = padded.narrow(1, 0, C)
    for i in range(1, size):
        acc = acc + padded.narrow(1, i, C)
    return x / (acc * (alpha / size) + bias).pow(beta)


@op("Dropout", attrs="ratio seed is_test")
def dropout(n, x, ratio=None, training=None):
    if training is not None and bool(training.item()) and (ratio is None or ratio.item() != 0):
        n.fail("expected training_mode false or ratio 0 (ember imports inference graphs), found a random dropout")
    if len(n.outputs) > 1:
        return x, ember.ones(x.shape, dtype=ember.bool, device=x.device)
    return x


@op("SwiGLU", since=28, attrs="alpha")
def swiglu(n, a, b):
    return a * (a * n.attr("alpha", 1.0)).sigmoid() * b
