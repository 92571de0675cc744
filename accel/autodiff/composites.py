"""Backwards for composite ops whose gradient is cheaper (or more exact) than their primitives'.

With one of these registered, ``Autodiff`` records a whole ``softmax`` or ``gelu`` as one node
instead of the five to eight primitives it is made of. Each takes ``(grad, out, *args, **kwargs)``
with the composite's own arguments (inner-device tensors) and returns one gradient per positional
argument.
"""
import ember
from ember import composite
from ember.shapes import dim as _dim

_SQRT1_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_SQRT_2_OVER_PI = 0.7978845608028654


def softmax_backward(g, y, x, dim=-1):
    d = _dim(dim, max(len(x.shape), 1), "softmax")
    if not x.shape:
        return (g * 0,)
    return (y * (g - (g * y).sum(d, keepdim=True)),)


def log_softmax_backward(g, y, x, dim=-1):
    d = _dim(dim, max(len(x.shape), 1), "log_softmax")
    if not x.shape:
        return (g * 0,)
    return (g - y.exp() * g.sum(d, keepdim=True),)


def gelu_backward(g, y, x, approximate="none"):
    xf = x if x.dtype.kind == "f" else x.float()
    if approximate == "tanh":
        inner = (xf + xf * xf * xf * 0.044715) * _SQRT_2_OVER_PI
        t = inner.tanh()
        dinner = (xf * xf * (3 * 0.044715) + 1) * _SQRT_2_OVER_PI
        grad = (t + 1) * 0.5 + xf * 0.5 * (1 - t * t) * dinner
    else:
        cdf = ((xf * _SQRT1_2).erf() + 1) * 0.5
        pdf = (xf * xf * -0.5).exp() * _INV_SQRT_2PI
        grad = cdf + xf * pdf
    return ((g * grad).to(x.dtype),)


def silu_backward(g, y, x):
    s = x.sigmoid()
    return (g * (s + x * s * (1 - s)),)


def binary_cross_entropy_backward(g, out, p, t, weight=None, reduction="mean"):
    """PyTorch's rule: (p - t) / max(p(1 - p), eps), finite even where p is exactly 0 or 1."""
    scale = g if reduction == "none" else g.expand(p.shape)
    if reduction == "mean":
        scale = scale / max(p.numel(), 1)
    denom = (p * (1 - p)).clamp(min=9.999999960041972e-13)  # float32(1e-12), as PyTorch uses
    gp = scale * (p - t) / denom
    gt = scale * ((1 - p).log().clamp(min=-100.0) - p.log().clamp(min=-100.0))
    if weight is not None:
        gp, gt = gp * weight, gt * weight
    return (gp, gt)


BUILT_IN = {
    "softmax": softmax_backward,
    "log_softmax": log_softmax_backward,
    "gelu": gelu_backward,
    "silu": silu_backward,
    "binary_cross_entropy": binary_cross_entropy_backward,
}


def register():
    composite.BACKWARDS.update(BUILT_IN)

