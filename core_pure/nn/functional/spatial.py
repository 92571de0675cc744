"""Ops over three spatial dims, unpooling and im2col, composed from the 2-D ones.

The ``conv`` and ``pool`` primitives take one or two spatial dims. A 3-D convolution stacks the
input's depth windows into channels and runs one 2-D convolution; a 3-D pool is a 2-D pool over
(H, W) then one over D (max and a zero-padded mean are separable). ``ember.nn.functional``
loads this module on first use of one of its ops.
"""
from ...composite import composite
from ...errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ...shapes import conv_out_size
from ...tensor import Tensor
from .args import _check_positive, _tuple
from .conv import add_bias, conv2d, conv_args, conv_transpose
from .pool import _pool_geometry, avg_pool2d, max_pool2d
from .resample import pad


def _depth_windows(x, kd, stride, dilation, depth):
    """(N, C, D, H, W) -> (N, C, kd, depth, H, W): for each kernel tap the input depths it meets."""
    from ...movement import stack
    taps = []
    for k in range(kd):
        start = k * dilation
        taps.append(x[:, :, start:start + (depth - 1) * stride + 1:stride])
    return stack(taps, 2)


@composite
def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) with weight (out, C/groups, kd, kh, kw), PyTorch's
    semantics; padding an int, three ints, 'valid' or 'same'."""
    op = "conv3d"
    dev, x, weight, stride, pads, dilation = conv_args(x, weight, stride, padding, dilation, groups, 3, op)
    n, c = x.shape[:2]
    o, cg, kd, kh, kw = weight.shape
    symmetric = pads[1][0] == pads[1][1] and pads[2][0] == pads[2][1]
    flat = [0, 0, 0, 0] if symmetric else [pads[2][0], pads[2][1], pads[1][0], pads[1][1]]
    if pads[0] != (0, 0) or not symmetric:
        x = pad(x, tuple(flat + [pads[0][0], pads[0][1]]))
    depth = conv_out_size(x.shape[2], kd, stride[0], (0, 0), dilation[0])
    h, w = x.shape[3:]
    cols = _depth_windows(x, kd, stride[0], dilation[0], depth)  # (N, C, kd, Do, H, W)
    # channels ordered (group, tap, channel in group) so a grouped 2-D conv sees each group whole
    cols = cols.reshape(n, groups, cg, kd, depth, h, w).permute(0, 4, 1, 3, 2, 5, 6)
    cols = cols.reshape(n * depth, groups * kd * cg, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(o, kd * cg, kh, kw)
    plane = (pads[1][0], pads[2][0]) if symmetric else 0
    out = conv2d(cols, w2, None, stride[1:], plane, dilation[1:], groups)  # (N*Do, O, Ho, Wo)
    out = out.reshape((n, depth) + out.shape[1:]).permute(0, 2, 1, 3, 4)
    return add_bias(out, bias, op)


@composite
def conv_transpose3d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The gradient of conv3d with respect to its input: weight is (in, out/groups, kd, kh, kw)."""
    return conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, 3, conv3d,
                          "conv_transpose3d")


def _pool3d_args(x, kernel_size, stride, padding, dilation, name):
    """The checked ``(kernel, stride, padding, dilation)`` of a 3-D pool, three ints each: the 2-D
    pools' checks (``_pool_geometry``), and a float input, which the separable form needs."""
    kernel, stride, pads, dilation, _, _ = _pool_geometry(x, kernel_size, stride, padding, dilation, False, 3, name)
    if x.dtype.kind != "f":
        raise DTypeError("%s: expected a float tensor, found %s" % (name, x.dtype.name))
    return kernel, stride, pads, dilation


def _separable(pool2d, x, kernel, stride, pads, dilation):
    """A 3-D window op as ``pool2d`` over (H, W), then ``pool2d`` over D with a (kd, 1) window."""
    n, c, d, h, w = x.shape
    extra = () if dilation is None else (dilation[1:],)
    plane = pool2d(x.reshape(n, c * d, h, w), kernel[1:], stride[1:], pads[1:], *extra)
    ho, wo = plane.shape[2:]
    extra = () if dilation is None else ((dilation[0], 1),)
    deep = pool2d(plane.reshape(n, c, d, ho * wo), (kernel[0], 1), (stride[0], 1), (pads[0], 0), *extra)
    return deep.reshape(n, c, deep.shape[2], ho, wo)


def _refuse(flag, what, op):
    if flag:
        raise ArgumentError("%s: %s=True is not supported (the 2-D pools it is built from lack it)" % (op, what))


@composite
def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of (N, C, D, H, W); ``stride`` defaults to ``kernel_size``; pads count as -inf.
    PyTorch's argument order; ``ceil_mode`` and ``return_indices`` must stay False."""
    _refuse(ceil_mode, "ceil_mode", "max_pool3d")
    _refuse(return_indices, "return_indices", "max_pool3d")
    kernel, stride, pads, dilation = _pool3d_args(x, kernel_size, stride, padding, dilation, "max_pool3d")
    return _separable(max_pool2d, x, kernel, stride, pads, dilation)


@composite
def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of (N, C, D, H, W); zero padding counts in the mean unless
    ``count_include_pad=False``; ``divisor_override`` divides the window sum by itself instead.
    PyTorch's argument order; ``ceil_mode`` must stay False."""
    from ...creation import ones
    _refuse(ceil_mode, "ceil_mode", "avg_pool3d")
    kernel, stride, pads, _ = _pool3d_args(x, kernel_size, stride, padding, 1, "avg_pool3d")
    if divisor_override is not None and (type(divisor_override) is not int or divisor_override < 1):
        raise ArgumentError("avg_pool3d: divisor_override must be an int >= 1, found %r" % (divisor_override,))
    out = _separable(avg_pool2d, x, kernel, stride, pads, None)
    if divisor_override is not None:
        return out * (kernel[0] * kernel[1] * kernel[2] / divisor_override)
    if not count_include_pad and pads != (0, 0, 0):
        cover = _separable(avg_pool2d, ones((1, 1) + x.shape[2:], dtype=x.dtype, device=x.device), kernel, stride,
                           pads, None)
        out = out / cover
    return out


@composite
def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of ``max_pool2d(..., return_indices=True)``: each value of (N, C, H, W) written at
    its flat index into a zero (N, C, H_out, W_out) plane, H_out = (H-1)·stride - 2·padding + kernel."""
    from ...creation import zeros
    op = "max_unpool2d"
    if type(x) is not Tensor or type(indices) is not Tensor:
        raise ArgumentTypeError("%s: expected tensors for input and indices" % op)
    if len(x.shape) not in (3, 4):
        raise ShapeError("%s: expected input (N, C, H, W) or (C, H, W), found shape %s" % (op, x.shape))
    if indices.shape != x.shape:
        raise ShapeError("%s: expected indices of the input's shape %s, found %s" % (op, x.shape, indices.shape))
    if indices.dtype.kind != "i":
        raise DTypeError("%s: expected int64 indices, found %s" % (op, indices.dtype.name))
    kernel = _tuple(kernel_size, 2, "kernel_size", op)
    stride = kernel if stride is None else _tuple(stride, 2, "stride", op)
    pads = _tuple(padding, 2, "padding", op)
    _check_positive(kernel, "kernel_size", op)
    _check_positive(stride, "stride", op)
    h, w = x.shape[-2:]
    default = tuple((size - 1) * s - 2 * p + k for size, s, p, k in zip((h, w), stride, pads, kernel))
    if output_size is None:
        out_hw = default
    else:
        out_hw = tuple(output_size)[-2:]
        if len(out_hw) != 2 or any(type(v) is not int for v in out_hw):
            raise ArgumentTypeError("%s: expected output_size to end in two ints, found %r" % (op, output_size))
        for v, dflt, s in zip(out_hw, default, stride):
            if v < dflt or v > dflt + s - 1:  # only sizes a pool of these arguments could have come from
                raise ShapeError("%s: output_size %s must be between %s and %s"
                                 % (op, out_hw, default, tuple(dd + ss - 1 for dd, ss in zip(default, stride))))
    lead = x.shape[:-2]
    flat_x = x.reshape(lead + (h * w,))
    base = zeros(lead + (out_hw[0] * out_hw[1],), dtype=x.dtype, device=x.device)
    return base.scatter(len(lead), indices.reshape(lead + (h * w,)), flat_x).reshape(lead + out_hw)


@composite
def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: the sliding (kh, kw) blocks of (N, C, H, W) as columns, (N, C·kh·kw, L) with L the
    number of blocks, channel-major as in PyTorch."""
    from ...movement import stack
    op = "unfold"
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (op, type(x).__name__))
    if len(x.shape) not in (3, 4):
        raise ShapeError("%s: expected input (N, C, H, W) or (C, H, W), found shape %s" % (op, x.shape))
    kernel = _tuple(kernel_size, 2, "kernel_size", op)
    dilation = _tuple(dilation, 2, "dilation", op)
    pads = _tuple(padding, 2, "padding", op)
    stride = _tuple(stride, 2, "stride", op)
    _check_positive(kernel, "kernel_size", op)
    _check_positive(dilation, "dilation", op)
    _check_positive(stride, "stride", op)
    if any(p < 0 for p in pads):
        raise ArgumentError("%s: padding must be >= 0, found %s" % (op, pads))
    batched = x if len(x.shape) == 4 else x.unsqueeze(0)
    if pads != (0, 0):
        batched = pad(batched, (pads[1], pads[1], pads[0], pads[0]))
    n, c, h, w = batched.shape
    out = []
    for i in range(2):
        size = conv_out_size(batched.shape[2 + i], kernel[i], stride[i], (0, 0), dilation[i])
        if size < 1:
            raise ShapeError("%s: input of shape %s (padded %s) is smaller than the dilated kernel %s"
                             % (op, x.shape, pads, kernel))
        out.append(size)
    ho, wo = out
    blocks = []
    for ki in range(kernel[0]):
        for kj in range(kernel[1]):
            top, left = ki * dilation[0], kj * dilation[1]
            blocks.append(batched[:, :, top:top + (ho - 1) * stride[0] + 1:stride[0],
                                  left:left + (wo - 1) * stride[1] + 1:stride[1]])
    cols = stack(blocks, 2).reshape(n, c * kernel[0] * kernel[1], ho * wo)
    return cols if len(x.shape) == 4 else cols.squeeze(0)
