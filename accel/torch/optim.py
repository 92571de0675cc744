"""The Torch device's fused optimizer updates: ``sgd_update`` and ``adam_update`` of a cohort as
torch's multi-tensor (``_foreach_*``) kernels, registered as Torch's built-in fused paths.

A cohort of any size then costs a few kernel launches per operation of the formula, not one per
parameter: on CUDA, SGD over a whole network is two kernels (``g * lr``, ``x - that``) instead of
two per parameter, which is most of a small eager step (inside a CUDA graph the large tensors take
their own: ``_each``). Each ``_foreach`` op computes in the
dtype and rounds once, in the composite's order (``ember.accel.optim.updates``), so the values are
the op-by-op ones bit for bit. The numbers (learning rate, betas, bias corrections) are read as 0-d
views of the cohort's ``hyper`` tensor, never from the host: a captured step refills that tensor
each replay, and a CUDA graph reads it where it lies. The switches (maximize, momentum on...) come
from ``values``: they are fixed by a captured plan's key. Anything else (float16, a tensor of
another device) runs the composite's body.
"""
import torch

from ember.composite import COMPOSITES, register_fused
from ember.tensor import Tensor

from . import elementwise as _ew
from .arrays import F32, F64
from .device import Torch


# torch's multi-tensor kernels give each 65536 elements of a tensor one block, which walks them in
# turn: 8.3-8.9 us for the MLP's 100k-element weight on an H200, where the per-tensor ops took
# 1.3-1.8 us on an H100 (bench/torch_capture_profile.py; bench/results/*torch_capture*). Inside a
# CUDA graph a launch costs the host nothing, so there a tensor of more than ALONE elements takes
# the per-tensor op: the same IEEE operation on each element, the same bits.
ALONE = 1 << 14
_LISTS = (list, tuple)  # torch's multi-tensor ops return lists or tuples by version


def _capturing(t):
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


def _each(name, *args):
    """``torch._foreach_<name>(*args)`` (each argument a list of tensors or one number or 0-d
    tensor), with the lists' large tensors taken one by one while a CUDA graph is captured."""
    many = getattr(torch, "_foreach_" + name)
    first = next(a for a in args if type(a) in _LISTS)
    if not first or not _capturing(first[0]):
        return many(*args)
    large = [t.numel() > ALONE for t in first]
    if not any(large):
        return many(*args)
    one = getattr(torch, name)
    out = [None] * len(first)
    alone = [i for i, big in enumerate(large) if big]
    rest = [i for i, big in enumerate(large) if not big]
    if rest:
        for i, r in zip(rest, many(*[[a[i] for i in rest] if type(a) in _LISTS else a for a in args])):
            out[i] = r
    for i in alone:
        out[i] = one(*[a[i] if type(a) in _LISTS else a for a in args])
    return out


def _arrays(hyper, lists):
    """The hyper tensor's array when every tensor is a float32 or float64 array of one Torch device
    in the hyperparameters' dtype, else None."""
    h = hyper._data
    if type(hyper.device) is not Torch or h.dtype not in (F32, F64):
        return None
    for ts in lists:
        for t in ts:
            if t is not None and (type(t) is not Tensor or t.device != hyper.device or t._data.dtype != h.dtype):
                return None
    return h


def _sqrt(arrays):
    # CUDA's float32 sqrt is correctly rounded; torch's vectorized CPU one is not (the Torch
    # device's own sqrt takes float64 there, and so does this)
    if arrays[0].is_cuda:
        return torch._foreach_sqrt(arrays)
    return [_ew.unary("sqrt", a) for a in arrays]


def _wrap(arrays, like):
    return [Tensor(a, x.shape, x.dtype, x.device) for a, x in zip(arrays, like)]


def _sgd_update(hyper, values, params, grads, momentum_buffers):
    h = _arrays(hyper, (params, grads, momentum_buffers))
    if h is None or not params:
        return COMPOSITES["sgd_update"](hyper, values, params, grads, momentum_buffers)
    from ember.accel.optim.updates import SGD_AT as at  # loaded with the optimizers that call this
    maximize, wd_on, mom_on, damp_on, nesterov = [
        values[at[k]] != 0 for k in ("maximize", "weight_decay_on", "momentum_on", "damp_on", "nesterov")]
    xs = [x._data for x in params]
    gs = [g._data for g in grads]
    if maximize:
        gs = _each("neg", gs)
    if wd_on:
        gs = _each("add", gs, _each("mul", xs, h[at["weight_decay"]]))
    bufs = None
    if mom_on:
        bufs = [None if b is None else b._data for b in momentum_buffers]
        old = [i for i, b in enumerate(bufs) if b is not None]
        if old:
            step = [gs[i] for i in old]
            if damp_on:
                step = _each("mul", step, h[at["damp"]])
            grown = _each("mul", [bufs[i] for i in old], h[at["momentum"]])
            for i, b in zip(old, _each("add", grown, step)):
                bufs[i] = b
        bufs = [g if b is None else b for g, b in zip(gs, bufs)]  # a first momentum step's buffer is the gradient
        gs = _each("add", gs, _each("mul", bufs, h[at["momentum"]])) if nesterov else bufs
    new_x = _each("sub", xs, _each("mul", gs, h[at["lr"]]))
    new_b = _wrap(bufs, params) if bufs is not None else [None] * len(params)
    return _wrap(new_x, params), new_b


def _adam_update(hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
    from ember.accel.optim.updates import ADAM_AT as at  # loaded with the optimizers that call this
    h = _arrays(hyper, (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs))
    amsgrad = values[at["amsgrad"]] != 0
    if h is None or not params or (amsgrad and any(t is None for t in max_exp_avg_sqs)):
        return COMPOSITES["adam_update"](hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    xs = [x._data for x in params]
    gs = [g._data for g in grads]
    ms = [m._data for m in exp_avgs]
    if values[at["maximize"]] != 0:
        gs = _each("neg", gs)
    if values[at["weight_decay_on"]] != 0:
        if values[at["decoupled"]] != 0:
            xs = _each("mul", xs, h[at["decay"]])
        else:
            gs = _each("add", gs, _each("mul", xs, h[at["weight_decay"]]))
    d = _each("mul", _each("sub", gs, ms), h[at["lerp_weight"]])
    m_new = _each("sub", gs, d) if values[at["lerp_high"]] != 0 else _each("add", ms, d)
    v_new = _each("add", _each("mul", [v._data for v in exp_avg_sqs], h[at["beta2"]]),
                       _each("mul", _each("mul", gs, h[at["one_minus_beta2"]]), gs))
    top = _each("maximum", [v._data for v in max_exp_avg_sqs], v_new) if amsgrad else v_new
    bc2, eps = h[at["bc2_sqrt"]], h[at["eps"]]
    # per tensor: torch's multi-tensor add (and sub) of a 0-d CUDA tensor waits for the GPU, which a
    # CUDA graph cannot hold (bench/torch_capture_profile.py on an H100; its mul and div do not)
    den = [torch.add(torch.div(r, bc2), eps) for r in _sqrt(top)]
    step = _each("mul", _each("div", m_new, den), h[at["neg_step_size"]])
    new_x = _each("add", xs, step)
    return (_wrap(new_x, params), _wrap(m_new, params), _wrap(v_new, params),
            _wrap(top, params) if amsgrad else [None] * len(params))


register_fused(Torch, {"sgd_update": _sgd_update, "adam_update": _adam_update})
