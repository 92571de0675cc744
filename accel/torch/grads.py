"""The gradients of conv and pool through torch's own backward kernels (cuDNN on CUDA).

Autodiff's conv and pool rules call the composites ``conv_input_grad``, ``conv_weight_grad`` and
``pool_input_grad`` (accel/autodiff/rules.py); their bodies are a transposed conv, a conv with the
batch as channels and gather + scatter_add. On the Torch device these fused paths replace them with
``torch.ops.aten.convolution_backward`` and the pools' backward kernels: one call each, as PyTorch's
own autograd runs them. Asymmetric padding pads the input first (as the forward does) and crops the
gradient. Max pool over an input holding nan keeps the composite: torch sends a window's gradient to
its last nan, ember's rule (argmax's) to its first.
"""
import torch

from ember.composite import COMPOSITES, register_fused
from ember.tensor import Tensor

from . import checks
from .device import Torch
from .linalg import _pad_pairs, precision


def _on_torch(*ts):
    dt = ts[0].dtype
    for t in ts:
        if type(t) is not Tensor or not isinstance(t.device, Torch) or t.dtype is not dt:
            return False
    return dt.kind == "f"


def _geometry(padding):
    """(torch's symmetric padding, or None with the pads F.pad must add first)."""
    if all(p[0] == p[1] for p in padding):
        return [p[0] for p in padding], None
    return [0] * len(padding), _pad_pairs(padding)


def _padded_shape(shape, padding):
    return tuple(shape[:2]) + tuple(s + p[0] + p[1] for s, p in zip(shape[2:], padding))


def _crop(gp, padding, shape):
    index = [slice(None), slice(None)] + [slice(p[0], p[0] + s) for p, s in zip(padding, shape[2:])]
    return gp[tuple(index)]


def _shape_only(shape, like):
    """A tensor of ``shape`` whose values nobody reads (the backward kernels take an operand for its
    shape only): one element, expanded."""
    return torch.empty((1,) * len(shape), dtype=like.dtype, device=like.device).expand(shape)


def _backward(g, x, w, stride, pads, dilation, groups, mask, tf32):
    with precision(tf32 and g.dtype is torch.float32 and g.is_cuda, deterministic=g.is_cuda):
        return torch.ops.aten.convolution_backward(g, x, w, None, list(stride), pads, list(dilation), False,
                                                   [0] * len(stride), groups, mask)


def _conv_input_grad(g, weight, input_shape, stride, padding, dilation, groups):
    if not _on_torch(g, weight):
        return COMPOSITES["conv_input_grad"](g, weight, input_shape, stride, padding, dilation, groups)
    gd, wd = g._data, weight._data
    pads, pre = _geometry(padding)
    shape = tuple(input_shape) if pre is None else _padded_shape(input_shape, padding)
    x = _shape_only(shape, gd)
    gx = _backward(gd, x, wd, stride, pads, dilation, groups, [True, False, False], g.device.tf32)[0]
    if pre is not None:
        gx = _crop(gx, padding, tuple(input_shape))
    return Tensor(gx, tuple(input_shape), g.dtype, g.device)


def _conv_weight_grad(x, g, weight_shape, stride, padding, dilation, groups):
    if not _on_torch(x, g):
        return COMPOSITES["conv_weight_grad"](x, g, weight_shape, stride, padding, dilation, groups)
    xd, gd = x._data, g._data
    pads, pre = _geometry(padding)
    if pre is not None:
        xd = torch.nn.functional.pad(xd, pre)
    w = _shape_only(tuple(weight_shape), gd)
    gw = _backward(gd, xd, w, stride, pads, dilation, groups, [False, True, False], g.device.tf32)[1]
    return Tensor(gw, tuple(weight_shape), g.dtype, g.device)


def _pool_input_grad(g, x, op, kernel, stride, padding, dilation):
    if _on_torch(g, x):
        gx = _pool_grad(g._data, x._data, op, kernel, stride, padding, dilation)
        if gx is not None:
            return Tensor(gx, x.shape, x.dtype, x.device)
    return COMPOSITES["pool_input_grad"](g, x, op, kernel, stride, padding, dilation)


def _pool_grad(g, x, op, kernel, stride, padding, dilation):
    one_d = x.dim() == 3
    if one_d:
        x, g = x.unsqueeze(2), g.unsqueeze(2)
        kernel, stride = (1,) + tuple(kernel), (1,) + tuple(stride)
        dilation, padding = (1,) + tuple(dilation), ((0, 0),) + tuple(padding)
    kernel, stride, dilation = list(kernel), list(stride), list(dilation)
    if op == "max":
        if checks.any_true(torch.isnan(x)):
            return None
        xp = torch.nn.functional.pad(x, _pad_pairs(padding), value=float("-inf"))
        _, idx = torch.nn.functional.max_pool2d(xp, kernel, stride, 0, dilation, return_indices=True)
        gp = torch.ops.aten.max_pool2d_with_indices_backward(g, xp, kernel, stride, [0, 0], dilation, False, idx)
    else:
        if dilation != [1, 1]:
            return None
        xp = _shape_only(_padded_shape(tuple(x.shape), padding), x)
        gp = torch.ops.aten.avg_pool2d_backward(g, xp, kernel, stride, [0, 0], False, True, None)
    gx = _crop(gp, padding, tuple(x.shape))
    return gx.squeeze(2) if one_d else gx


register_fused(Torch, {"conv_input_grad": _conv_input_grad, "conv_weight_grad": _conv_weight_grad,
                       "pool_input_grad": _pool_input_grad})
