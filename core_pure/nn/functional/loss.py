"""Loss functions: PyTorch's names, arguments and reductions."""
from ...composite import composite
from ...errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, checking
from ...tensor import Tensor
from .activation import log_softmax, softplus


def _reduce_loss(loss, reduction, op, weight_sum=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight_sum if weight_sum is not None else loss.mean()
    raise ArgumentError("%s: reduction must be 'mean', 'sum' or 'none', found %r" % (op, reduction))


def _check_same_shape(a, b, op):
    for name, t in (("input", a), ("target", b)):
        if type(t) is not Tensor:
            raise ArgumentTypeError("%s: expected a tensor %s, found %s" % (op, name, type(t).__name__))
    if a.shape != b.shape:
        raise ShapeError("%s: expected a target of the input's shape %s, found %s" % (op, a.shape, b.shape))


def _class_weights(target, weight, ignore_index, dtype):
    """Per target element: 0 where ignored, else its class weight (1 without ``weight``)."""
    keep = target != ignore_index
    w = keep.to(dtype)
    if weight is None:
        return w
    safe = target.where(keep, 0)
    return w * weight.index_select(0, safe.reshape(-1)).reshape(target.shape)


@composite
def nll_loss(log_probs, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of class indices ``target`` (N, ...) under ``log_probs`` (N, C, ...)."""
    return _nll(log_probs, target, weight, ignore_index, reduction, "nll_loss")


def _nll(log_probs, target, weight, ignore_index, reduction, op):
    if type(target) is not Tensor or target.dtype.kind != "i":
        raise DTypeError("%s: expected int64 class indices as target, found %s"
                         % (op, target.dtype.name if type(target) is Tensor else type(target).__name__))
    cdim = 1 if len(log_probs.shape) > 1 else 0
    c = log_probs.shape[cdim] if log_probs.shape else 0
    expected = log_probs.shape[:cdim] + log_probs.shape[cdim + 1:]
    if not log_probs.shape or target.shape != expected:
        raise ShapeError("%s: expected target of shape %s for input %s, found %s"
                         % (op, expected, log_probs.shape, target.shape))
    if weight is not None and (type(weight) is not Tensor or weight.shape != (c,)):
        raise ShapeError("%s: expected a weight of shape (%d,), found %s"
                         % (op, c, weight.shape if type(weight) is Tensor else type(weight).__name__))
    safe = target.where(target != ignore_index, 0)
    # one read of the device (a sync on a GPU) says whether any class is out of range
    if safe.numel():
        with checking():  # a check only: a captured step skips it, gather's own check stays
            bad = ((safe < 0) | (safe >= c)).any().item()
    if safe.numel() and bad:
        from ...errors import IndexOutOfRange
        raise IndexOutOfRange("%s: class indices must be in [0, %d) (or ignore_index), found %d..%d"
                              % (op, c, safe.min().item(), safe.max().item()))
    picked = log_probs.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim)
    w = _class_weights(target, weight, ignore_index, log_probs.dtype)
    return _reduce_loss(-picked * w, reduction, op, w.sum() if reduction == "mean" else None)


@composite
def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits (N, C, ...) against class indices (N, ...) or class probabilities
    (same shape as the input), with PyTorch's ``weight``, ``ignore_index`` and ``label_smoothing``."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError("cross_entropy: label_smoothing must be in [0, 1], found %r" % (label_smoothing,))
    for name, t in (("input", input), ("target", target)):
        if type(t) is not Tensor:
            raise ArgumentTypeError("cross_entropy: expected a tensor %s, found %s" % (name, type(t).__name__))
    cdim = 1 if len(input.shape) > 1 else 0
    c = input.shape[cdim] if input.shape else 1
    if weight is not None and (type(weight) is not Tensor or weight.shape != (c,)):
        raise ShapeError("cross_entropy: expected weight of shape (%d,) (one per class), found %s"
                         % (c, weight.shape if type(weight) is Tensor else type(weight).__name__))
    logp = log_softmax(input, cdim)
    c = input.shape[cdim] if input.shape else 1
    wlogp = logp if weight is None else logp * weight.reshape((c,) + (1,) * (len(input.shape) - cdim - 1))
    if target.dtype.kind == "f":  # class probabilities
        _check_same_shape(input, target, "cross_entropy")
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        return _reduce_loss(-(wlogp * target).sum(cdim), reduction, "cross_entropy")
    nll = _nll(logp, target, weight, ignore_index, "none", "cross_entropy")
    if label_smoothing:
        keep = (target != ignore_index).to(input.dtype)
        smooth = -wlogp.sum(cdim) * keep
        nll = nll * (1 - label_smoothing) + smooth * (label_smoothing / c)
    if reduction == "mean":
        return nll.sum() / _class_weights(target, weight, ignore_index, input.dtype).sum()
    return _reduce_loss(nll, reduction, "cross_entropy")


@composite
def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t·log p + (1-t)·log(1-p)) for probabilities ``input``; logs clamped at -100 like PyTorch."""
    _check_same_shape(input, target, "binary_cross_entropy")
    loss = -(target * input.log().clamp(min=-100.0) + (1 - target) * (1 - input).log().clamp(min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss, reduction, "binary_cross_entropy")


@composite
def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """Binary cross entropy of logits, computed stably: (1-t)·x + (1 + (pw-1)·t)·softplus(-x)."""
    _check_same_shape(input, target, "binary_cross_entropy_with_logits")
    sp = (-input).maximum(0) + (-(input.abs())).exp().log1p()  # softplus(-x), stable
    if pos_weight is not None:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * sp
    else:
        loss = (1 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss, reduction, "binary_cross_entropy_with_logits")


@composite
def mse_loss(input, target, reduction="mean"):
    """The squared error (input - target)², reduced by ``reduction`` ('mean', 'sum' or 'none')."""
    _check_same_shape(input, target, "mse_loss")
    d = input - target
    return _reduce_loss(d * d, reduction, "mse_loss")


@composite
def l1_loss(input, target, reduction="mean"):
    """The absolute error |input - target|, reduced by ``reduction`` ('mean', 'sum' or 'none')."""
    _check_same_shape(input, target, "l1_loss")
    return _reduce_loss((input - target).abs(), reduction, "l1_loss")


@composite
def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5·d² where |d| < delta, else delta·(|d| - 0.5·delta)."""
    _check_same_shape(input, target, "huber_loss")
    if not delta > 0:
        raise ArgumentError("huber_loss: delta must be > 0, found %r" % (delta,))
    d = (input - target).abs()
    loss = (d * d * 0.5).where(d < delta, (d - 0.5 * delta) * delta)
    return _reduce_loss(loss, reduction, "huber_loss")


@composite
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """0.5·d²/beta where |d| < beta, else |d| - 0.5·beta (beta = 0 is the L1 loss)."""
    _check_same_shape(input, target, "smooth_l1_loss")
    if not beta >= 0:
        raise ArgumentError("smooth_l1_loss: beta must be >= 0, found %r" % (beta,))
    d = (input - target).abs()
    if beta == 0:
        return _reduce_loss(d, reduction, "smooth_l1_loss")
    loss = (d * d * (0.5 / beta)).where(d < beta, d - 0.5 * beta)
    return _reduce_loss(loss, reduction, "smooth_l1_loss")


@composite
def kl_div(input, target, reduction="mean", log_target=False):
    """KL divergence with ``input`` as log-probabilities: target·(log target - input).
    ``reduction="batchmean"`` divides the sum by the batch size, as PyTorch recommends."""
    _check_same_shape(input, target, "kl_div")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = (target * (target.log() - input)).where(target > 0, 0.0)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.shape else 1)
    return _reduce_loss(loss, reduction, "kl_div")


# 3-D convolution and pooling, unpooling and im2col (nn/spatial.py) load on first use, so a board
