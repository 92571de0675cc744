"""SGD, Adam, AdamW, RMSprop, Adagrad and Adadelta with PyTorch's update formulas (its single-tensor CPU path).

Each update is the body of ``torch.optim``'s ``_single_tensor_*`` loop for one parameter, written
with ember ops on the parameter's inner device; scalar factors are Python floats, rounded to the
parameter's dtype by the op, as PyTorch does. Factors equal to 1 are skipped (exact). SGD and Adam
run it as one composite per cohort of parameters (``updates.py``), which the C Cpu, NumPy and Wgpu
devices replace by a fused kernel giving the same values; RMSprop and Adagrad run ``_update`` per
parameter.
"""
from ember.errors import ArgumentError

from .optimizer import Optimizer, _cohorts, _finite, _full_like, _lerp, _zeros_like
from .updates import adam_update, adam_values, sgd_update, sgd_values


def _nonneg(hyper, key, op):
    _finite(hyper.get(key), key, op)


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay
    (L2, added to the gradient), as ``torch.optim.SGD``.

    >>> opt = SGD(model, lr=0.1, momentum=0.9, nesterov=True)
    >>> opt.step(loss.backward())
    """

    DEFAULTS = {"lr": 1e-3, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False,
                "maximize": False}
    CAPTURE = True  # a captured step (ember.accel.compile) may replay it: _hyper is refilled each replay
    STATE_TENSORS = ("momentum_buffer",)

    def _state_needs(self, group):
        return ["momentum_buffer"] if group["momentum"] > 0 else []

    def _check(self, h):
        Optimizer._check(self, h)
        _nonneg(h, "momentum", "SGD")
        _nonneg(h, "dampening", "SGD")
        if h.get("nesterov") and (h.get("momentum", 0) <= 0 or h.get("dampening", 0) != 0):
            raise ArgumentError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")

    def _hyper_values(self, group, step):
        return sgd_values(group["lr"], group["momentum"], group["dampening"], group["weight_decay"],
                          group["nesterov"], group["maximize"])

    def _update_group(self, group, xs, gs, states):
        out = [None] * len(xs)
        for idx in _cohorts(xs):
            x0 = xs[idx[0]]
            hyper, values = self._hyper(group, x0.device, x0.dtype)
            new_x, new_bufs = sgd_update(hyper, values, [xs[i] for i in idx], [gs[i] for i in idx],
                                         [states[i].get("momentum_buffer") for i in idx])
            for i, x, buf in zip(idx, new_x, new_bufs):
                state = states[i]
                if buf is not None:
                    state["momentum_buffer"] = buf
                state["step"] += 1
                out[i] = x
        return out


class Adam(Optimizer):
    """Adam (``torch.optim.Adam``): ``betas``, ``eps``, L2 ``weight_decay`` (added to the gradient),
    ``amsgrad``. AdamW decouples the weight decay."""

    DEFAULTS = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False,
                "maximize": False}
    DECOUPLED = False
    STATE_TENSORS = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def _state_needs(self, group):
        return list(self.STATE_TENSORS if group["amsgrad"] else self.STATE_TENSORS[:2])
    CAPTURE = True  # a captured step may replay it: _hyper (bias corrections included) is refilled each replay

    def _check(self, h):
        Optimizer._check(self, h)
        op = type(self).__name__
        betas = h.get("betas")
        if type(betas) not in (tuple, list) or len(betas) != 2 or not all(
                type(b) in (int, float) and 0.0 <= b < 1.0 for b in betas):
            raise ArgumentError("%s: betas must be two numbers in [0, 1), found %r" % (op, betas))
        h["betas"] = (float(betas[0]), float(betas[1]))
        _nonneg(h, "eps", op)

    def _hyper_values(self, group, step):
        return adam_values(group["lr"], group["betas"], group["eps"], group["weight_decay"], group["amsgrad"],
                           group["maximize"], self.DECOUPLED, step)

    def _update_group(self, group, xs, gs, states):
        amsgrad = group["amsgrad"]
        for x, state in zip(xs, states):
            if state.get("exp_avg") is None:
                state["exp_avg"] = _zeros_like(x)
                state["exp_avg_sq"] = _zeros_like(x)
                if amsgrad:
                    state["max_exp_avg_sq"] = _zeros_like(x)
            state["step"] += 1
        out = [None] * len(xs)
        for idx in _cohorts(xs, [s["step"] for s in states]):
            x0 = xs[idx[0]]
            hyper, values = self._hyper(group, x0.device, x0.dtype, states[idx[0]]["step"], states[idx[0]])
            cohort = [states[i] for i in idx]
            new = adam_update(hyper, values, [xs[i] for i in idx], [gs[i] for i in idx],
                              [s["exp_avg"] for s in cohort], [s["exp_avg_sq"] for s in cohort],
                              [s.get("max_exp_avg_sq") if amsgrad else None for s in cohort])
            for k, i in enumerate(idx):
                state = states[i]
                state["exp_avg"], state["exp_avg_sq"] = new[1][k], new[2][k]
                if amsgrad:
                    state["max_exp_avg_sq"] = new[3][k]
                out[i] = new[0][k]
        return out


class AdamW(Adam):
    """Adam with decoupled weight decay (``torch.optim.AdamW``): the parameter is first scaled by
    ``1 - lr * weight_decay``, then takes Adam's step. ``weight_decay`` defaults to 0.01."""

    DEFAULTS = dict(Adam.DEFAULTS, weight_decay=1e-2)
    DECOUPLED = True


class RMSprop(Optimizer):
    """RMSprop (``torch.optim.RMSprop``): ``alpha`` (smoothing), ``eps``, ``momentum``, ``centered``
    and L2 ``weight_decay``."""

    DEFAULTS = {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0, "momentum": 0.0,
                "centered": False, "maximize": False}
    STATE_TENSORS = ("square_avg", "momentum_buffer", "grad_avg")

    def _state_needs(self, group):
        return [k for k, on in zip(self.STATE_TENSORS, (True, group["momentum"] > 0, group["centered"])) if on]

    def _check(self, h):
        Optimizer._check(self, h)
        _nonneg(h, "alpha", "RMSprop")
        _nonneg(h, "eps", "RMSprop")
        _nonneg(h, "momentum", "RMSprop")

    def _update(self, x, g, state, group):
        lr, alpha, eps, wd, momentum = group["lr"], group["alpha"], group["eps"], group["weight_decay"], \
            group["momentum"]
        if group["maximize"]:
            g = -g
        sq = state.get("square_avg")
        if sq is None:
            sq = state["square_avg"] = _zeros_like(x)
            if momentum > 0:
                state["momentum_buffer"] = _zeros_like(x)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(x)
        state["step"] += 1
        if wd != 0:
            g = g + x * wd
        sq = state["square_avg"] = sq * alpha + g * (1.0 - alpha) * g
        if group["centered"]:
            ga = state["grad_avg"] = _lerp(state["grad_avg"], g, 1.0 - alpha)
            avg = (sq - ga * ga).sqrt()
        else:
            avg = sq.sqrt()
        avg = avg + eps
        if momentum > 0:
            buf = state["momentum_buffer"] = state["momentum_buffer"] * momentum + g / avg
            return x - buf * lr
        return x + (g / avg) * (-lr)


class Adagrad(Optimizer):
    """Adagrad (``torch.optim.Adagrad``): ``lr_decay``, L2 ``weight_decay``,
    ``initial_accumulator_value`` and ``eps``."""

    DEFAULTS = {"lr": 1e-2, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0,
                "eps": 1e-10, "maximize": False}
    STATE_TENSORS = ("sum",)

    def _check(self, h):
        Optimizer._check(self, h)
        _nonneg(h, "lr_decay", "Adagrad")
        _nonneg(h, "initial_accumulator_value", "Adagrad")
        _nonneg(h, "eps", "Adagrad")

    def _update(self, x, g, state, group):
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        if group["maximize"]:
            g = -g
        s = state.get("sum")
        if s is None:
            s = _full_like(x, float(group["initial_accumulator_value"]))
        state["step"] += 1
        step = state["step"]
        if wd != 0:
            g = g + x * wd
        clr = lr / (1 + (step - 1) * group["lr_decay"])
        s = state["sum"] = s + g * g
        std = s.sqrt() + eps
        return x + (g / std) * (-clr)


class Adadelta(Optimizer):
    """Adadelta (``torch.optim.Adadelta``): ``lr`` (default 1.0) scales the step, ``rho`` smooths
    both running averages, ``eps`` keeps the square roots off zero, L2 ``weight_decay``.

    >>> opt = Adadelta(model.parameters(), lr=1.0)

    A captured step (``ember.accel.compile``) may replay it: the learning rate comes from the
    cohort's hyperparameter tensor, which each replay refills.
    """

    DEFAULTS = {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0.0, "maximize": False}
    CAPTURE = True

    def _check(self, h):
        Optimizer._check(self, h)
        rho = h.get("rho")
        if type(rho) not in (int, float) or not 0.0 <= rho <= 1.0:
            raise ArgumentError("Adadelta: rho must be a number in [0, 1], found %r" % (rho,))
        _nonneg(h, "eps", "Adadelta")

    def _hyper_values(self, group, step):
        # neg_lr, rho, one_minus_rho, eps, weight_decay (the order the update reads them)
        return [-float(group["lr"]), float(group["rho"]), 1.0 - group["rho"], float(group["eps"]),
                float(group["weight_decay"])]

    def _update_group(self, group, xs, gs, states):
        out = [None] * len(xs)
        for idx in _cohorts(xs):
            x0 = xs[idx[0]]
            _, h = self._hyper(group, x0.device, x0.dtype)
            # read by index: in a captured step h[0] (the rate) is a tensor each replay refills
            neg_lr, rho, one_minus_rho, eps, wd = h[0], h[1], h[2], h[3], h[4]
            for i in idx:
                x, g, state = xs[i], gs[i], states[i]
                if state.get("square_avg") is None:
                    state["square_avg"] = _zeros_like(x)
                    state["acc_delta"] = _zeros_like(x)
                state["step"] += 1
                if group["maximize"]:
                    g = -g
                if group["weight_decay"] != 0:
                    g = g + x * wd
                # PyTorch: square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho), then
                # delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
                sq = state["square_avg"] = state["square_avg"] * rho + (g * one_minus_rho) * g
                delta = (state["acc_delta"] + eps).sqrt() / (sq + eps).sqrt() * g
                state["acc_delta"] = state["acc_delta"] * rho + (delta * one_minus_rho) * delta
                out[i] = x + delta * neg_lr
        return out


__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"]
