"""``ember.quant``: post-training int8 quantization of Linear and Conv2d layers.

    qmodel = ember.quant.quantize(model)                          # int8 weights, float activations
    qmodel = ember.quant.quantize(model, calibration=batches)     # int8 weights and activations
    ember.quant.save(qmodel, "model-int8.safetensors")
    with ember.nn.init.skip():
        qmodel = ember.quant.load(Model(), "model-int8.safetensors")

Weights are int8 with one symmetric scale per output channel; activations (with calibration) one
static scale per tensor. The arithmetic (``arith``) and the record layout (``records``) are a
contract a board runtime implements too: docs/architecture.md, "Quantized records". On the C-backed
Cpu the int8 products run in ``ext_c/quant.c``; elsewhere they compose int32 primitives.
"""
from .arith import QMAX, channel_scales, dequantize, fake_quant, quantize_values, quantize_weight, scale_of
from .convert import quantize
from .kernels import int8_conv2d, int8_linear
from .layers import QuantConv2d, QuantLinear
from .records import load, save
