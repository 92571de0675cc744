"""The multiply-accumulate layers, ``Linear`` and ``Conv2d``, over int8 or float32 weights.

Constructing one allocates nothing: its tensors arrive from the record (``Module.load``), int8
with scales or float32. Arguments only training uses (``generator``, ``device``, ...) are
accepted and ignored, so a model definition written for ember runs here unchanged.

The arithmetic is the contract of docs/architecture.md ("Quantized records"), which the desktop's
``ember.quant`` computes too. Every output is ``y = acc * m[o] + bias[o]``, where ``acc`` sums input
x weight over the window (exact small integers when both are int8: no float and no big integer per
multiply) and ``m`` is stored as float32:

- int8 activations: the input is quantized with the layer's ``input_scale`` (an int8 input of
  another scale is re-quantized), ``m = input_scale * w_scale[o]``; with ``output_scale`` the layer
  passes on ``clamp(floor(y / output_scale + 0.5), -127, 127)``, else float ``y`` (the last layer);
- float activations, int8 weights (dequantized on the fly): ``m = w_scale[o]``; float weights: 1.
"""
from . import functional as F
from .functional import dequantize, q8, quantize
from .module import Module
from .tensor import ArgumentError, DeployError, ShapeError, empty, scratch

LISTS = False  # True: weight rows as lists (faster, ~5x their memory); the page sets it


def _coefficients(layer, out_channels):
    """(m, a, output scale or None) of this layer, computed once and kept on the layer."""
    if layer._coef is not None:
        return layer._coef
    ws, b, s_in = layer.weight_scale, layer.bias, layer.input_scale
    m, a = scratch("f", out_channels), scratch("f", out_channels)
    for o in range(out_channels):
        m[o] = (ws[o] if ws is not None else 1.0) * (s_in if s_in is not None else 1.0)
        a[o] = b[o] if b is not None else 0.0
    layer._coef = (m, a, layer.output_scale if s_in is not None else None)
    return layer._coef


def _inputs(layer, x):
    """The input as the layer computes with it: int8 of its ``input_scale`` when its activations
    are quantized, float32 otherwise."""
    s = layer.input_scale
    if s is None:
        return dequantize(x)
    if x.scale is None:
        return quantize(x, s)
    return x if x.scale == s else quantize(x, s, x.scale)


class _Affine(Module):
    """What Linear and Conv2d share: their record tensors (``TENSORS``) and cached coefficients.
    ``weight`` is a list of one array per output channel (int8 ``'b'`` or float32 ``'f'``)."""

    TENSORS = ("weight", "bias", "weight_scale", "input_scale", "output_scale")

    def _empty(self, bias):
        self.has_bias, self.int8 = bias, False
        self.weight = self.bias = self.weight_scale = self.input_scale = self.output_scale = None
        self.weight_at = None  # where each row starts in its buffer (None: each row its own array)
        self._coef = self._taps = self._rows = self._col = None


class Linear(_Affine):
    def __init__(self, in_features, out_features, bias=True, device=None, generator=None, dtype=None):
        self.in_features, self.out_features = in_features, out_features
        self._empty(bias)

    def weight_shape(self):
        return (self.out_features, self.in_features)

    def forward(self, x):
        return linear(self, x)


class Conv2d(_Affine):
    # ember.nn.Conv2d's order (device, generator after bias), then PyTorch's padding_mode
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, device=None, generator=None, padding_mode="zeros", dtype=None):
        op = "Conv2d"
        if padding_mode != "zeros":
            raise DeployError("Conv2d: padding_mode=%r is not in the deployment path" % (padding_mode,))
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ArgumentError("Conv2d: groups=%r must divide in_channels %d and out_channels %d"
                                % (groups, in_channels, out_channels))
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = F.pair(kernel_size, "kernel_size", op)
        self.stride = F.pair(stride, "stride", op)
        self.dilation = F.pair(dilation, "dilation", op)
        if padding == "valid":
            padding = 0
        elif padding == "same":
            padding = _same(self.kernel_size, self.dilation, self.stride)
        self.padding = F.pair(padding, "padding", op, 0)
        self._empty(bias)

    def weight_shape(self):
        return (self.out_channels, self.in_channels // self.groups) + self.kernel_size

    def forward(self, x):
        F.nchw(x, "Conv2d")
        return conv2d(self, x)


def _same(kernel, dilation, stride):
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        if total % 2:
            raise DeployError("Conv2d: padding='same' with an even kernel pads unevenly, which the deployment "
                              "path lacks")
        pads.append(total // 2)
    if stride != (1, 1):
        raise ArgumentError("Conv2d: padding='same' needs stride 1, found %s" % (stride,))
    return tuple(pads)


def conv2d(layer, x):
    n, c, h, w = x.shape
    if c != layer.in_channels:
        raise ShapeError("Conv2d: expected %d input channels, found input of shape %s" % (layer.in_channels, x.shape))
    x = _inputs(layer, x)
    kh, kw = layer.kernel_size
    sh, sw = layer.stride
    ph, pw = layer.padding
    dh, dw = layer.dilation
    if ph or pw:
        x = _pad(x, ph, pw)
        h, w = h + 2 * ph, w + 2 * pw
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise ShapeError("Conv2d: input of shape %s is smaller than the kernel %s" % (x.shape, layer.kernel_size))
    oc, groups = layer.out_channels, layer.groups
    cin, cout = c // groups, oc // groups
    m, a, s_out = _coefficients(layer, oc)
    taps = _taps(layer, cin, kh, kw, dh, dw, h, w)
    out = empty("f" if s_out is None else "b", (n, oc, oh, ow), (x,), s_out)
    src, dst, plane = x.data, out.data, oh * ow
    wt, at = _rows(layer)
    col, nz = _col(layer, x, len(taps))
    # each window is gathered once (im2col) into col, then every output channel of its group reads it
    for img in range(n):
        for g in range(groups):
            x0, o0 = (img * c + g * cin) * h * w, g * cout
            for oy in range(oh):
                row = x0 + oy * sh * w
                for ox in range(ow):
                    base, t, z = row + ox * sw, 0, 0
                    for d in taps:
                        v = col[t] = src[base + d]
                        if v:  # a zero (ReLU's, the padding's) adds nothing: skipped
                            nz[z] = t
                            z += 1
                        t += 1
                    taken = nz[:z]
                    i = (img * oc + o0) * plane + oy * ow + ox
                    for o in range(o0, o0 + cout):
                        wr, w0, acc = wt[o], at[o] if at else 0, 0
                        for j in taken:
                            acc += col[j] * wr[w0 + j]
                        v = acc * m[o] + a[o]
                        dst[i] = v if s_out is None else q8(v / s_out + 0.5)
                        i += plane
    return out


def linear(layer, x):
    f_in, f_out = layer.in_features, layer.out_features
    if not x.shape or x.shape[-1] != f_in:
        raise ShapeError("Linear: expected inputs with last dim %d, found shape %s" % (f_in, x.shape))
    x = _inputs(layer, x)
    m, a, s_out = _coefficients(layer, f_out)
    out = empty("f" if s_out is None else "b", x.shape[:-1] + (f_out,), (x,), s_out)
    src, dst, i = x.data, out.data, 0
    wt, at = _rows(layer)
    for x0 in range(0, len(src), f_in):
        col = src[x0:x0 + f_in]
        if x.scale is None:
            col = list(col)  # each float boxed once, not once per output
        for o in range(f_out):
            wr, j, acc = wt[o], at[o] if at else 0, 0
            for v in col:
                acc += v * wr[j]
                j += 1
            v = acc * m[o] + a[o]
            dst[i] = v if s_out is None else q8(v / s_out + 0.5)
            i += 1
    return out


def _rows(layer):
    """(weight rows, row starts or None): the record's arrays, or with ``LISTS`` (a page, where
    memory is plentiful) each row once as a list, whose values are read without boxing a float."""
    if not LISTS:
        return layer.weight, layer.weight_at
    r, wt = layer._rows, layer.weight
    if r is None or r[0] is not wt:  # kept while the layer keeps its weight
        at, k = layer.weight_at, 1
        for d in layer.weight_shape()[1:]:
            k *= d
        r = layer._rows = (wt, [[wt[o][(at[o] if at else 0) + t] for t in range(k)] for o in range(len(wt))])
    return r[1], None


def _col(layer, x, k):
    """The layer's window buffer (a list for float inputs: each value is boxed once; int8 ones an
    array) and where its non-zero values are; both sizes are the layer's own, so made once."""
    c = layer._col
    if c is None:
        c = layer._col = ([0.0] * k if x.scale is None else scratch("b", k), memoryview(scratch("H", k)))
    return c


def _taps(layer, cin, kh, kw, dh, dw, h, w):
    """The offset of each weight's input element from the window's corner, kept per input size."""
    key = layer._taps
    if key is not None and key[0] == h and key[1] == w:
        return key[2]
    taps = scratch("i", cin * kh * kw)
    t = 0
    for ci in range(cin):
        for ky in range(kh):
            for kx in range(kw):
                taps[t] = (ci * h + ky * dh) * w + kx * dw
                t += 1
    layer._taps = (h, w, taps)
    return taps


def _pad(x, ph, pw):
    """A zero-padded copy (zero is the same in int8, whatever the scale)."""
    n, c, h, w = x.shape
    hp, wp = h + 2 * ph, w + 2 * pw
    quant = x.scale is not None
    out = empty("b" if quant else "f", (n, c, hp, wp), (x,), x.scale)
    src, dst, zero = x.data, out.data, 0 if quant else 0.0
    for i in range(len(dst)):
        dst[i] = zero
    for plane in range(n * c):
        for y in range(h):
            s0, d0 = (plane * h + y) * w, (plane * hp + y + ph) * wp + pw
            dst[d0:d0 + w] = src[s0:s0 + w]
    return out
