"""Loss modules: ``torch.nn``'s loss classes over ``ember.nn.functional``'s losses.

>>> criterion = CrossEntropyLoss(label_smoothing=0.1)
>>> loss = criterion(model(x), y)

Each takes ``reduction`` ("mean", "sum" or "none"; ``KLDivLoss`` also "batchmean") and PyTorch's
other arguments; the deprecated ``size_average``/``reduce`` pair is accepted and turned into a
``reduction`` as PyTorch does. ``weight`` and ``pos_weight``, when given, are buffers (saved with
the model, moved by ``to``), as in PyTorch.
"""
from ..errors import ArgumentError, ArgumentTypeError
from ..tensor import Tensor
from . import functional as F
from .module import Module

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(reduction, size_average, reduce, op, extra=()):
    if size_average is not None or reduce is not None:  # PyTorch's legacy pair
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in _REDUCTIONS + extra:
        raise ArgumentError("%s: reduction must be one of %s, found %r"
                            % (op, ", ".join(repr(r) for r in _REDUCTIONS + extra), reduction))
    return reduction


class _Loss(Module):
    def __init__(self, reduction, size_average=None, reduce=None, extra=()):
        super().__init__()
        self.reduction = _reduction(reduction, size_average, reduce, type(self).__name__, extra)

    def _buffer(self, name, t):
        if t is None:
            object.__setattr__(self, name, None)
            return
        if type(t) is not Tensor:
            raise ArgumentTypeError("%s: %s must be a Tensor or None, found %s"
                                    % (type(self).__name__, name, type(t).__name__))
        self.register_buffer(name, t)

    def extra_repr(self):
        return "" if self.reduction == "mean" else "reduction=%r" % (self.reduction,)


class CrossEntropyLoss(_Loss):
    """``F.cross_entropy`` of logits (N, C, ...) against class indices or probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(reduction, size_average, reduce)
        self._buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """``F.nll_loss`` of log-probabilities (N, C, ...) against class indices (N, ...)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(reduction, size_average, reduce)
        self._buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    """Mean squared error, ``F.mse_loss``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction, size_average, reduce)

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error, ``F.l1_loss``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction, size_average, reduce)

    def forward(self, input, target):
        return F.l1_loss(input, target, self.reduction)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities, ``F.binary_cross_entropy``."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction, size_average, reduce)
        self._buffer("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits, ``F.binary_cross_entropy_with_logits``."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(reduction, size_average, reduce)
        self._buffer("weight", weight)
        self._buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class HuberLoss(_Loss):
    """``F.huber_loss``: quadratic below ``delta``, linear above."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        if not (type(delta) in (int, float) and delta > 0):
            raise ArgumentError("HuberLoss: delta must be a number > 0, found %r" % (delta,))
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_Loss):
    """``F.smooth_l1_loss``: quadratic below ``beta`` (divided by it), linear above."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(reduction, size_average, reduce)
        if not (type(beta) in (int, float) and beta >= 0):
            raise ArgumentError("SmoothL1Loss: beta must be a number >= 0, found %r" % (beta,))
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class KLDivLoss(_Loss):
    """``F.kl_div`` with ``input`` as log-probabilities (``reduction="batchmean"`` is the true KL)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(reduction, size_average, reduce, ("batchmean",))
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, self.reduction, self.log_target)
