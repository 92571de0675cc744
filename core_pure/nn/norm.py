"""Normalization layers: BatchNorm1d/2d, LayerNorm, GroupNorm, RMSNorm, with PyTorch's parameter
and buffer names (``weight``, ``bias``, ``running_mean``, ``running_var``, ``num_batches_tracked``)."""
from .. import dtypes
from ..creation import full
from ..errors import ArgumentError, ShapeError
from . import checks
from . import functional as F
from . import init
from .config import REQUIRED, Config
from .module import Module, Param


class _BatchNorm(Module):
    NAME = ""
    NDIMS = ()
    LAYOUT = ""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None):
        super().__init__()
        self.num_features = checks.count(num_features, self.NAME, "num_features", 1)
        if type(eps) not in (int, float) or not eps > 0:
            raise ArgumentError("%s: expected eps > 0, found %r" % (self.NAME, eps))
        if momentum is not None and (type(momentum) not in (int, float) or not 0 <= momentum <= 1):
            raise ArgumentError("%s: expected momentum in [0, 1] or None, found %r" % (self.NAME, momentum))
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Param(init.ones((num_features,), device))
            self.bias = Param(init.zeros((num_features,), device))
        if track_running_stats:
            self.running_mean = init.zeros((num_features,), device)
            self.running_var = init.ones((num_features,), device)
            self.num_batches_tracked = full((), 0, dtypes.int64, device)

    def forward(self, x):
        checks.ndim(x, self.NAME, self.NDIMS, self.LAYOUT)
        checks.size_at(x, self.NAME, 1, self.num_features, "num_features")
        weight = self.weight if self.affine else None
        bias = self.bias if self.affine else None
        if not self.training and self.track_running_stats:
            return F.batch_norm(x, self.running_mean, self.running_var, weight, bias, False, 0.0, self.eps)
        out = F.batch_norm(x, None, None, weight, bias, True, 0.0, self.eps)
        if self.training and self.track_running_stats:
            self._update_running_stats(x)
        return out

    def _update_running_stats(self, x):
        # new buffer values by assignment (PyTorch updates them in place): a fork's update never
        # reaches the module it was forked from
        self.num_batches_tracked = self.num_batches_tracked + 1
        momentum = self.momentum
        if momentum is None:  # a cumulative average, as in PyTorch
            momentum = 1.0 / self.num_batches_tracked.item()
        x = x if x.dtype.kind == "f" else x.float()
        dims = (0,) + tuple(range(2, len(x.shape)))
        count = x.numel() // self.num_features
        mean = x.mean(dims)
        var = x.var(dims, unbiased=False) * (count / (count - 1))  # the running variance is unbiased
        self.running_mean = self.running_mean * (1 - momentum) + mean * momentum
        self.running_var = self.running_var * (1 - momentum) + var * momentum

    def extra_repr(self):
        return "%d, eps=%r, momentum=%r, affine=%s, track_running_stats=%s" % (
            self.num_features, self.eps, self.momentum, self.affine, self.track_running_stats)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) per channel C."""

    NAME = "BatchNorm1d"
    NDIMS = (2, 3)
    LAYOUT = "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) per channel C: batch statistics in training (updating
    the running ones), running statistics in eval mode."""

    NAME = "BatchNorm2d"
    NDIMS = (4,)
    LAYOUT = "(N, C, H, W)"


def _shape(normalized_shape):
    return (normalized_shape,) if type(normalized_shape) is int else tuple(normalized_shape)


def _check_trailing(x, op, shape):
    checks.tensor(x, op)
    if len(x.shape) < len(shape) or tuple(x.shape[len(x.shape) - len(shape):]) != shape:
        raise ShapeError("%s: expected input ending in %s, found shape %s" % (op, shape, x.shape))


class LayerNorm(Module):
    """Normalization over the last dims ``normalized_shape``, then ``weight`` (ones) and ``bias``
    (zeros)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Param(init.ones(self.normalized_shape, device))
            self.bias = Param(init.zeros(self.normalized_shape, device)) if bias else None

    def forward(self, x):
        _check_trailing(x, "LayerNorm", self.normalized_shape)
        affine = self.elementwise_affine
        return F.layer_norm(x, self.normalized_shape, self.weight if affine else None,
                            self.bias if affine else None, self.eps)

    def extra_repr(self):
        return "%s, eps=%r, elementwise_affine=%s" % (self.normalized_shape, self.eps, self.elementwise_affine)


class GroupNorm(Module):
    """Normalization of (N, C, ...) over ``num_groups`` groups of channels, then a per-channel
    ``weight`` (ones) and ``bias`` (zeros)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None):
        super().__init__()
        checks.count(num_groups, "GroupNorm", "num_groups", 1)
        checks.count(num_channels, "GroupNorm", "num_channels", 1)
        if num_channels % num_groups:
            raise ArgumentError("GroupNorm: num_channels %d must divide by num_groups %d" % (num_channels, num_groups))
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Param(init.ones((num_channels,), device))
            self.bias = Param(init.zeros((num_channels,), device))

    def forward(self, x):
        checks.tensor(x, "GroupNorm")
        if len(x.shape) < 2:
            raise ShapeError("GroupNorm: expected input of shape (N, C, ...), found %s" % (x.shape,))
        checks.size_at(x, "GroupNorm", 1, self.num_channels, "num_channels")
        return F.group_norm(x, self.num_groups, self.weight if self.affine else None,
                            self.bias if self.affine else None, self.eps)

    def extra_repr(self):
        return "%d, %d, eps=%r, affine=%s" % (self.num_groups, self.num_channels, self.eps, self.affine)


class RMSNorm(Module):
    """x / √(mean(x²) + eps) over the last dims, times ``weight`` (ones). ``eps=None`` is float32's
    machine epsilon, as in PyTorch."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Param(init.ones(self.normalized_shape, device))

    def forward(self, x):
        _check_trailing(x, "RMSNorm", self.normalized_shape)
        return F.rms_norm(x, self.normalized_shape, self.weight if self.elementwise_affine else None, self.eps)

    def extra_repr(self):
        return "%s, eps=%r, elementwise_affine=%s" % (self.normalized_shape, self.eps, self.elementwise_affine)


_BN_FIELDS = (("num_features", REQUIRED, "int>0"), ("eps", 1e-5, "float>0"), ("momentum", 0.1, "prob?"),
              ("affine", True, "bool"), ("track_running_stats", True, "bool"))


class _NormConfig(Config):
    def build(self, device, generator):
        return self.MODULE(*self.values(), device=device)


class BatchNorm1dConfig(_NormConfig):
    """Builds ``BatchNorm1d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)``."""

    FIELDS = _BN_FIELDS
    MODULE = BatchNorm1d


class BatchNorm2dConfig(_NormConfig):
    """Builds ``BatchNorm2d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)``."""

    FIELDS = _BN_FIELDS
    MODULE = BatchNorm2d


class LayerNormConfig(_NormConfig):
    """Builds ``LayerNorm(d_model, eps, elementwise_affine, bias)``."""

    FIELDS = (("d_model", REQUIRED, "size"), ("eps", 1e-5, "float>0"), ("elementwise_affine", True, "bool"),
              ("bias", True, "bool"))
    MODULE = LayerNorm


class GroupNormConfig(_NormConfig):
    """Builds ``GroupNorm(num_groups, num_channels, eps=1e-05, affine=True)``."""

    FIELDS = (("num_groups", REQUIRED, "int>0"), ("num_channels", REQUIRED, "int>0"), ("eps", 1e-5, "float>0"),
              ("affine", True, "bool"))
    MODULE = GroupNorm

    def validate(self):
        if self.num_channels % self.num_groups:
            raise ArgumentError("GroupNormConfig: num_channels %d must divide by num_groups %d"
                                % (self.num_channels, self.num_groups))


class RMSNormConfig(_NormConfig):
    """Builds ``RMSNorm(d_model, eps, elementwise_affine)``."""

    FIELDS = (("d_model", REQUIRED, "size"), ("eps", None, "float>0"), ("elementwise_affine", True, "bool"))
    MODULE = RMSNorm
