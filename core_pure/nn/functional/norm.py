"""Normalization: Lp, layer, RMS, group and batch norm."""
from ...composite import composite
from ...errors import ArgumentError, ShapeError
from ...shapes import dim as _dim
from ...tensor import Tensor
from .args import _down, _floating, _upcast


@composite
def normalize(x, p=2.0, dim=1, eps=1e-12):
    """x / max(‖x‖_p, eps) along ``dim`` (PyTorch's F.normalize)."""
    x = _floating(x, "normalize")
    if type(p) not in (int, float) or p <= 0:
        raise ArgumentError("normalize: p must be a number > 0, found %r" % (p,))
    d = _dim(dim, max(len(x.shape), 1), "normalize")
    xf, dtype = _upcast(x)
    a = xf.abs()
    if p == 2:
        norm = (xf * xf).sum(d, keepdim=True).sqrt()
    elif p == 1:
        norm = a.sum(d, keepdim=True)
    elif p == float("inf"):
        norm = a.max(d, keepdim=True).values
    else:
        norm = (a ** p).sum(d, keepdim=True) ** (1.0 / p)
    return _down(xf / norm.maximum(eps), dtype)


def _normalize(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * (var + eps).rsqrt()


@composite
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the last ``len(normalized_shape)`` dims, then scale and shift."""
    ns = (normalized_shape,) if type(normalized_shape) is int else tuple(normalized_shape)
    if tuple(x.shape[len(x.shape) - len(ns):]) != ns or len(ns) > len(x.shape):
        raise ShapeError("layer_norm: expected input ending in %s, found shape %s" % (ns, x.shape))
    x, dtype = _upcast(_floating(x, "layer_norm"))
    out = _normalize(x, tuple(range(len(x.shape) - len(ns), len(x.shape))), eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return _down(out, dtype)


@composite
def rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps) over the last dims (eps defaults to float32's machine epsilon)."""
    ns = (normalized_shape,) if type(normalized_shape) is int else tuple(normalized_shape)
    if tuple(x.shape[len(x.shape) - len(ns):]) != ns or len(ns) > len(x.shape):
        raise ShapeError("rms_norm: expected input ending in %s, found shape %s" % (ns, x.shape))
    x, dtype = _upcast(_floating(x, "rms_norm"))
    eps = 1.1920928955078125e-07 if eps is None else eps
    dims = tuple(range(len(x.shape) - len(ns), len(x.shape)))
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return _down(out * weight if weight is not None else out, dtype)


def _channel_view(t, ndim):
    return t.reshape((1, t.shape[0]) + (1,) * (ndim - 2))


@composite
def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize (N, C, ...) over groups of C/num_groups channels, then a per-channel affine."""
    if len(x.shape) < 2 or x.shape[1] % num_groups:
        raise ShapeError("group_norm: channels of shape %s must divide into %d groups" % (x.shape, num_groups))
    x, dtype = _upcast(_floating(x, "group_norm"))
    n = x.shape[0]
    grouped = x.reshape(n, num_groups, -1) if x.numel() else x.reshape(n, num_groups, 0)
    out = _normalize(grouped, (2,), eps).reshape(x.shape)
    if weight is not None:
        out = out * _channel_view(weight, len(x.shape))
    if bias is not None:
        out = out + _channel_view(bias, len(x.shape))
    return _down(out, dtype)


@composite
def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize (N, C, ...) per channel. Training uses batch statistics and updates the running
    ones in place (``running_mean[...] = ...``, unbiased variance), as PyTorch does."""
    x, dtype = _upcast(_floating(x, "batch_norm"))
    if len(x.shape) < 2:
        raise ShapeError("batch_norm: expected (N, C, ...), found shape %s" % (x.shape,))
    c = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and (type(t) is not Tensor or t.shape != (c,)):
            raise ShapeError("batch_norm: expected %s of shape (%d,) (the channels of input %s), found %s"
                             % (name, c, x.shape, t.shape if type(t) is Tensor else type(t).__name__))
    dims = (0,) + tuple(range(2, len(x.shape)))
    if training:
        count = x.numel() // c
        if count <= 1:
            raise ShapeError("batch_norm: training needs more than 1 value per channel, found shape %s" % (x.shape,))
        mean = x.mean(dims)
        var = x.var(dims, unbiased=False)
        if running_mean is not None:
            running_mean[...] = running_mean * (1 - momentum) + mean * momentum
        if running_var is not None:
            running_var[...] = running_var * (1 - momentum) + var * (momentum * count / (count - 1))
    else:
        if running_mean is None or running_var is None:
            raise ArgumentError("batch_norm: evaluation needs running_mean and running_var")
        mean, var = running_mean, running_var
    out = (x - _channel_view(mean, len(x.shape))) * _channel_view((var + eps).rsqrt(), len(x.shape))
    if weight is not None:
        out = out * _channel_view(weight, len(x.shape))
    if bias is not None:
        out = out + _channel_view(bias, len(x.shape))
    return _down(out, dtype)
