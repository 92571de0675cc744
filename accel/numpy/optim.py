"""The NumPy device's fused optimizer updates: ``sgd_update`` and ``adam_update`` of a cohort
(float32 or float64) as vectorised numpy per parameter, registered as NumPy's built-in fused
paths. Every ufunc runs in the dtype with the hyperparameters as numpy scalars of it, in the
composite's order (ember.accel.optim.updates), so the values are the op-by-op ones bit for bit;
only temporaries this module made are written in place. Anything else runs the composite's body.
"""
import numpy as np

from ember.composite import COMPOSITES, register_fused
from ember.tensor import Tensor

from .arrays import F32, F64, QUIET, ndarray, reset_state, set_state
from .device import NumPy

def _arrays(hyper, lists):
    """The hyperparameter array when every tensor is a float32 or float64 ndarray of the NumPy
    device in the hyperparameters' dtype, else None."""
    h = hyper._data
    if type(h) is not ndarray or h.dtype not in (F32, F64) or type(hyper.device) is not NumPy:
        return None
    for ts in lists:
        for t in ts:
            if t is not None and (type(t) is not Tensor or type(t._data) is not ndarray or t._data.dtype != h.dtype
                                  or type(t.device) is not NumPy):
                return None
    return h


def _flat(t):
    """``t``'s values as a 1-d array (a view when contiguous): ufuncs then return arrays, 0-d included."""
    return t._data.reshape(-1)


def _tensor(a, like):
    return Tensor(a.reshape(like.shape), like.shape, like.dtype, like.device)


def _sgd_update(hyper, values, params, grads, momentum_buffers):
    h = _arrays(hyper, (params, grads, momentum_buffers))
    if h is None:
        return COMPOSITES["sgd_update"](hyper, values, params, grads, momentum_buffers)
    from ember.accel.optim.updates import SGD_AT as at  # loaded with the optimizers that call this
    lr, wd, mom, damp = h[at["lr"]], h[at["weight_decay"]], h[at["momentum"]], h[at["damp"]]
    maximize, wd_on, mom_on = h[at["maximize"]] != 0, h[at["weight_decay_on"]] != 0, h[at["momentum_on"]] != 0
    damp_on, nesterov = h[at["damp_on"]] != 0, h[at["nesterov"]] != 0
    new_x, new_b = [], []
    token = set_state(QUIET)
    try:
        for x, g, buf in zip(params, grads, momentum_buffers):
            xa, ga = _flat(x), _flat(g)
            if maximize:
                ga = np.negative(ga)
            if wd_on:
                ga = np.add(ga, np.multiply(xa, wd))
            b = None
            if mom_on:
                if buf is None:
                    b = ga
                else:
                    b = np.multiply(_flat(buf), mom)
                    np.add(b, np.multiply(ga, damp) if damp_on else ga, out=b)
                ga = np.add(ga, np.multiply(b, mom)) if nesterov else b
            new_x.append(_tensor(np.subtract(xa, np.multiply(ga, lr)), x))
            new_b.append(_tensor(b, x) if b is not None else None)
    finally:
        reset_state(token)
    return new_x, new_b


def _adam_update(hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
    h = _arrays(hyper, (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs))
    from ember.accel.optim.updates import ADAM_AT as at  # loaded with the optimizers that call this
    if h is None or (h[at["amsgrad"]] != 0 and any(t is None for t in max_exp_avg_sqs)):
        return COMPOSITES["adam_update"](hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    wd, decay, w, beta2 = h[at["weight_decay"]], h[at["decay"]], h[at["lerp_weight"]], h[at["beta2"]]
    omb2, bc2s, eps, nss = h[at["one_minus_beta2"]], h[at["bc2_sqrt"]], h[at["eps"]], h[at["neg_step_size"]]
    maximize, wd_on, decoupled = h[at["maximize"]] != 0, h[at["weight_decay_on"]] != 0, h[at["decoupled"]] != 0
    high, amsgrad = h[at["lerp_high"]] != 0, h[at["amsgrad"]] != 0
    out = ([], [], [], [])
    token = set_state(QUIET)
    try:
        for x, g, m, v, vmax in zip(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
            xa, ga, ma = _flat(x), _flat(g), _flat(m)
            if maximize:
                ga = np.negative(ga)
            if wd_on:
                if decoupled:
                    xa = np.multiply(xa, decay)
                else:
                    ga = np.add(ga, np.multiply(xa, wd))
            d = np.subtract(ga, ma)
            np.multiply(d, w, out=d)
            m_new = np.subtract(ga, d) if high else np.add(ma, d)
            v_new = np.multiply(_flat(v), beta2)
            t = np.multiply(ga, omb2)
            np.multiply(t, ga, out=t)
            np.add(v_new, t, out=v_new)
            top = np.maximum(_flat(vmax), v_new) if amsgrad else v_new
            den = np.sqrt(top)
            np.divide(den, bc2s, out=den)
            np.add(den, eps, out=den)
            step = np.divide(m_new, den)
            np.multiply(step, nss, out=step)
            news = (np.add(xa, step), m_new, v_new, top if amsgrad else None)
            for lst, a in zip(out, news):
                lst.append(_tensor(a, x) if a is not None else None)
    finally:
        reset_state(token)
    return out


register_fused(NumPy, {"sgd_update": _sgd_update, "adam_update": _adam_update})
