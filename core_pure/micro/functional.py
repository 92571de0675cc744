"""The ops a deployed model's ``forward`` may call, with ``ember.nn.functional``'s names and
arguments, on int8 and float32 tensors. An op the deployment path lacks raises a ``DeployError``
naming it.

int8 tensors keep their scale through relu, max pooling, average pooling and reshapes, so a run
of them needs no requantization between two quantized layers.
"""
from math import floor

from .tensor import ArgumentError, DeployError, ShapeError, Tensor, empty


def quantize(x, scale, x_scale=None):
    """To int8 of ``scale``: ``clamp(floor(v / scale + 0.5), -127, 127)`` for each value ``v`` of a
    float32 tensor, or ``v = q * x_scale`` of an int8 one (a re-quantization); nan gives 0."""
    out = empty("b", x.shape, (x,), scale)
    src, dst = x.data, out.data
    for i in range(len(src)):
        v = src[i] if x_scale is None else src[i] * x_scale
        dst[i] = q8(v / scale + 0.5)
    return out


def q8(v):
    """``clamp(floor(v), -127, 127)``, nan 0. The float is compared before ``floor``: ``floor(inf)``
    raises, and a large one would make a big integer (a heap object, or an overflow on a port
    without them) in a hot loop."""
    if v >= 127:
        return 127
    if v < -126:  # floor(v) <= -127
        return -127
    return floor(v) if v == v else 0


def dequantize(x):
    """int8 -> float32 (``q * scale``); a float tensor is returned as it is."""
    s = x.scale
    if s is None:
        return x
    out = empty("f", x.shape, (x,))
    src, dst = x.data, out.data
    for i in range(len(src)):
        dst[i] = src[i] * s
    return out


def relu(x, inplace=False):
    """max(x, 0), into the input's buffer when nothing reads the input afterwards (the plan decides)."""
    out = empty("f" if x.scale is None else "b", x.shape, (x,), x.scale, inplace=x)
    src, dst = x.data, out.data
    zero = 0.0 if x.scale is None else 0
    for i in range(len(src)):
        v = src[i]
        dst[i] = v if v > zero else zero
    return out


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of (N, C, H, W); padding counts as -inf (PyTorch's semantics)."""
    if ceil_mode or return_indices:
        raise DeployError("max_pool2d: ceil_mode and return_indices are not in the deployment path")
    return _pool(x, kernel_size, stride, padding, dilation, True, "max_pool2d")


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of (N, C, H, W); zero padding counts in the mean (PyTorch's default).
    An int8 mean rounds half up onto the input's scale."""
    if ceil_mode or not count_include_pad or divisor_override is not None:
        raise DeployError("avg_pool2d: ceil_mode, count_include_pad=False and divisor_override are not in "
                          "the deployment path")
    return _pool(x, kernel_size, stride, padding, 1, False, "avg_pool2d")


def flatten(x, start_dim=0, end_dim=-1):
    return x.flatten(start_dim, end_dim)


def dropout(x, p=0.5, training=False, inplace=False):
    """Identity: a deployed model only infers."""
    return x


def pair(v, what, op, low=1):
    """``v`` as an (h, w) pair of ints, each at least ``low`` (0 for padding, else 1)."""
    if type(v) is int:
        v = v, v
    elif type(v) in (tuple, list) and len(v) == 2 and type(v[0]) is int and type(v[1]) is int:
        v = v[0], v[1]
    else:
        raise ArgumentError("%s: %s must be an int or a pair, found %r" % (op, what, v))
    if v[0] < low or v[1] < low:
        raise ArgumentError("%s: %s must be >= %d, found %s" % (op, what, low, v))
    return v


def nchw(x, op):
    if type(x) is not Tensor or len(x.shape) != 4:
        raise ShapeError("%s: expected an (N, C, H, W) tensor, found %s" % (
            op, x.shape if type(x) is Tensor else type(x).__name__))
    return x.shape


def out_size(n, k, s, p, d, op):
    size = (n + 2 * p - d * (k - 1) - 1) // s + 1
    if size < 1:
        raise ShapeError("%s: an input of size %d is smaller than the kernel %d" % (op, n, k))
    return size


def _pool(x, kernel_size, stride, padding, dilation, is_max, op):
    n, c, h, w = nchw(x, op)
    kh, kw = pair(kernel_size, "kernel_size", op)
    sh, sw = pair(kernel_size if stride is None else stride, "stride", op)
    ph, pw = pair(padding, "padding", op, 0)
    dh, dw = pair(dilation, "dilation", op)
    if not (0 <= ph <= kh // 2 and 0 <= pw <= kw // 2):  # else a window may lie wholly in the padding
        raise ArgumentError("%s: padding must be between 0 and kernel_size // 2, found %s for kernel %s"
                            % (op, (ph, pw), (kh, kw)))
    oh, ow = out_size(h, kh, sh, ph, dh, op), out_size(w, kw, sw, pw, dw, op)
    quant = x.scale is not None
    out = empty("b" if quant else "f", (n, c, oh, ow), (x,), x.scale)
    src, dst, area, i = x.data, out.data, kh * kw, 0
    for plane in range(0, n * c * h * w, h * w):
        for oy in range(oh):
            y0 = oy * sh - ph
            for ox in range(ow):
                x0 = ox * sw - pw
                best = None
                acc = 0
                for ky in range(kh):
                    yy = y0 + ky * dh
                    if 0 <= yy < h:
                        row = plane + yy * w
                        for kx in range(kw):
                            xx = x0 + kx * dw
                            if 0 <= xx < w:
                                v = src[row + xx]
                                if not is_max:
                                    acc += v
                                elif best is None or v > best:
                                    best = v
                if is_max:
                    dst[i] = best
                elif quant:
                    dst[i] = floor(acc / area + 0.5)
                else:
                    dst[i] = acc / area
                i += 1
    return out


def __getattr__(name):
    if name.startswith("_"):  # __all__, __path__, ...: what import machinery asks of every module
        raise AttributeError(name)
    raise DeployError("ember.nn.functional.%s is not in the deployment path (it has: relu, max_pool2d, "
                      "avg_pool2d, flatten, dropout)" % name)
