"""The int8 arithmetic of ``ember.quant``: a contract a board runtime implements too, so both compute
the same numbers. Every float step is one IEEE float32 operation (ember's float32 tensor ops round
each result to float32 on every backend), never fused, never in a wider float:

- scale of a tensor: ``s = float32(max|v| / 127)``; 1.0 where max|v| is 0 (any scale maps 0 to 0)
- quantize: ``q = clamp(floor(float32(v / s) + 0.5), -127, 127)``: round half up (Python's ``round``
  rounds half to even, C's ``roundf`` half away from zero; floor of + 0.5 is the same everywhere),
  nan gives 0
- dequantize a layer's int32 sums: ``y[o] = float32(acc[o]) * float32(input_scale * weight_scale[o])
  + bias[o]``
- fake-quant an output: ``q_out * output_scale`` with q_out quantized as above

>>> s = scale_of(ember.tensor([0.5, -2.54]))     # 2.54 / 127
>>> quantize_values(ember.tensor([0.5, -2.54, 0.01]), s).tolist()
[25, -127, 1]
"""
from .. import dtypes

QMAX = 127
# the largest fan-in whose int32 sums cannot overflow: 127 * 127 * 133143 < 2^31 <= 127 * 127 * 133144
MAX_FAN_IN = 133143


def scale_from_max(max_abs):
    """float32 max|v| / 127, with 1.0 where that is 0 (a zero row or an all-zero activation)."""
    s = max_abs / QMAX
    return s.where(s > 0, 1.0)


def scale_of(t):
    """The per-tensor scale of ``t``: a float32 tensor of shape ``[]``."""
    return scale_from_max(t.to(dtypes.float32).abs().max())


def channel_scales(w):
    """Per-output-channel scales of a weight (dim 0 is the output channel): float32 ``[out]``."""
    flat = w.to(dtypes.float32).reshape(w.shape[0], -1).abs()
    return scale_from_max(flat.max(1).values)


def quantize_values(x, scale):
    """``x`` quantized with ``scale`` (a Python float, a ``[]`` tensor or one broadcasting against
    ``x``): an int8 tensor in [-127, 127]."""
    q = ((x.to(dtypes.float32) / scale) + 0.5).floor().clamp(-QMAX, QMAX)
    return q.to(dtypes.int8)


def quantize_weight(w):
    """``(q_w int8 in w's layout, scale float32 [out])``: symmetric per output channel."""
    scale = channel_scales(w)
    return quantize_values(w, along(scale, len(w.shape), 0)), scale


def dequantize(acc, input_scale, weight_scale, bias, channel_dim):
    """Float32 outputs from a layer's int32 sums ``acc``: channel ``o`` (along ``channel_dim``) is
    ``float32(acc) * float32(input_scale * weight_scale[o]) + bias[o]``."""
    nd = len(acc.shape)
    y = acc.to(dtypes.float32) * along(weight_scale * input_scale, nd, channel_dim)
    return y + along(bias, nd, channel_dim) if bias is not None else y


def along(per_channel, ndim, channel_dim):
    """A ``[C]`` tensor viewed to broadcast along dim ``channel_dim`` of an ``ndim``-dim tensor."""
    shape = [1] * ndim
    shape[channel_dim] = per_channel.shape[0]
    return per_channel.reshape(tuple(shape))


def fake_quant(y, scale):
    """``y`` rounded to the int8 grid of ``scale`` and back: what an int8 runtime passes on."""
    return quantize_values(y, scale).to(dtypes.float32) * scale


def bad_scale(t):
    """None when every value of the scale tensor ``t`` is finite and > 0, else the first bad value."""
    for v in t.flatten().tolist():
        if not 0 < v < float("inf"):
            return v
    return None
