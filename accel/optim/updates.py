"""The SGD and Adam/AdamW updates of a parameter cohort as composites: one call per cohort, which a
device replaces by a fused kernel (``composite.register_fused``) and everything else runs op by op.

A cohort is the parameters of one group on one device, of one dtype (and, for Adam, one step
count): ``Optimizer.step`` forms them. Each composite takes

- ``hyper``: a tensor of the cohort's dtype on its device holding the values of ``SGD_HYPER`` or
  ``ADAM_HYPER`` in that order (``Optimizer._hyper`` builds it: the one place, so a captured step
  can refill it). Scalars are rounded to the dtype there, as an op rounds its Python scalar; the
  switches (``*_on``, ``maximize``...) are 0 or 1. Fused kernels read only this.
- ``values``: the same numbers as Python floats, unrounded: the op-by-op body below uses them as
  the ops' scalars (reading ``hyper`` back would wait for a GPU).
- lists of tensors: parameters, gradients (the parameters' shape and dtype), state (None where a
  parameter has none yet: SGD's first momentum step).

They return lists of new tensors; no input is changed. The bodies are ``torch.optim``'s
single-tensor formulas (``optimizers.py`` says more); a fused kernel gives the same values bit for
bit: the same operations, each rounded to the dtype, in the same order, no fma contraction.
"""
from ember.composite import composite

SGD_HYPER = ("lr", "weight_decay", "momentum", "damp", "maximize", "weight_decay_on", "momentum_on",
             "damp_on", "nesterov")
ADAM_HYPER = ("weight_decay", "decay", "lerp_weight", "beta2", "one_minus_beta2", "bc2_sqrt", "eps",
              "neg_step_size", "maximize", "weight_decay_on", "decoupled", "lerp_high", "amsgrad")


def _index(names):
    return {n: i for i, n in enumerate(names)}


SGD_AT = _index(SGD_HYPER)
ADAM_AT = _index(ADAM_HYPER)


def sgd_values(lr, momentum, dampening, weight_decay, nesterov, maximize):
    """``SGD_HYPER``'s values for one step."""
    damp = 1.0 - dampening
    return [float(lr), float(weight_decay), float(momentum), damp, _flag(maximize), _flag(weight_decay != 0),
            _flag(momentum != 0), _flag(damp != 1.0), _flag(nesterov)]


def adam_values(lr, betas, eps, weight_decay, amsgrad, maximize, decoupled, step):
    """``ADAM_HYPER``'s values for a cohort at ``step`` (already counted: 1 on the first step)."""
    beta1, beta2 = betas
    w = 1.0 - beta1  # exp_avg.lerp(grad, w): PyTorch's CPU lerp, exact at both ends
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2 = 1.0 - beta2 ** step
    step_size = lr / bias_correction1
    return [float(weight_decay), 1.0 - lr * weight_decay, w if w < 0.5 else 1.0 - w, beta2, 1.0 - beta2,
            bias_correction2 ** 0.5, float(eps), -step_size, _flag(maximize), _flag(weight_decay != 0),
            _flag(decoupled), _flag(w >= 0.5), _flag(amsgrad)]


def _flag(b):
    return 1.0 if b else 0.0


@composite
def sgd_update(hyper, values, params, grads, momentum_buffers):
    """One SGD step of a cohort: ``(new params, new momentum buffers)`` (buffers None without momentum)."""
    h = values
    at = SGD_AT
    lr, wd, momentum, damp = h[at["lr"]], h[at["weight_decay"]], h[at["momentum"]], h[at["damp"]]
    new_params, new_bufs = [], []
    for x, g, buf in zip(params, grads, momentum_buffers):
        if h[at["maximize"]]:
            g = -g
        if h[at["weight_decay_on"]]:
            g = g + x * wd
        if h[at["momentum_on"]]:
            if buf is None:
                buf = g
            else:
                buf = buf * momentum
                buf = buf + (g * damp if h[at["damp_on"]] else g)
            g = g + buf * momentum if h[at["nesterov"]] else buf
        else:
            buf = None
        new_params.append(x - g * lr)
        new_bufs.append(buf)
    return new_params, new_bufs


@composite
def adam_update(hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
    """One Adam/AdamW step of a cohort: ``(params, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)``, new
    (the last a list of None without amsgrad)."""
    h = values
    at = ADAM_AT
    wd, decay, w, beta2 = h[at["weight_decay"]], h[at["decay"]], h[at["lerp_weight"]], h[at["beta2"]]
    one_minus_beta2, bc2_sqrt, eps = h[at["one_minus_beta2"]], h[at["bc2_sqrt"]], h[at["eps"]]
    neg_step_size = h[at["neg_step_size"]]
    out = ([], [], [], [])
    for x, g, m, v, vmax in zip(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
        if h[at["maximize"]]:
            g = -g
        if h[at["weight_decay_on"]]:
            if h[at["decoupled"]]:
                x = x * decay
            else:
                g = g + x * wd
        m = g - (g - m) * w if h[at["lerp_high"]] else m + (g - m) * w
        v = v * beta2 + g * one_minus_beta2 * g
        if h[at["amsgrad"]]:
            vmax = vmax.maximum(v)
            denom = vmax.sqrt() / bc2_sqrt + eps
        else:
            vmax = None
            denom = v.sqrt() / bc2_sqrt + eps
        for lst, t in zip(out, (x + (m / denom) * neg_step_size, m, v, vmax)):
            lst.append(t)
    return out


__all__ = ["sgd_update", "adam_update", "SGD_HYPER", "ADAM_HYPER"]
