"""Quantized layers: ``QuantLinear`` and ``QuantConv2d``, int8 weights with per-output-channel scales.

Each holds ``weight`` (int8, PyTorch's layout), ``bias`` (float32 or None), ``weight_scale``
(float32 ``[out]``), and optionally ``input_scale`` and ``output_scale`` (float32 ``[]``):

- without ``input_scale`` (weights only): ``y[o] = weight_scale[o] * (x . q_w[o]) + bias[o]`` in
  float32; the int8 weight is widened for the product and not kept (dequantize on the fly);
- with ``input_scale``: the input is quantized, multiplied in int8 with int32 sums and dequantized
  (``arith.dequantize``); with ``output_scale`` too, the result is rounded to the int8 grid and back
  (fake-quant: the float32 values an int8 runtime computes).

Inputs of any float dtype are computed in float32 and give float32: the arithmetic is a float32
contract (``arith``). ``ember.quant.quantize`` builds these from float layers; ``ember.quant.load``
from a record.
"""
from .. import dtypes
from ..creation import full, zeros
from ..errors import ArgumentError
from ..nn import checks
from ..nn.functional.conv import _conv_padding, conv2d
from ..nn.module import Module, Param
from . import arith, kernels

f32 = dtypes.float32


class _Quantized(Module):
    NAME = ""

    def _init_tensors(self, weight_shape, bias, activations, output, device):
        fan_in = 1
        for d in weight_shape[1:]:
            fan_in *= d
        if fan_in > arith.MAX_FAN_IN:
            raise ArgumentError("%s: a fan-in of %d could overflow int32 sums (at most %d)"
                                % (self.NAME, fan_in, arith.MAX_FAN_IN))
        out = weight_shape[0]
        self.weight = Param(zeros(weight_shape, dtype=dtypes.int8, device=device), requires_grad=False)
        self.bias = Param(zeros(out, device=device), requires_grad=False) if bias else None
        self.weight_scale = full((out,), 1.0, f32, device)
        self.input_scale = full((), 1.0, f32, device) if activations else None
        self.output_scale = full((), 1.0, f32, device) if output else None

    def set_quantized(self, float_weight, float_bias, input_scale=None, output_scale=None):
        """Quantize ``float_weight`` per output channel into this layer; keep ``float_bias`` as
        float32; set the activation scales (float32 ``[]`` tensors or None as the layer was built)."""
        q, scale = arith.quantize_weight(float_weight)
        self.weight = q.to(self.weight.device)
        self.weight_scale = scale.to(self.weight.device)
        if float_bias is not None:
            self.bias = float_bias.to(f32)
        for name, value in (("input_scale", input_scale), ("output_scale", output_scale)):
            if (value is None) != (getattr(self, name) is None):
                raise ArgumentError("%s.set_quantized: %s is %s, the layer was built %s one"
                                    % (self.NAME, name, "None" if value is None else "given",
                                       "with" if value is None else "without"))
            if value is not None:
                setattr(self, name, value.to(f32).reshape(()))
        return self

    @property
    def activations(self):
        """True when inputs are quantized too (the layer has an ``input_scale``)."""
        return self.input_scale is not None

    def _finish(self, acc_or_product, channel_dim):
        if self.input_scale is None:
            nd = len(acc_or_product.shape)
            y = acc_or_product * arith.along(self.weight_scale, nd, channel_dim)
            return y + arith.along(self.bias, nd, channel_dim) if self.bias is not None else y
        y = arith.dequantize(acc_or_product, self.input_scale, self.weight_scale, self.bias, channel_dim)
        return arith.fake_quant(y, self.output_scale) if self.output_scale is not None else y

    def _input(self, x):
        x = x.to(f32) if x.dtype is not f32 else x
        return x if self.input_scale is None else arith.quantize_values(x, self.input_scale)

    def _extra(self):
        return "weights=int8, activations=%s%s" % ("int8" if self.activations else "float",
                                                    ", output=int8" if self.output_scale is not None else "")


class QuantLinear(_Quantized):
    """``Linear`` with int8 weights; see the module doc for the arithmetic.

    >>> q = QuantLinear.from_float(Linear(784, 128))           # weights only
    >>> q(ember.randn(4, 784)).shape
    (4, 128)
    """

    NAME = "QuantLinear"

    def __init__(self, in_features, out_features, bias=True, activations=False, output=False, device=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self._init_tensors((out_features, in_features), bias, activations, output, device)

    @classmethod
    def from_float(cls, layer, input_scale=None, output_scale=None):
        """The quantized twin of a ``Linear`` (its values are not changed)."""
        q = cls(layer.in_features, layer.out_features, layer.bias is not None, input_scale is not None,
                output_scale is not None, layer.weight.device)
        return q.set_quantized(layer.weight, layer.bias, input_scale, output_scale)

    def forward(self, x):
        checks.features(x, self.NAME, self.in_features, "in_features")
        x = self._input(x)
        if self.input_scale is None:
            product = x @ self.weight.to(f32).T
        else:
            product = kernels.int8_linear(x, self.weight)
        return self._finish(product, len(product.shape) - 1)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s, %s" % (
            self.in_features, self.out_features, self.bias is not None, self._extra())


def _pair(v):
    return (v, v) if type(v) is int else tuple(v)


class QuantConv2d(_Quantized):
    """``Conv2d`` with int8 weights (stride, padding, dilation and groups as Conv2d takes them).

    >>> q = QuantConv2d.from_float(Conv2d(1, 6, 5))
    >>> q(ember.randn(2, 1, 28, 28)).shape
    (2, 6, 24, 24)
    """

    NAME = "QuantConv2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, activations=False, output=False, device=None):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ArgumentError("%s: in_channels %d and out_channels %d must both divide by groups=%d"
                                % (self.NAME, in_channels, out_channels, groups))
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = padding if type(padding) is str else _pair(padding)
        self.dilation = _pair(dilation)
        self.groups = groups
        self._pads = _conv_padding(self.padding, 2, self.kernel_size, self.dilation, self.stride, self.NAME)
        self._init_tensors((out_channels, in_channels // groups) + self.kernel_size, bias, activations, output,
                           device)

    @classmethod
    def from_float(cls, layer, input_scale=None, output_scale=None):
        """The quantized twin of a ``Conv2d`` (its values are not changed)."""
        q = cls(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride, layer.padding,
                layer.dilation, layer.groups, layer.bias is not None, input_scale is not None,
                output_scale is not None, layer.weight.device)
        return q.set_quantized(layer.weight, layer.bias, input_scale, output_scale)

    def forward(self, x):
        checks.ndim(x, self.NAME, (3, 4), "(N, C, H, W) or (C, H, W)")
        batched = x if len(x.shape) == 4 else x.unsqueeze(0)
        checks.size_at(batched, self.NAME, 1, self.in_channels, "in_channels")
        q = self._input(batched)
        if self.input_scale is None:
            product = conv2d(q, self.weight.to(f32), None, self.stride, self.padding, self.dilation,
                             self.groups)
        else:
            product = kernels.int8_conv2d(q, self.weight, self.stride, self._pads, self.dilation, self.groups)
        y = self._finish(product, 1)
        return y if batched is x else y.squeeze(0)

    def extra_repr(self):
        s = "%d, %d, kernel_size=%s, stride=%s" % (self.in_channels, self.out_channels, self.kernel_size,
                                                   self.stride)
        if self.padding != (0, 0):
            s += ", padding=%r" % (self.padding,)
        if self.dilation != (1, 1):
            s += ", dilation=%s" % (self.dilation,)
        if self.groups != 1:
            s += ", groups=%d" % self.groups
        if self.bias is None:
            s += ", bias=False"
        return s + ", " + self._extra()
