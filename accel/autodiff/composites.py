"""Backwards for composite ops whose gradient is cheaper (or more exact) than their primitives'.

With one of these registered, ``Autodiff`` records a whole ``softmax`` or ``gelu`` as one node
instead of the five to eight primitives it is made of. Each takes ``(grad, out, *args, **kwargs)``
with the composite's own arguments (inner-device tensors) and returns one gradient per positional
argument.
"""
import ember
import ember.nn.functional as F
from ember import composite
from ember.shapes import dim as _dim

_SQRT1_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_SQRT_2_OVER_PI = 0.7978845608028654


def softmax_backward(g, y, x, dim=-1, dtype=None):
    d = _dim(dim, max(len(x.shape), 1), "softmax")
    if not x.shape:
        return ((g * 0).to(x.dtype),)
    gx = y * (g - (g * y).sum(d, keepdim=True))
    return (gx if dtype is None else gx.to(x.dtype),)


def log_softmax_backward(g, y, x, dim=-1, dtype=None):
    d = _dim(dim, max(len(x.shape), 1), "log_softmax")
    if not x.shape:
        return ((g * 0).to(x.dtype),)
    gx = g - y.exp() * g.sum(d, keepdim=True)
    return (gx if dtype is None else gx.to(x.dtype),)


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


def relu_backward(g, y, x):
    # y = relu(x) is >= 0, so sign(y) is the 0/1 mask without building a bool tensor
    return (g * y.sign(),)


def silu_backward(g, y, x):
    s = x.sigmoid()
    return (g * (s + x * s * (1 - s)),)


def softplus_backward(g, y, x, beta=1.0, threshold=20.0):
    """sigmoid(beta·x) where the softplus is computed, 1 where it is linear (beta·x > threshold)."""
    xf = x if x.dtype.kind == "f" else x.float()
    bx = xf * beta
    return ((g * bx.sigmoid().where(bx <= threshold, 1.0)).to(x.dtype),)


def hardtanh_backward(g, y, x, min_val=-1.0, max_val=1.0):
    """1 strictly inside (min_val, max_val), 0 outside and at the bounds, as PyTorch gives."""
    return ((g * ((x > min_val) & (x < max_val)).to(g.dtype)).to(x.dtype),)


def relu6_backward(g, y, x):
    return hardtanh_backward(g, y, x, 0.0, 6.0)


def logsigmoid_backward(g, y, x):
    """d/dx log(sigmoid(x)) = sigmoid(-x): 1/2 at 0, where the composite's min(x, 0) would pick a side."""
    return ((g * (-_f(x)).sigmoid()).to(x.dtype),)


def _float_grad(g, x, slope):
    """g · slope as a gradient of ``x`` (its dtype; None for an integer input, which takes none)."""
    if not isinstance(x, ember.Tensor) or x.dtype.kind != "f":
        return None
    return _sum_to(g * slope, x.shape).to(x.dtype)


def _sum_to(g, shape):
    """``g`` summed over the dims broadcasting added to a tensor of ``shape``."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return g.sum(dims, keepdim=True).reshape(shape) if dims else g.reshape(shape)


def _f(x):
    return x if x.dtype.kind == "f" and x.dtype.bits >= 32 else x.float()


def asinh_backward(g, y, x):
    xf = _f(x)
    return (_float_grad(g, x, (xf * xf + 1).rsqrt()),)


def acosh_backward(g, y, x):
    xf = _f(x)
    return (_float_grad(g, x, ((xf - 1) * (xf + 1)).rsqrt()),)


def atanh_backward(g, y, x):
    xf = _f(x)
    return (_float_grad(g, x, 1 / ((1 - xf) * (1 + xf))),)


def _pair(a, b):
    fa = _f(a) if isinstance(a, ember.Tensor) else a
    fb = _f(b) if isinstance(b, ember.Tensor) else b
    return fa, fb


def logaddexp_backward(g, y, a, b):
    """d/da log(e^a + e^b) = sigmoid(a - b): 1/2 each at a tie, as PyTorch gives."""
    fa, fb = _pair(a, b)
    s = (fa - fb).sigmoid() if isinstance(fa, ember.Tensor) else (-(fb - fa)).sigmoid()
    return (_float_grad(g, a, s), _float_grad(g, b, 1 - s))


def logaddexp2_backward(g, y, a, b):
    fa, fb = _pair(a, b)
    d = (fa - fb) if isinstance(fa, ember.Tensor) else -(fb - fa)
    s = (d * 0.6931471805599453).sigmoid()
    return (_float_grad(g, a, s), _float_grad(g, b, 1 - s))


def copysign_backward(g, y, a, b):
    """d/da copysign(a, b) = sign(a) · sign(result) (0 at a = 0); b gets zeros, as PyTorch gives."""
    fa, fb = _pair(a, b)
    ga = _float_grad(g, a, fa.sign() * _f(y).sign())
    gb = _float_grad(g, b, 0.0) if isinstance(b, ember.Tensor) else None
    return (ga, gb)


def fmod_backward(g, y, a, b):
    """d/da fmod(a, b) = 1, d/db = -trunc(a / b), as PyTorch gives."""
    fa, fb = _pair(a, b)
    return (_float_grad(g, a, 1.0), _float_grad(g, b, -(fa / fb).trunc()) if isinstance(b, ember.Tensor) else None)


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


def cross_entropy_backward(g, out, x, target, weight=None, ignore_index=-100, reduction="mean",
                           label_smoothing=0.0):
    """d/dx of -sum_c a_c log softmax(x)_c is (sum_c a_c) softmax(x) - a, where ``a`` is each
    sample's target distribution scaled by the class weights and the label smoothing."""
    if target.dtype.kind != "f":
        return (cross_entropy_input_grad(g, x, target, weight, ignore_index, reduction, label_smoothing), None)
    cdim = 1 if len(x.shape) > 1 else 0
    c = x.shape[cdim]
    logp = F.log_softmax(x, cdim)
    wvec = _class_vector(weight, x, cdim)
    eps = label_smoothing
    a = target * (1 - eps) + eps / c if eps else target  # class probabilities
    if wvec is not None:
        a = a * wvec
    scale = _loss_scale(g, reduction, cdim, max(x.numel() // c, 1))  # the mean is over the loss's elements
    gx = (a.sum(cdim, keepdim=True) * logp.exp() - a) * scale
    gt = -logp * (1 - eps) * scale
    return (gx, gt * wvec if wvec is not None else gt)


@composite.composite
def cross_entropy_input_grad(g, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """The gradient for the logits ``x`` of ``cross_entropy(x, target, ...)`` with class indices
    ``target``, given the loss's ``g``. A backend replaces it through the override hook (the Torch
    device: torch's nll-loss and log-softmax backward kernels, ``accel/torch/loss.py``)."""
    cdim = 1 if len(x.shape) > 1 else 0
    c = x.shape[cdim]
    logp = F.log_softmax(x, cdim)
    wvec = _class_vector(weight, x, cdim)
    eps = label_smoothing
    keep = target != ignore_index
    safe = target.where(keep, 0)
    w = keep.to(x.dtype)
    if weight is not None:
        w = w * weight.index_select(0, safe.reshape(-1)).reshape(target.shape)
    zeros = ember.zeros(x.shape, dtype=x.dtype, device=x.device)
    a = zeros.scatter(cdim, safe.unsqueeze(cdim), (w * (1 - eps)).unsqueeze(cdim))
    if eps:
        spread = keep.to(x.dtype).unsqueeze(cdim) * (eps / c)
        a = a + (spread * wvec if wvec is not None else spread)
    scale = _loss_scale(g, reduction, cdim, w.sum())  # the mean divides by the kept targets' total weight
    return (a.sum(cdim, keepdim=True) * logp.exp() - a) * scale


def _class_vector(weight, x, cdim):
    """The class weights shaped to broadcast along the class dim of ``x``, or None."""
    if weight is None:
        return None
    return weight.reshape((x.shape[cdim],) + (1,) * (len(x.shape) - cdim - 1))


def _loss_scale(g, reduction, cdim, count):
    if reduction == "none":
        return g.unsqueeze(cdim)
    if reduction == "sum":
        return g
    return g / count


def bce_with_logits_backward(g, out, x, t, weight=None, reduction="mean", pos_weight=None):
    """d/dx of (1-t)x + (1+(pw-1)t) softplus(-x) is (1-t) + (1+(pw-1)t)(sigmoid(x) - 1): exact at
    x = 0, where the composite's max(-x, 0) would have to pick a side."""
    scale = g if reduction == "none" else g.expand(x.shape)
    if reduction == "mean":
        scale = scale / max(x.numel(), 1)
    s = x.sigmoid()
    if pos_weight is None:
        gx = s - t
        gt = -x
    else:
        gx = (1 - t) + (1 + (pos_weight - 1) * t) * (s - 1)
        sp = (-x).maximum(0) + (-(x.abs())).exp().log1p()
        gt = -x + (pos_weight - 1) * sp
    if weight is not None:
        gx, gt = gx * weight, gt * weight
    return (gx * scale, gt * scale)


def linear_backward(g, out, x, weight, bias=None):
    """y = x Wᵀ + b: dx = g W, dW = gᵀ x, db = the sum of g over the batch dims."""
    if not _plain_linear(x, weight, bias):
        return _recomputed("linear", g, (x, weight, bias))
    outf, inf = weight.shape
    g2 = g.reshape(-1, outf)
    gw = g2.T @ x.reshape(-1, inf)
    return (g @ weight, gw, g2.sum(0) if bias is not None else None)


def _plain_linear(x, weight, bias):
    dt = x.dtype
    return (dt.kind == "f" and weight.dtype is dt and len(weight.shape) == 2 and len(x.shape) >= 1
            and (bias is None or (bias.dtype is dt and bias.shape == (weight.shape[0],))))


def layer_norm_backward(g, out, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """With x̂ = (x - mean) · rstd over the normalized dims and ĝ = g · w:
    dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂)), dw = Σ g · x̂, db = Σ g over the other dims."""
    ns = (normalized_shape,) if type(normalized_shape) is int else tuple(normalized_shape)
    dt = x.dtype
    if dt not in (ember.float32, ember.float64) or any(p is not None and (p.dtype is not dt or p.shape != ns)
                                                        for p in (weight, bias)):
        return _recomputed("layer_norm", g, (x, normalized_shape, weight, bias, eps))
    dims = tuple(range(len(x.shape) - len(ns), len(x.shape)))
    outer = tuple(range(len(x.shape) - len(ns)))
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = centered * rstd
    gh = g * weight if weight is not None else g
    gx = rstd * (gh - gh.mean(dims, keepdim=True) - xhat * (gh * xhat).mean(dims, keepdim=True))
    gw = (g * xhat).sum(outer) if weight is not None and outer else (g * xhat if weight is not None else None)
    gb = (g.sum(outer) if outer else g) if bias is not None else None
    return (gx, None, gw, gb, None)


def _recomputed(name, g, args):
    """The gradients of composite ``name`` at ``args`` by recording its body once more (the general case)."""
    from .device import Autodiff
    from .graph import grad_mode

    dev = Autodiff(g.device)
    leaves = [a.to(dev).requires_grad_() if isinstance(a, ember.Tensor) and a.dtype.kind == "f" else
              (a.to(dev) if isinstance(a, ember.Tensor) else a) for a in args]
    previous = grad_mode.enabled
    grad_mode.enabled = True
    try:
        grads = composite.COMPOSITES[name](*leaves).backward(g)
    finally:
        grad_mode.enabled = previous
    return tuple(grads.get(t) if isinstance(t, ember.Tensor) and t.requires_grad else None for t in leaves)


BUILT_IN = {
    "linear": linear_backward,
    "layer_norm": layer_norm_backward,
    "softmax": softmax_backward,
    "log_softmax": log_softmax_backward,
    "gelu": gelu_backward,
    "silu": silu_backward,
    "relu": relu_backward,
    "softplus": softplus_backward,
    "hardtanh": hardtanh_backward,
    "relu6": relu6_backward,
    "logsigmoid": logsigmoid_backward,
    "asinh": asinh_backward,
    "acosh": acosh_backward,
    "atanh": atanh_backward,
    "logaddexp": logaddexp_backward,
    "logaddexp2": logaddexp2_backward,
    "fmod": fmod_backward,
    "copysign": copysign_backward,
    "binary_cross_entropy": binary_cross_entropy_backward,
    "binary_cross_entropy_with_logits": bce_with_logits_backward,
    "cross_entropy": cross_entropy_backward,
}


def register():
    composite.BACKWARDS.update(BUILT_IN)

