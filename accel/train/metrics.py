"""Metrics: what the Learner measures each step and reports each epoch.

A metric accumulates over an epoch (``update`` per step, ``compute`` at any time gives the value so
far, ``reset`` starts again) and can save its accumulator (``state_dict``) so that a run resumed
mid-epoch reports the same epoch values as an uninterrupted one.

Split metrics (``Loss``, ``Accuracy``, ``TopKAccuracy``, ``Precision``, ``Recall``, ``F1``) are
measured on the training batches and on the validation set and logged as ``train_<name>`` and
``valid_<name>``. Run metrics (``LearningRate``, ``IterationSpeed``, ``CpuUsage``, ``MemoryUse``)
describe the training itself and are logged once per epoch under their own name.

By name (``Learner(metrics=[...])``): ``loss``, ``accuracy``, ``top5`` (any ``top<k>``),
``precision``, ``recall``, ``f1``, ``lr``, ``speed``, ``cpu``, ``memory``.
"""
import copy
import os
import re
import resource
import time

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError


class StepOutput:
    """What one step gives the metrics: ``logits`` (N, C) and ``targets`` (N,) as numpy arrays,
    the batch's mean ``loss`` as a float, the batch size ``n``, and for training steps the
    learning rate ``lr`` used and the ``seconds`` the step took (None on validation)."""

    __slots__ = ("logits", "targets", "loss", "n", "lr", "seconds")

    def __init__(self, logits, targets, loss, n, lr=None, seconds=None):
        self.logits = logits
        self.targets = targets
        self.loss = loss
        self.n = n
        self.lr = lr
        self.seconds = seconds


class Metric:
    """Base class. ``name``: the key in logs; ``higher_is_better`` picks the direction for early
    stopping and the best checkpoint; ``split``: True for per-split metrics, False for run metrics."""

    name = ""
    higher_is_better = False
    split = True
    fmt = "%.4f"

    def __init__(self):
        self.reset()

    def reset(self):
        """Start a new epoch: clear the accumulator."""
        raise NotImplementedError

    def update(self, out):
        """Add one step's ``StepOutput`` to the accumulator."""
        raise NotImplementedError

    def compute(self):
        """The value over the steps since ``reset`` (nan before any)."""
        raise NotImplementedError

    def batch_value(self, out):
        """The metric over this one step alone (what the dashboard plots per batch)."""
        single = copy.copy(self)
        single.reset()
        single.update(out)
        return single.compute()

    def state_dict(self):
        """The accumulator as a JSON-friendly dict (saved in checkpoints, for exact resume)."""
        return {}

    def load_state_dict(self, state):
        """Restore an accumulator that ``state_dict`` returned."""
        pass

    def __repr__(self):
        return "%s()" % type(self).__name__


class Loss(Metric):
    """The mean loss over the items seen (each batch's mean weighted by its size)."""

    name = "loss"

    def reset(self):
        self.total = 0.0
        self.count = 0

    def update(self, out):
        self.total += out.loss * out.n
        self.count += out.n

    def compute(self):
        return self.total / self.count if self.count else float("nan")

    def batch_value(self, out):
        return out.loss

    def state_dict(self):
        return {"total": self.total, "count": self.count}

    def load_state_dict(self, state):
        self.total, self.count = state["total"], state["count"]


class TopKAccuracy(Metric):
    """The fraction of items whose target is among the ``k`` highest logits."""

    higher_is_better = True

    def __init__(self, k=5):
        if type(k) is not int or k < 1:
            raise ArgumentError("TopKAccuracy: k must be an int >= 1, found %r" % (k,))
        self.k = k
        self.name = "accuracy" if k == 1 else "top%d_accuracy" % k
        self.reset()

    def reset(self):
        self.correct = 0
        self.count = 0

    def update(self, out):
        logits, targets = out.logits, out.targets
        if self.k == 1:
            hit = logits.argmax(axis=1) == targets
        else:
            k = min(self.k, logits.shape[1])
            top = np.argpartition(-logits, k - 1, axis=1)[:, :k]
            hit = (top == targets[:, None]).any(axis=1)
        self.correct += int(hit.sum())
        self.count += len(targets)

    def compute(self):
        return self.correct / self.count if self.count else float("nan")

    def state_dict(self):
        return {"correct": self.correct, "count": self.count}

    def load_state_dict(self, state):
        self.correct, self.count = state["correct"], state["count"]

    def __repr__(self):
        return "TopKAccuracy(k=%d)" % self.k


def Accuracy():
    """The fraction of items whose highest logit is the target's."""
    return TopKAccuracy(1)


class _Confusion(Metric):
    """Macro-averaged scores from a confusion matrix that grows with the classes it sees."""

    higher_is_better = True

    def reset(self):
        self.matrix = np.zeros((0, 0), dtype=np.int64)  # [target, prediction]

    def update(self, out):
        pred = out.logits.argmax(axis=1)
        c = max(out.logits.shape[1], int(out.targets.max()) + 1 if len(out.targets) else 0, len(self.matrix))
        if c > len(self.matrix):
            grown = np.zeros((c, c), dtype=np.int64)
            grown[:len(self.matrix), :len(self.matrix)] = self.matrix
            self.matrix = grown
        np.add.at(self.matrix, (out.targets.astype(np.int64), pred), 1)

    def _scores(self):
        m = self.matrix
        tp = np.diag(m).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(m.sum(0) > 0, tp / m.sum(0), 0.0)
            recall = np.where(m.sum(1) > 0, tp / m.sum(1), 0.0)
            f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        present = m.sum(1) > 0  # macro average over the classes that occur among the targets
        return precision[present], recall[present], f1[present]

    def compute(self):
        if not self.matrix.sum():
            return float("nan")
        return float(self._scores()[self.INDEX].mean())

    def state_dict(self):
        return {"matrix": self.matrix.tolist()}

    def load_state_dict(self, state):
        self.matrix = np.asarray(state["matrix"], dtype=np.int64).reshape(len(state["matrix"]), -1)


class Precision(_Confusion):
    """Macro precision: per class TP / predicted, averaged over the classes present in the targets
    (scikit-learn's ``precision_score(average="macro")`` when every class occurs)."""

    name = "precision"
    INDEX = 0


class Recall(_Confusion):
    """Macro recall: per class TP / actual, averaged over the classes present."""

    name = "recall"
    INDEX = 1


class F1(_Confusion):
    """Macro F1: per class 2PR / (P + R), averaged over the classes present."""

    name = "f1"
    INDEX = 2


class _Gauge(Metric):
    """A run metric whose epoch value is the last one measured."""

    split = False

    def reset(self):
        self.value = float("nan")

    def compute(self):
        return self.value

    def state_dict(self):
        return {"value": self.value}

    def load_state_dict(self, state):
        self.value = state["value"]


class LearningRate(_Gauge):
    """The learning rate of the epoch's last optimizer step."""

    name = "lr"
    fmt = "%.3g"

    def update(self, out):
        if out.lr is not None:
            self.value = float(out.lr)


class IterationSpeed(Metric):
    """Training items per second over the epoch (time spent in training steps only)."""

    name = "items_per_s"
    split = False
    higher_is_better = True
    fmt = "%.0f"

    def reset(self):
        self.items = 0
        self.seconds = 0.0

    def update(self, out):
        self.items += out.n
        self.seconds += out.seconds or 0.0

    def compute(self):
        return self.items / self.seconds if self.seconds > 0 else float("nan")

    def state_dict(self):
        return {"items": self.items, "seconds": self.seconds}

    def load_state_dict(self, state):
        self.items, self.seconds = state["items"], state["seconds"]


def cpu_seconds():
    """CPU time (user + system) this process has used, from ``resource.getrusage``."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def memory_mb():
    """This process's resident memory in MB: ``VmRSS`` from /proc, else the peak from getrusage."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if os.uname().sysname == "Darwin" else peak / 1024.0


class CpuUsage(_Gauge):
    """CPU use over the epoch in percent of one core (200 = two cores busy)."""

    name = "cpu_percent"
    fmt = "%.0f"

    def reset(self):
        _Gauge.reset(self)
        self.start = (cpu_seconds(), time.perf_counter())

    def update(self, out):
        cpu0, wall0 = self.start
        wall = time.perf_counter() - wall0
        if wall > 0:
            self.value = 100.0 * (cpu_seconds() - cpu0) / wall


class MemoryUse(_Gauge):
    """Resident memory of the process at the end of the epoch, in MB."""

    name = "memory_mb"
    fmt = "%.0f"

    def update(self, out):
        self.value = memory_mb()


_BY_NAME = {"loss": Loss, "accuracy": Accuracy, "precision": Precision, "recall": Recall, "f1": F1,
            "lr": LearningRate, "speed": IterationSpeed, "cpu": CpuUsage, "memory": MemoryUse}


def make(spec):
    """A metric from a name (``"accuracy"``, ``"top5"``, ...) or a ``Metric`` (returned as is)."""
    if isinstance(spec, Metric):
        return spec
    if type(spec) is not str:
        raise ArgumentTypeError("metrics: expected a name or a Metric, found %s" % type(spec).__name__)
    m = re.fullmatch(r"top(\d+)", spec)
    if m:
        return TopKAccuracy(int(m.group(1)))
    cls = _BY_NAME.get(spec)
    if cls is None:
        raise ArgumentError("metrics: unknown metric %r; known: %s, top<k>" % (spec, ", ".join(sorted(_BY_NAME))))
    return cls()


__all__ = ["StepOutput", "Metric", "Loss", "Accuracy", "TopKAccuracy", "Precision", "Recall", "F1", "LearningRate",
           "IterationSpeed", "CpuUsage", "MemoryUse", "make", "cpu_seconds", "memory_mb"]
