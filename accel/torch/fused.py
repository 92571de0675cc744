"""torch's own kernels for the composites a training step runs most: linear, relu, softmax,
log_softmax (``composite.register_fused``, as the C Cpu registers its fused paths). GELU keeps the
composite: torch's gives nan at +inf (ember's, like the formula, gives inf).

Each runs one torch call instead of the composite's several primitives; float16 and bfloat16 compute
in float32 inside torch and round once, as the composites do. Anything unusual (a dtype mix, a shape
the op refuses, ``dtype=``) goes to the composite, which checks and says what is wrong. Under
``Autodiff`` the forward is this, the backward ember's own (``accel/autodiff/composites.py``).
"""
import torch
import torch.nn.functional as TF

from ember.composite import COMPOSITES, register_fused
from ember.tensor import Tensor

from .device import Torch
from .linalg import precision


def _float_on_torch(x):
    return type(x) is Tensor and isinstance(x.device, Torch) and x.dtype.kind == "f" and x.shape != ()


def _linear(x, weight, bias=None):
    if _float_on_torch(x) and type(weight) is Tensor and weight.device == x.device and weight.dtype is x.dtype \
            and len(weight.shape) == 2 and x.shape[-1] == weight.shape[1] \
            and (bias is None or (type(bias) is Tensor and bias.device == x.device and bias.dtype is x.dtype
                                  and bias.shape == weight.shape[:1])):
        xd = x._data
        with precision(x.device.tf32 and xd.is_cuda and xd.dtype is torch.float32):
            out = TF.linear(xd, weight._data, None if bias is None else bias._data)
        return Tensor(out, x.shape[:-1] + weight.shape[:1], x.dtype, x.device)
    return COMPOSITES["linear"](x, weight, bias)


def _relu(x):
    if _float_on_torch(x):
        return Tensor(torch.relu(x._data), x.shape, x.dtype, x.device)
    return COMPOSITES["relu"](x)


def _softmax_dim(x, dim, dtype):
    if dtype is not None or not _float_on_torch(x) or type(dim) is not int:
        return None
    nd = len(x.shape)
    return dim + nd if -nd <= dim < 0 else dim if 0 <= dim < nd else None


def _softmax(x, dim=-1, dtype=None):
    d = _softmax_dim(x, dim, dtype)
    if d is None:
        return COMPOSITES["softmax"](x, dim, dtype)
    return Tensor(torch.softmax(x._data, d), x.shape, x.dtype, x.device)


def _log_softmax(x, dim=-1, dtype=None):
    d = _softmax_dim(x, dim, dtype)
    if d is None:
        return COMPOSITES["log_softmax"](x, dim, dtype)
    return Tensor(torch.log_softmax(x._data, d), x.shape, x.dtype, x.device)


register_fused(Torch, {"linear": _linear, "relu": _relu, "softmax": _softmax, "log_softmax": _log_softmax})
