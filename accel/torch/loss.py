"""torch's kernels for cross entropy over (N, C) logits and int64 class indices, forward and
backward (the composites ``cross_entropy`` and ``cross_entropy_input_grad``); the gradient reuses
its forward's log-probabilities where it follows it on the same arrays.

The composite takes some fifteen primitives forward and twenty backward (a gather, a scatter, the
masks of ``ignore_index``); torch's ``cross_entropy`` is two kernels, and the gradient here
(``nll_loss_backward`` into ``_log_softmax_backward_data``) five. In a small captured step on CUDA
that is a third of the graph's kernels. The targets are checked first, as the composite checks
them (``checks.check_classes``: one read, or a flag inside a CUDA graph), since a bad index in
torch's kernel would end the CUDA context. Label smoothing, other shapes and dtypes run the
composite: torch computes the same values in another order (a few ulp apart).
"""
import weakref

import torch

from ember.composite import COMPOSITES, register_fused
from ember.tensor import Tensor

from . import checks
from .arrays import F32, F64, I64, version
from .device import Torch

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
_INT64 = (-(1 << 63), 1 << 63)


def _takes(x, target, weight, ignore_index, reduction, label_smoothing):
    """Whether the fused path takes the call: float32 or float64 logits (N, C) on a Torch device,
    int64 targets (N,) and a weight (C,) of the logits' dtype on it, no label smoothing."""
    if type(x) is not Tensor or type(target) is not Tensor or not isinstance(x.device, Torch):
        return False
    if x._data.dtype not in (F32, F64) or len(x.shape) != 2 or target.shape != x.shape[:1] \
            or target.device != x.device or target._data.dtype is not I64:
        return False
    if weight is not None and (type(weight) is not Tensor or weight.device != x.device
                               or weight.dtype is not x.dtype or weight.shape != x.shape[1:]):
        return False
    return type(reduction) is str and reduction in _REDUCTIONS and label_smoothing == 0 \
        and type(ignore_index) is int and _INT64[0] <= ignore_index < _INT64[1]


# The last forward's log-probabilities and the kept targets' weight, for its gradient (the same
# kernels on the same arrays: the same bits), so a step computes them once. Kept while the logits
# and targets are those objects, unchanged (torch counts in-place writes), and only while small:
# a language model's (N, vocabulary) would hold its memory until the next call.
_KEEP_MAX = 1 << 20  # elements of log-probabilities worth keeping
_last = [None]


def _forward(xd, t, w, red, ignore_index):
    logp = torch.log_softmax(xd, 1)
    out, total = torch.ops.aten.nll_loss_forward(logp, t, w, red, ignore_index)
    return logp, out, total


def _cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    if not _takes(input, target, weight, ignore_index, reduction, label_smoothing):
        return COMPOSITES["cross_entropy"](input, target, weight, ignore_index, reduction, label_smoothing)
    xd, td = input._data, target._data
    t = checks.check_classes(td, input.shape[1], ignore_index, "cross_entropy")
    w = None if weight is None else weight._data
    red = _REDUCTIONS[reduction]
    logp, out, total = _forward(xd, t, w, red, ignore_index)  # torch's cross_entropy, its parts kept
    _last[0] = None
    versions = version(xd), version(td)
    if logp.numel() <= _KEEP_MAX and None not in versions:
        _last[0] = (weakref.ref(xd), versions[0], weakref.ref(td), versions[1], w, red, ignore_index, t, logp,
                    total)
    return Tensor(out, tuple(out.shape), input.dtype, input.device)


def _kept(xd, td, w, red, ignore_index):
    """(checked targets, log-probabilities, total weight) of the last forward when it had these arrays."""
    k = _last[0]
    if k is None or k[0]() is not xd or k[2]() is not td or k[4] is not w or k[5] != red or k[6] != ignore_index:
        return None
    if k[1] != version(xd) or k[3] != version(td):
        return None
    return k[7], k[8], k[9]


def _cross_entropy_input_grad(g, x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    if not _takes(x, target, weight, ignore_index, reduction, label_smoothing) or type(g) is not Tensor \
            or g.device != x.device or g.dtype is not x.dtype:
        return COMPOSITES["cross_entropy_input_grad"](g, x, target, weight, ignore_index, reduction, label_smoothing)
    xd, td = x._data, target._data
    w = None if weight is None else weight._data
    red = _REDUCTIONS[reduction]
    kept = _kept(xd, td, w, red, ignore_index)
    if kept is not None:
        t, logp, total = kept
        _last[0] = None  # used once: the step's memory is its own again
    else:
        t = checks.check_classes(td, x.shape[1], ignore_index, "cross_entropy")
        logp, _, total = _forward(xd, t, w, red, ignore_index)  # total: the kept targets' weight
    glogp = torch.ops.aten.nll_loss_backward(g._data, logp, t, w, red, ignore_index, total)
    gx = torch.ops.aten._log_softmax_backward_data(glogp, logp, 1, xd.dtype)
    return Tensor(gx, x.shape, x.dtype, x.device)


register_fused(Torch, {"cross_entropy": _cross_entropy, "cross_entropy_input_grad": _cross_entropy_input_grad})
