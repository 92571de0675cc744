"""Learning-rate schedulers (``ember.accel.optim.lr``), Burn's shape with PyTorch's values.

A scheduler is a small object whose ``step()`` returns the learning rate for the current iteration
and advances; the first call returns the initial rate. Set it on an optimizer each iteration:

>>> sched = lr.CosineAnnealingLR(0.1, T_max=100)
>>> for x, y in batches:
...     opt.step(loss(model(x), y).backward(), lr=sched.step())     # or: opt.lr = sched.step()

The k-th value (k = 0, 1, ...) equals what ``torch.optim.lr_scheduler``'s scheduler of the same
name gives after k calls of its ``step()`` (``get_last_lr()``), bit for bit: the schedulers that
PyTorch computes recursively (each rate from the previous one) are computed the same way here.
``Constant``, ``Noam`` and ``LinearWarmup`` have no PyTorch class (Noam is Burn's; LinearWarmup is
``LinearLR`` with ``end_factor=1`` that may also start from 0).

``state_dict()``/``load_state_dict()`` and ``save(path)``/``load(path)`` (a safetensors record with
the state in its metadata) resume a schedule exactly.

**PyTorch's form**: give an optimizer instead of a rate and the scheduler drives it, as
``torch.optim.lr_scheduler`` does: it sets each parameter group's rate to the schedule's epoch-0
value at once (from the group's ``initial_lr``, its ``lr`` when first scheduled), each ``step()``
advances every group's schedule and sets its rate (and returns None, as PyTorch's does), and
``get_last_lr()`` lists the groups' current rates:

>>> sched = StepLR(opt, step_size=1, gamma=0.7)       # ember.optim.lr_scheduler.StepLR too
>>> for epoch in range(epochs):
...     train(model, opt)
...     sched.step()
"""
import copy
import json
import math

from ember.errors import ArgumentError, ArgumentTypeError, RecordError

FORMAT = "ember.lr/1"


def _num(v, name, op, low=None, high=None, low_open=False, high_open=False):
    if type(v) not in (int, float) or v != v:
        raise ArgumentError("%s: %s must be a number, found %r" % (op, name, v))
    if low is not None and (v < low or (low_open and v == low)):
        raise ArgumentError("%s: %s must be %s %s, found %r" % (op, name, ">" if low_open else ">=", low, v))
    if high is not None and (v > high or (high_open and v == high)):
        raise ArgumentError("%s: %s must be %s %s, found %r" % (op, name, "<" if high_open else "<=", high, v))
    return float(v)


def _int(v, name, op, low):
    if type(v) is not int or v < low:
        raise ArgumentError("%s: %s must be an int >= %d, found %r" % (op, name, low, v))
    return v


class LrScheduler:
    """Base class: ``step() -> lr``; ``lr`` is the rate the last ``step()`` returned (None before).

    Subclasses implement ``_next(epoch, previous)``: the rate at ``epoch`` (0 on the first call)
    given the previous rate (None at epoch 0).
    """

    def __init__(self):
        self.last_epoch = -1
        self.lr = None
        self.optimizer = None
        self._groups = None  # PyTorch's form: one schedule per parameter group

    def step(self):
        """The learning rate of this iteration; advances the schedule. Given an optimizer at
        construction: sets every group's rate to its schedule's next value and returns None."""
        if self.optimizer is not None:
            self._advance()
            return None
        self.last_epoch += 1
        self.lr = self._next(self.last_epoch, self.lr)
        return self.lr

    def get_last_lr(self):
        """[rate of each parameter group] (PyTorch's form), or [the last rate]."""
        if self._groups is not None:
            return [s.lr for s in self._groups]
        return [self.lr]

    def _bind(self, lr, op):
        """The initial rate from ``lr``: a number, or an optimizer whose groups this schedule drives
        (``_start`` then takes the epoch-0 step, as PyTorch's constructors do)."""
        if hasattr(lr, "param_groups"):
            self.optimizer = lr
            for i, g in enumerate(lr.param_groups):
                g.setdefault("initial_lr", g["lr"])
                _num(g["initial_lr"], "param_groups[%d]['initial_lr']" % i, op, 0.0)
            return float(lr.param_groups[0]["initial_lr"])
        return _num(lr, "lr", op, 0.0)

    def _start(self):
        if self.optimizer is None:
            return
        groups = []
        for g in self.optimizer.param_groups:
            s = copy.copy(self)
            s.optimizer = None
            s.initial_lr = float(g["initial_lr"])
            groups.append(s)
        self._groups = groups
        self._advance()

    def _advance(self):
        for s, g in zip(self._groups, self.optimizer.param_groups):
            g["lr"] = s.step()
        self.last_epoch = self._groups[0].last_epoch
        self.lr = self._groups[0].lr

    def _next(self, epoch, previous):
        raise NotImplementedError

    def _restart(self):
        """Start again at epoch 0 the way ``torch.optim.lr_scheduler.SequentialLR`` restarts a
        scheduler at its milestone (its closed form at 0 where PyTorch has one); returns the rate."""
        self.last_epoch = -1
        self.lr = None
        return self.step()

    # -- state ---------------------------------------------------------------------------------------
    def state_dict(self):
        """``{"scheduler": class name, "last_epoch": int, "lr": float or None}`` (JSON-friendly),
        with ``"groups"``, each group's state, in PyTorch's form."""
        d = {"scheduler": type(self).__name__, "last_epoch": self.last_epoch, "lr": self.lr}
        if self._groups is not None:
            d["groups"] = [s.state_dict() for s in self._groups]
        return d

    def load_state_dict(self, state):
        """Restore what ``state_dict`` returned; the state of another scheduler class raises ``ArgumentError``."""
        if type(state) is not dict or state.get("scheduler") != type(self).__name__:
            found = state.get("scheduler") if type(state) is dict else type(state).__name__
            raise ArgumentError("%s.load_state_dict: expected the state of a %s, found %s"
                                % (type(self).__name__, type(self).__name__, found))
        self.last_epoch = state["last_epoch"]
        self.lr = state["lr"]
        groups = state.get("groups")
        if self._groups is not None and groups is not None:
            if len(groups) != len(self._groups):
                raise ArgumentError("%s.load_state_dict: the state has %d parameter groups, the optimizer %d"
                                    % (type(self).__name__, len(groups), len(self._groups)))
            for s, d, g in zip(self._groups, groups, self.optimizer.param_groups):
                s.load_state_dict(d)
                g["lr"] = s.lr

    def save(self, path):
        """Write the state to ``path`` (a safetensors record with no tensors); returns ``path``."""
        from ember import record
        record.write(path, [], metadata={"format": FORMAT, "state": json.dumps(self.state_dict())})
        return path

    def load(self, path):
        """Restore the state ``save`` wrote to ``path``."""
        from ember import record
        with record.open(path) as reader:
            meta = reader.metadata or {}
        if meta.get("format") != FORMAT:
            raise RecordError("%s.load: %s is not an ember scheduler record (format %r)"
                              % (type(self).__name__, path, meta.get("format")))
        self.load_state_dict(json.loads(meta["state"]))

    def __repr__(self):
        return "%s(last_epoch=%d, lr=%r)" % (type(self).__name__, self.last_epoch, self.lr)


class Constant(LrScheduler):
    """The same rate at every step (Burn's constant scheduler)."""

    def __init__(self, lr):
        LrScheduler.__init__(self)
        self.initial_lr = self._bind(lr, "Constant")
        self._start()

    def _next(self, epoch, previous):
        return self.initial_lr


class StepLR(LrScheduler):
    """``lr * gamma ** (epoch // step_size)`` (``torch.optim.lr_scheduler.StepLR``, recursive)."""

    def __init__(self, lr, step_size, gamma=0.1):
        LrScheduler.__init__(self)
        self.initial_lr = self._bind(lr, "StepLR")
        self.step_size = _int(step_size, "step_size", "StepLR", 1)
        self.gamma = _num(gamma, "gamma", "StepLR")
        self._start()

    def _next(self, epoch, previous):
        if epoch == 0:
            return self.initial_lr
        if epoch % self.step_size != 0:
            return previous
        return previous * self.gamma

    def _restart(self):
        self.last_epoch = 0
        self.lr = self.initial_lr * self.gamma ** 0
        return self.lr


class ExponentialLR(LrScheduler):
    """``lr * gamma ** epoch`` (``torch.optim.lr_scheduler.ExponentialLR``, recursive)."""

    def __init__(self, lr, gamma):
        LrScheduler.__init__(self)
        self.initial_lr = self._bind(lr, "ExponentialLR")
        self.gamma = _num(gamma, "gamma", "ExponentialLR")
        self._start()

    def _next(self, epoch, previous):
        return self.initial_lr if epoch == 0 else previous * self.gamma

    def _restart(self):
        self.last_epoch = 0
        self.lr = self.initial_lr * self.gamma ** 0
        return self.lr


class LinearLR(LrScheduler):
    """From ``lr * start_factor`` to ``lr * end_factor`` linearly over ``total_iters`` steps, then
    constant (``torch.optim.lr_scheduler.LinearLR``, same defaults, recursive).

    To go from rate a to rate b over n steps: ``LinearLR(a, 1.0, b / a, n)``."""

    def __init__(self, lr, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        LrScheduler.__init__(self)
        self.initial_lr = self._bind(lr, "LinearLR")
        self.start_factor = _num(start_factor, "start_factor", "LinearLR", 0.0, 1.0, low_open=True)
        self.end_factor = _num(end_factor, "end_factor", "LinearLR", 0.0, 1.0)
        self.total_iters = _int(total_iters, "total_iters", "LinearLR", 0)
        self._start()

    def _next(self, epoch, previous):
        if epoch == 0:
            return self.initial_lr * self.start_factor
        if epoch > self.total_iters:
            return previous
        s, e = self.start_factor, self.end_factor
        return previous * (1.0 + (e - s) / (self.total_iters * s + (epoch - 1) * (e - s)))

    def _restart(self):
        self.last_epoch = 0
        if self.total_iters == 0:  # (PyTorch's closed form divides by zero here)
            self.lr = self.initial_lr * self.start_factor
        else:
            self.lr = self.initial_lr * (self.start_factor + (self.end_factor - self.start_factor)
                                         * min(self.total_iters, 0) / self.total_iters)
        return self.lr


class CosineAnnealingLR(LrScheduler):
    """``eta_min + (lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``, continuing as a cosine
    past ``T_max`` (``torch.optim.lr_scheduler.CosineAnnealingLR``, its recursive form)."""

    def __init__(self, lr, T_max, eta_min=0.0):
        LrScheduler.__init__(self)
        self.initial_lr = self._bind(lr, "CosineAnnealingLR")
        self.T_max = _int(T_max, "T_max", "CosineAnnealingLR", 1)
        self.eta_min = _num(eta_min, "eta_min", "CosineAnnealingLR", 0.0)
        self._start()

    def _next(self, epoch, previous):
        if epoch == 0:
            return self.initial_lr
        t, lo, base = self.T_max, self.eta_min, self.initial_lr
        if (epoch - 1 - t) % (2 * t) == 0:
            return previous + (base - lo) * (1 - math.cos(math.pi / t)) / 2
        return (1 + math.cos(math.pi * epoch / t)) / (1 + math.cos(math.pi * (epoch - 1) / t)) * (previous - lo) + lo

    def _restart(self):
        self.last_epoch = 0
        self.lr = self.eta_min + (self.initial_lr - self.eta_min) * (1 + math.cos(0.0)) / 2
        return self.lr


class Noam(LrScheduler):
    """The Transformer schedule (Burn's ``Noam``): at step k = 1, 2, ... (the first call is k = 1)
    ``factor * model_size ** -0.5 * min(k ** -0.5, k * warmup_steps ** -1.5)``."""

    def __init__(self, factor, warmup_steps=4000, model_size=512):
        LrScheduler.__init__(self)
        self.factor = _num(factor, "factor", "Noam", 0.0)
        self.warmup_steps = _int(warmup_steps, "warmup_steps", "Noam", 1)
        self.model_size = _int(model_size, "model_size", "Noam", 1)

    def _next(self, epoch, previous):
        k = epoch + 1
        return self.factor * (self.model_size ** -0.5 * min(k ** -0.5, k * self.warmup_steps ** -1.5))


class LinearWarmup(LrScheduler):
    """``lr * (start_factor + (1 - start_factor) * min(epoch, warmup_steps) / warmup_steps)``: from
    ``lr * start_factor`` up to ``lr`` in ``warmup_steps`` steps, then ``lr``. With
    ``start_factor > 0`` this is ``LinearLR(lr, start_factor, 1.0, warmup_steps)`` in closed form;
    unlike PyTorch's LinearLR it may start from 0. Follow it with a decay through ``SequentialLR``."""

    def __init__(self, lr, warmup_steps, start_factor=0.0):
        LrScheduler.__init__(self)
        self.initial_lr = self._bind(lr, "LinearWarmup")
        self.warmup_steps = _int(warmup_steps, "warmup_steps", "LinearWarmup", 1)
        self.start_factor = _num(start_factor, "start_factor", "LinearWarmup", 0.0, 1.0)
        self._start()

    def _next(self, epoch, previous):
        s, w = self.start_factor, self.warmup_steps
        return self.initial_lr * (s + (1.0 - s) * min(epoch, w) / w)


class SequentialLR(LrScheduler):
    """Schedulers one after another: ``schedulers[i]`` runs from ``milestones[i-1]`` (restarted at
    its epoch 0 there) until ``milestones[i]`` (``torch.optim.lr_scheduler.SequentialLR``).

    >>> warm = lr.LinearWarmup(0.1, 100)
    >>> sched = lr.SequentialLR([warm, lr.CosineAnnealingLR(0.1, 900)], milestones=[100])
    """

    def __init__(self, schedulers, milestones):
        LrScheduler.__init__(self)
        schedulers = list(schedulers)
        milestones = list(milestones)
        if not schedulers:
            raise ArgumentError("SequentialLR: expected at least one scheduler")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LrScheduler):
                raise ArgumentTypeError("SequentialLR: schedulers[%d] is a %s, expected a scheduler"
                                        % (i, type(s).__name__))
        if len(milestones) != len(schedulers) - 1:
            raise ArgumentError("SequentialLR: expected %d milestone(s) for %d schedulers, found %d"
                                % (len(schedulers) - 1, len(schedulers), len(milestones)))
        for i, m in enumerate(milestones):
            if type(m) is not int or m < 1 or (i and m <= milestones[i - 1]):
                raise ArgumentError("SequentialLR: milestones must be increasing ints >= 1, found %r" % (milestones,))
        self.schedulers = schedulers
        self.milestones = milestones

    def _index(self, epoch):
        i = 0
        while i < len(self.milestones) and self.milestones[i] <= epoch:
            i += 1
        return i

    def step(self):
        self.last_epoch += 1
        epoch = self.last_epoch
        i = self._index(epoch)
        s = self.schedulers[i]
        if epoch == 0:
            s.last_epoch = -1
            s.lr = None
            self.lr = s.step()
        elif i > 0 and self.milestones[i - 1] == epoch:
            self.lr = s._restart()
        else:
            self.lr = s.step()
        return self.lr

    def state_dict(self):
        d = LrScheduler.state_dict(self)
        d["schedulers"] = [s.state_dict() for s in self.schedulers]
        return d

    def load_state_dict(self, state):
        """Restore this scheduler's state and each inner scheduler's."""
        LrScheduler.load_state_dict(self, state)
        children = state.get("schedulers", [])
        if len(children) != len(self.schedulers):
            raise ArgumentError("SequentialLR.load_state_dict: the state has %d schedulers, this one %d"
                                % (len(children), len(self.schedulers)))
        for s, d in zip(self.schedulers, children):
            s.load_state_dict(d)


# Burn's names
Step = StepLR
Exponential = ExponentialLR
Linear = LinearLR
CosineAnnealing = CosineAnnealingLR
Sequence = SequentialLR

__all__ = ["LrScheduler", "Constant", "StepLR", "ExponentialLR", "LinearLR", "CosineAnnealingLR", "Noam",
           "LinearWarmup", "SequentialLR", "Step", "Exponential", "Linear", "CosineAnnealing", "Sequence"]
