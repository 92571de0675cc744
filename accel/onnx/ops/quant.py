"""ONNX's quantized ops as ember compositions: integer products exact in float64, ONNX's rounding.

Quantize rounds half to even and saturates to the output type; the QLinear ops dequantize their
integer inputs (minus zero points), multiply exactly (int products below 2^53 stay exact in
float64), then requantize with ``a_scale * b_scale / y_scale``.
"""
import ember

from . import op
from .util import axis, onnx_dtype

_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1)}
_ONNX_RANGE = {4: (0, 65535), 5: (-32768, 32767)}  # uint16, int16: held in int32, saturated to their own range


def _along(t, x, a, block=0):
    """A per-axis (or, with ``block``, per-block) scale or zero point shaped to broadcast against
    ``x`` on axis ``a``."""
    if block:
        return t.repeat_interleave(block, dim=a).narrow(a, 0, x.shape[a])
    if t.dim() == 0 or t.numel() == 1 and x.dim() == 0:
        return t.reshape(())
    if t.dim() == 1 and t.numel() == 1:
        return t.reshape(())
    shape = [1] * x.dim()
    shape[a] = -1
    return t.reshape(*shape)


def _axis_of(n, x, scale):
    return axis(n.attr("axis", 1), x.dim(), n) if scale.numel() > 1 else 0


@op("QuantizeLinear", since=10, attrs="axis saturate block_size output_dtype precision")
def quantize_linear(n, x, scale, zp=None):
    if zp is not None:
        dtype = zp.dtype
    elif n.attr("output_dtype"):
        dtype = onnx_dtype(n.attr("output_dtype"), n)
    else:
        dtype = ember.uint8
    if dtype.name not in _RANGE:
        n.fail("expected an int8, uint8, int16, uint16 or int32 output, found %s" % dtype.name)
    onnx_type = n.input_types[2] if zp is not None and len(n.input_types) > 2 else n.attr("output_dtype")
    a, b = _axis_of(n, x, scale), n.attr("block_size", 0)
    xs = x.to(ember.float32)
    y = (xs / _along(scale, x, a, b).to(ember.float32)).round()
    if zp is not None:
        y = y + _along(zp, x, a, b).to(ember.float32)
    lo, hi = _ONNX_RANGE.get(onnx_type) or _RANGE[dtype.name]
    return y.clamp(lo, hi).to(dtype)


@op("DequantizeLinear", since=10, attrs="axis block_size output_dtype")
def dequantize_linear(n, x, scale, zp=None):
    a, b = _axis_of(n, x, scale), n.attr("block_size", 0)
    y = x.to(ember.float32)
    if zp is not None:
        y = y - _along(zp, x, a, b).to(ember.float32)
    return (y * _along(scale, x, a, b).to(ember.float32)).to(scale.dtype)


def _centered(q, zp, a=None):
    y = q.to(ember.float64)
    if zp is not None:
        y = y - (_along(zp, q, a).to(ember.float64) if a is not None else zp.to(ember.float64))
    return y


@op("MatMulInteger")
def matmul_integer(n, a, b, a_zp=None, b_zp=None):
    A = _centered(a, a_zp, a.dim() - 2 if a_zp is not None and a_zp.numel() > 1 else None)
    B = _centered(b, b_zp, b.dim() - 1 if b_zp is not None and b_zp.numel() > 1 else None)
    return ember.matmul(A, B).to(ember.int32)


def _conv_int(n, x, w, b=None):
    from .nn import conv
    return conv(n, x, w, b)


@op("ConvInteger", attrs="auto_pad dilations group kernel_shape pads strides")
def conv_integer(n, x, w, x_zp=None, w_zp=None):
    # padding the centered input with zeros is ONNX's padding with the zero point
    X = _centered(x, x_zp)
    W = _centered(w, w_zp, 0 if w_zp is not None and w_zp.numel() > 1 else None)
    return _conv_int(n, X, W).to(ember.int32)


@op("QLinearMatMul")
def qlinear_matmul(n, a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp):
    A = _centered(a, a_zp, a.dim() - 2 if a_zp.numel() > 1 else None)
    B = _centered(b, b_zp, b.dim() - 1 if b_zp.numel() > 1 else None)
    acc = ember.matmul(A, B)
    sa = _along(a_s, a, a.dim() - 2).to(ember.float64) if a_s.numel() > 1 else a_s.to(ember.float64).reshape(())
    sb = _along(b_s, b, b.dim() - 1).to(ember.float64) if b_s.numel() > 1 else b_s.to(ember.float64).reshape(())
    y = (acc * (sa * sb) / y_s.to(ember.float64).reshape(())).to(ember.float32).round() + \
        y_zp.to(ember.float32).reshape(())
    lo, hi = _RANGE[y_zp.dtype.name]
    return y.clamp(lo, hi).to(y_zp.dtype)


@op("QLinearConv", attrs="auto_pad dilations group kernel_shape pads strides")
def qlinear_conv(n, x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp, b=None):
    X = _centered(x, x_zp)
    W = _centered(w, w_zp, 0 if w_zp.numel() > 1 else None)
    acc = _conv_int(n, X, W)
    if b is not None:
        acc = acc + b.to(ember.float64).reshape(*([1, -1] + [1] * (x.dim() - 2)))
    sw = w_s.to(ember.float64).reshape(*([1, -1] + [1] * (x.dim() - 2))) if w_s.numel() > 1 else \
        w_s.to(ember.float64).reshape(())
    y = (acc * (x_s.to(ember.float64).reshape(()) * sw) / y_s.to(ember.float64).reshape(())).round() + \
        y_zp.to(ember.float64).reshape(())
    lo, hi = _RANGE[y_zp.dtype.name]
    return y.clamp(lo, hi).to(y_zp.dtype)


@op("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(n, x):
    lo = min(0.0, x.min().item())
    hi = max(0.0, x.max().item())
    scale = (hi - lo) / 255.0
    s = ember.tensor(scale, dtype=ember.float32, device=x.device)
    zp = min(max(round(-lo / scale), 0), 255) if scale else 0
    q = (x / s).round() + zp if scale else ember.zeros_like(x) + zp
    return (q.clamp(0, 255).to(ember.uint8), s,
            ember.tensor(zp, dtype=ember.uint8, device=x.device))
