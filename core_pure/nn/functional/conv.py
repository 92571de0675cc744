"""1-D and 2-D convolutions and their transposes, by the backend's ``conv`` primitive."""
from ... import dtypes
from ...composite import composite
from ...elementwise import same_device
from ...errors import ArgumentError, ArgumentTypeError, ShapeError
from ...shapes import conv_out_size
from ...tensor import Tensor
from .args import _check_positive, _floating, _tuple


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


@composite
def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The gradient of conv2d with respect to its input: weight is (in, out/groups, kh, kw)."""
    return conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, 2, conv2d,
                          "conv_transpose2d")


def conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, n, conv, op):
    """An ``n``-D transposed convolution as ``conv`` of the spread, padded input with the flipped
    weight: weight is (in, out/groups, *kernel)."""
    from ...creation import zeros
    from ...movement import cat
    from .resample import pad
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
