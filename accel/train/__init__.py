"""``ember.accel.train``: the ``Learner`` and what it reports to.

>>> from ember.accel.train import Learner, DataParallel
>>> learner = Learner(model, AdamW(model, lr=5e-3), F.cross_entropy, epochs=20, run_dir="runs/digits",
...                   early_stopping=("valid_loss", "min", 3), strategy=DataParallel(2))
>>> result = learner.fit(train_loader, valid_loader, resume="latest")

- ``Learner``: training with validation each epoch, metrics (``metrics``), gradient accumulation,
  LR schedulers, early stopping, checkpoints (the last N plus the best, written atomically) and
  exact resume; ``q`` in the dashboard, Ctrl-C and SIGTERM stop after the current step.
- Reporting: a terminal dashboard (``Dashboard``, textual) when stdout is a terminal, plain lines
  (``ProgressLines``) otherwise; per-epoch ``metrics.csv``/``metrics.jsonl`` and a final
  ``curves.png`` in the run folder.
- ``SingleDevice`` and ``DataParallel(workers)``: how a batch's gradients are computed.

Needs numpy; the dashboard needs textual and the curves matplotlib (``pip install ember[train]``).
"""
from . import metrics
from .checkpoint import Checkpoint, Checkpoints, read_state
from .learner import DEFAULT_METRICS, EarlyStopping, FitResult, Learner
from .metrics import (F1, Accuracy, CpuUsage, IterationSpeed, LearningRate, Loss, MemoryUse, Metric, Precision,
                      Recall, TopKAccuracy)
from .progress import ProgressLines, View
from .strategy import DataParallel, SingleDevice, Strategy


def __getattr__(name):
    if name == "Dashboard":  # textual loads only when the dashboard is asked for
        from .dashboard import Dashboard
        return Dashboard
    raise AttributeError("module 'ember.accel.train' has no attribute %r" % (name,))


__all__ = ["Learner", "EarlyStopping", "FitResult", "DEFAULT_METRICS", "Checkpoints", "Checkpoint", "read_state",
           "metrics", "Metric", "Loss", "Accuracy", "TopKAccuracy", "Precision", "Recall", "F1", "LearningRate",
           "IterationSpeed", "CpuUsage", "MemoryUse", "ProgressLines", "View", "Dashboard", "DataParallel",
           "SingleDevice", "Strategy"]
