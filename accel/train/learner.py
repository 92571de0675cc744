"""``Learner``: the training loop, with validation, metrics, checkpoints, early stopping, exact
resume, a clean stop (``q`` in the dashboard, Ctrl-C, SIGTERM) and a terminal dashboard.

>>> learner = Learner(model, AdamW(model, lr=5e-3), F.cross_entropy, epochs=20,
...                   scheduler=lr.CosineAnnealingLR(5e-3, T_max=20 * len(train)),
...                   metrics=["accuracy", "f1", "lr", "speed"], early_stopping=("valid_loss", "min", 3),
...                   run_dir="runs/digits", device=ember.Cpu())
>>> result = learner.fit(train, valid, resume="latest")     # DataLoaders; picks up a stopped run
>>> result.history[-1]["valid_accuracy"]

Same seed, same weights: the data order of each epoch depends only on the loader's seed and the
epoch, and a checkpoint holds the model, the optimizer and scheduler state, ember's, Python's and
numpy's random states and the metrics' accumulators, so a run stopped anywhere and resumed ends
with exactly the weights of a run that never stopped.
"""
import math
import os
import random
import signal
import threading
import time

import numpy as np

from ember import rng
from ember.backend import grad_device
from ember.errors import ArgumentError, ArgumentTypeError, RecordError
from ember.nn.module import Module
from ember.tensor import Tensor

from ember.accel.autodiff import Autodiff, no_grad
from ember.accel.data.loader import DataLoader, to_tensors
from ember.accel.optim import Optimizer, track
from ember.accel.optim.lr import LrScheduler

from . import checkpoint as ckpt
from . import metrics as M
from .progress import View, choose
from .runlog import CURVES, RunLog, plot_curves
from .strategy import SingleDevice, Strategy

DEFAULT_METRICS = ("loss", "accuracy", "lr", "speed", "cpu", "memory")
FORMAT = "ember.learner/1"


class EarlyStopping:
    """Stop when ``metric`` (a logged name, ``"valid_loss"``) has not improved by more than
    ``min_delta`` for ``patience`` epochs; ``mode`` "min" or "max"."""

    def __init__(self, metric, mode="min", patience=3, min_delta=0.0):
        if type(metric) is not str:
            raise ArgumentTypeError("EarlyStopping: metric must be a name such as 'valid_loss', found %r" % (metric,))
        if mode not in ("min", "max"):
            raise ArgumentError("EarlyStopping: mode must be 'min' or 'max', found %r" % (mode,))
        if type(patience) is not int or patience < 1:
            raise ArgumentError("EarlyStopping: patience must be an int >= 1, found %r" % (patience,))
        self.metric = metric
        self.mode = mode
        self.patience = patience
        self.min_delta = float(min_delta)
        self.best = None
        self.best_epoch = None
        self.bad_epochs = 0

    def update(self, value, epoch):
        """Record an epoch's value; True when training should stop."""
        if value is None or value != value:
            self.bad_epochs += 1
        elif self.best is None or (value < self.best - self.min_delta if self.mode == "min"
                                   else value > self.best + self.min_delta):
            self.best, self.best_epoch, self.bad_epochs = value, epoch, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience

    def state_dict(self):
        """The best value, its epoch and the epochs without improvement (for resume)."""
        return {"best": self.best, "best_epoch": self.best_epoch, "bad_epochs": self.bad_epochs}

    def load_state_dict(self, state):
        """Restore what ``state_dict`` returned."""
        self.best, self.best_epoch, self.bad_epochs = state["best"], state["best_epoch"], state["bad_epochs"]

    def __repr__(self):
        return "EarlyStopping(%r, %r, patience=%d)" % (self.metric, self.mode, self.patience)


class FitResult:
    """What ``fit`` did: ``history`` (one dict per epoch, as logged), ``stopped`` ("completed",
    "early_stopping" or "interrupted"), ``stop_reason`` (for "interrupted": "q", "Ctrl-C",
    "SIGTERM" or what ``request_stop`` was given), ``checkpoint`` (the last one written, or None),
    ``best`` (the best checkpoint's path, or None), ``seconds`` (training time) and ``run_dir``."""

    def __init__(self, history, stopped, checkpoint, best, seconds, run_dir, monitor, stop_reason=None):
        self.history = history
        self.stopped = stopped
        self.stop_reason = stop_reason
        self.checkpoint = checkpoint
        self.best = best
        self.seconds = seconds
        self.run_dir = run_dir
        self.monitor = monitor

    def summary(self):
        """One line: how training ended, after how many epochs and seconds, and the monitored value."""
        how = {"completed": "finished", "early_stopping": "stopped early",
               "interrupted": "stopped on request"}[self.stopped]
        text = "training %s after %d epochs in %.1f s" % (how, len(self.history), self.seconds)
        value = self.history[-1].get(self.monitor) if self.history else None
        if value is not None and value == value:
            text += "; %s %.4f" % (self.monitor, value)
        if self.checkpoint:
            text += "; last checkpoint %s" % self.checkpoint
        if self.best and self.best != self.checkpoint:
            text += "; best %s" % self.best
        return text

    def __repr__(self):
        return "FitResult(%s, %d epochs)" % (self.stopped, len(self.history))


class _SignalStop:
    """While active on the main thread, SIGINT (Ctrl-C) and SIGTERM ask the learner to stop after
    the current step instead of raising. A third Ctrl-C raises ``KeyboardInterrupt`` at once,
    unless a checkpoint is being written (that one is ignored: the write always completes)."""

    def __init__(self, learner):
        self.learner = learner
        self.saved = {}
        self.count = 0

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if signum == signal.SIGINT:
            self.count += 1
            if self.count >= 3 and not self.learner._writing:
                raise KeyboardInterrupt
        self.learner.request_stop("Ctrl-C" if signum == signal.SIGINT else "SIGTERM")

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)


def _rng_states():
    np_state = np.random.get_state()
    return {"ember": rng.default_generator.get_state(),
            "python": [random.getstate()[0], list(random.getstate()[1]), random.getstate()[2]],
            "numpy": [np_state[0], np_state[1].tolist(), int(np_state[2]), int(np_state[3]), float(np_state[4])]}


def _set_rng_states(state):
    rng.default_generator.set_state(state["ember"])
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))


def _history(rows):
    if type(rows) is not list or [r for r in rows if type(r) is not dict]:
        raise TypeError("expected a list of objects, found %s" % type(rows).__name__)
    return [dict(r) for r in rows]


def _from_state(path, field, fn, value):
    """``fn(value)`` for a field of a checkpoint's state.json: a damaged field (a wrong type, a missing
    key, nesting a loader cannot take) is a ``RecordError`` naming the file and the field."""
    try:
        return fn(value)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError) as e:
        if isinstance(e, RecordError):
            raise
        raise RecordError("Learner: %s: %s field %r is damaged (%s: %s)"
                          % (path, ckpt.STATE, field, type(e).__name__, e))


def _finite(v):
    return None if v is None or (type(v) is float and (math.isnan(v) or math.isinf(v))) else v


class Learner:
    """Trains ``model`` with ``optimizer`` on ``loss(logits, targets)``.

    - ``metrics``: names or ``Metric``s (see ``ember.accel.train.metrics``); the loss is always
      measured. Split metrics are logged as ``train_<name>`` and ``valid_<name>``.
    - ``epochs``; ``scheduler``: an ``ember.accel.optim.lr`` scheduler stepped once per optimizer
      step; ``grad_accumulation``: batches whose gradients are averaged into one optimizer step;
      ``clip_grad_norm``: clip the global gradient norm before each step.
    - ``early_stopping``: ``(metric, mode, patience)`` or an ``EarlyStopping``.
    - ``run_dir``: where ``metrics.csv``, ``metrics.jsonl`` and ``curves.png`` go;
      ``checkpoint_dir`` (default ``<run_dir>/checkpoints``): checkpoints after every epoch and when
      stopped, keeping the ``keep_last`` newest plus, with ``keep_best``, the best by ``monitor``
      (default: the early-stopping metric, else ``valid_loss``, else ``train_loss``).
    - ``strategy``: ``SingleDevice()`` (default), ``DataParallel(workers)`` or, across MPI ranks,
      ``ember.accel.distributed.DistributedDataParallel()`` (rank 0 then writes and reports).
    - ``device``: where to train (wrapped in ``Autodiff``); default the model's device.
    - ``compile``: "auto" (default) records the training step once and replays it
      (``ember.accel.compile``) where that applies: ``SingleDevice`` or
      ``DistributedDataParallel`` (its gradient all-reduce between two replayed plans), no gradient
      accumulation or clipping, an optimizer that declares itself capturable. True asks for it
      (an ``ArgumentError`` says why it does not apply); False always runs the step eagerly.
      A step that cannot be captured (a host read in the loss...) runs eagerly, with one warning.
    - ``progress``: "auto" (dashboard on a terminal, plain lines otherwise), "dashboard", "lines",
      None (silent) or a ``View``.
    """

    def __init__(self, model, optimizer, loss, metrics=DEFAULT_METRICS, epochs=10, scheduler=None,
                 grad_accumulation=1, early_stopping=None, checkpoint_dir=None, keep_last=2, keep_best=True,
                 monitor=None, strategy=None, device=None, run_dir=None, progress="auto", clip_grad_norm=None,
                 plot=True, compile="auto"):
        if not isinstance(model, Module):
            raise ArgumentTypeError("Learner: model must be an ember.nn.Module, found %s" % type(model).__name__)
        if not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError("Learner: optimizer must be an ember.accel.optim optimizer, found %s"
                                    % type(optimizer).__name__)
        if not callable(loss):
            raise ArgumentTypeError("Learner: loss must be callable (logits, targets) -> Tensor")
        if scheduler is not None and not isinstance(scheduler, LrScheduler):
            raise ArgumentTypeError("Learner: scheduler must be an ember.accel.optim.lr scheduler, found %s"
                                    % type(scheduler).__name__)
        if scheduler is not None and scheduler.optimizer not in (None, optimizer):
            raise ArgumentError("Learner: the scheduler drives another optimizer (%r), not this Learner's %r"
                                % (scheduler.optimizer, optimizer))
        for name, v, low in (("epochs", epochs, 1), ("grad_accumulation", grad_accumulation, 1)):
            if type(v) is not int or v < low:
                raise ArgumentError("Learner: %s must be an int >= %d, found %r" % (name, low, v))
        self.model = model
        self.optimizer = optimizer
        self.loss = loss
        self.epochs = epochs
        self.scheduler = scheduler
        self.grad_accumulation = grad_accumulation
        self.clip_grad_norm = clip_grad_norm
        if strategy is not None and not isinstance(strategy, Strategy):
            raise ArgumentTypeError("Learner: strategy must be SingleDevice(), DataParallel(n) or "
                                    "ember.accel.distributed.DistributedDataParallel() (a Strategy), found %s"
                                    % type(strategy).__name__)
        self.strategy = strategy if strategy is not None else SingleDevice()
        self.plot = plot
        metrics = [M.make(m) for m in metrics]
        if not any(isinstance(m, M.Loss) for m in metrics):
            metrics.insert(0, M.Loss())
        self.split_metrics = [m for m in metrics if m.split]
        self.run_metrics = [m for m in metrics if not m.split]
        self.formats = {m.name: m.fmt for m in metrics}
        if early_stopping is not None and not isinstance(early_stopping, EarlyStopping):
            if type(early_stopping) not in (tuple, list) or not 1 <= len(early_stopping) <= 4:
                raise ArgumentTypeError("Learner: early_stopping must be (metric, mode, patience) or an "
                                        "EarlyStopping, found %r" % (early_stopping,))
            early_stopping = EarlyStopping(*early_stopping)
        self.early_stopping = early_stopping
        self._monitor = monitor
        self.run_dir = None if run_dir is None else os.fspath(run_dir)
        if checkpoint_dir is None and self.run_dir is not None:
            checkpoint_dir = os.path.join(self.run_dir, "checkpoints")
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        self.keep_last = keep_last
        self.keep_best = keep_best
        self.view = choose(progress) if self.strategy.is_main else View()  # one dashboard for many ranks
        self.view.bind(self)
        self.device = self._training_device(device)
        self.compiled = self._compiled_step(compile)
        self.history = []
        self._stop = None
        self._stop_announced = False
        self._writing = False

    # -- setup -----------------------------------------------------------------------------------------
    def _compiled_step(self, choice):
        """The captured training step (``ember.accel.compile``), or None where it does not apply."""
        if choice not in ("auto", True, False):
            raise ArgumentError("Learner: compile must be 'auto', True or False, found %r" % (choice,))
        if choice is False:
            return None
        why = None
        step = self.strategy.compiled_step()
        if step is None:
            why = "the strategy is %r (capture needs SingleDevice or DistributedDataParallel)" % (self.strategy,)
        elif self.grad_accumulation != 1:
            why = "gradients are accumulated over %d batches" % self.grad_accumulation
        elif self.clip_grad_norm is not None:
            why = "gradients are clipped"
        elif not getattr(self.optimizer, "CAPTURE", False):
            why = "%s is not capturable" % type(self.optimizer).__name__
        if why is not None:
            if choice is True:
                raise ArgumentError("Learner: compile=True does not apply: %s" % why)
            return None
        return step

    def _training_device(self, device):
        params = self.model.parameters()
        if device is None:
            if not params:
                raise ArgumentError("Learner: the model has no parameters")
            device = params[0].value.device
        if grad_device(device) is None:
            device = Autodiff(device)
        self.model.to(device)
        track(self.model)
        return device

    def _metric_direction(self, name):
        for m in self.split_metrics:
            if name in ("train_" + m.name, "valid_" + m.name):
                return "max" if m.higher_is_better else "min"
        for m in self.run_metrics:
            if name == m.name:
                return "max" if m.higher_is_better else "min"
        return "min"

    # -- stopping ---------------------------------------------------------------------------------------
    def request_stop(self, reason="request"):
        """Stop after the current optimizer step (a checkpoint is written first). Safe to call from
        any thread and from a signal handler (it only sets a flag; the training loop reports it):
        what the dashboard's ``q``, Ctrl-C and SIGTERM call."""
        if self._stop is None:
            self._stop = reason

    def _announce_stop(self):
        if self._stop is not None and not self._stop_announced:
            self._stop_announced = True
            hint = " (press Ctrl-C twice more to abort at once)" if self._stop == "Ctrl-C" else ""
            self.view.message("stop requested (%s): finishing the current step%s" % (self._stop, hint))

    @property
    def stop_requested(self):
        """Whether a stop was requested (``request_stop``, ``q``, Ctrl-C, SIGTERM)."""
        return self._stop is not None

    # -- running ----------------------------------------------------------------------------------------
    def fit(self, train, valid=None, resume=None, discard_newer=False):
        """Train on ``train`` (a ``DataLoader``), validating on ``valid`` after every epoch; returns
        a ``FitResult``. ``resume``: "latest" (or True) continues from the checkpoint written last
        in ``checkpoint_dir`` when there is one; a checkpoint folder continues from it.

        A resumed run owns its lineage (``ember.accel.train.checkpoint``): resumed from the newest
        checkpoint of its lineage it continues it; resumed from an older one, it keeps the newer
        ones and writes a new lineage beside them (``epoch-002-run2``...), which "latest" then
        means. ``discard_newer=True`` deletes the newer checkpoints of the resume point's lineage
        instead, and the run continues that lineage.

        Ctrl-C and SIGTERM stop after the current step with a checkpoint; a third Ctrl-C aborts
        at once, but never in the middle of a checkpoint write."""
        self._stop, self._stop_announced = None, False
        with _SignalStop(self):
            return self.view.run(lambda: self.train_loop(train, valid, resume, discard_newer))

    def _to_device(self, batch):
        if type(batch) is not tuple and type(batch) is not list or len(batch) != 2:
            raise ArgumentTypeError("Learner: a batch must be (inputs, targets), found %s" % type(batch).__name__)
        out = []
        for v in batch:
            if isinstance(v, Tensor):
                out.append(v.to(self.device))
            else:
                out.append(to_tensors(v, self.device))
        return out

    def evaluate(self, loader):
        """The split metrics over ``loader`` (no gradients, eval mode), as ``{name: value}``."""
        for m in self.split_metrics:
            m.reset()
        self.model.eval()
        try:
            with no_grad():
                for batch in loader.epoch(0):
                    x, y = self._to_device(batch)
                    logits = self.model(x)
                    loss = self.loss(logits, y).item()
                    out = M.StepOutput(_numpy(logits), _numpy(y), loss, y.shape[0])
                    for m in self.split_metrics:
                        m.update(out)
        finally:
            self.model.train()
        return {m.name: m.compute() for m in self.split_metrics}

    def _monitor_name(self, valid):
        if self._monitor is not None:
            return self._monitor
        if self.early_stopping is not None:
            return self.early_stopping.metric
        return "valid_loss" if valid is not None else "train_loss"

    def _checkpoints(self, monitor):
        if self.checkpoint_dir is None:
            return None
        mode = self.early_stopping.mode if self.early_stopping is not None and \
            self.early_stopping.metric == monitor else self._metric_direction(monitor)
        store = ckpt.Checkpoints(self.checkpoint_dir, self.keep_last, self.keep_best, mode) \
            if self.strategy.is_main else None
        self.strategy.agree(None)  # the other ranks look at the folder once the main one has cleaned it
        return store or ckpt.Checkpoints(self.checkpoint_dir, self.keep_last, self.keep_best, mode)

    def _save(self, store, epoch, batch, monitor, accumulators, lineage):
        if store is None:
            return None
        metric = _finite(self.history[-1].get(monitor)) if batch == 0 and self.history else None
        state = {
            "format": FORMAT,
            "position": [epoch, batch],
            "metric": metric,
            "monitor": monitor,
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "rng": _rng_states(),
            "early_stopping": None if self.early_stopping is None else self.early_stopping.state_dict(),
            "metrics": accumulators,
            "history": [{k: _finite(v) for k, v in r.items()} for r in self.history],
            "lineage": lineage,
        }
        model, optimizer = self.model, self.optimizer

        def write_files(folder):
            model.save(os.path.join(folder, ckpt.MODEL))
            optimizer.save(os.path.join(folder, ckpt.OPTIMIZER))

        self._writing = True
        try:
            path = None
            if self.strategy.is_main:  # one writer; the other ranks wait for it and learn its path
                path = store.save(ckpt.checkpoint_name(epoch, batch, lineage), write_files, state)
            return self.strategy.agree(path)
        finally:
            self._writing = False

    def _restore(self, path):
        state = ckpt.read_state(path)
        if state.get("format") != FORMAT:
            raise ArgumentError("Learner: %s is not a Learner checkpoint (format %r)" % (path, state.get("format")))
        self.model.load(os.path.join(path, ckpt.MODEL))
        track(self.model)
        self.optimizer.load(os.path.join(path, ckpt.OPTIMIZER))
        if self.scheduler is not None:
            if state.get("scheduler") is None:
                raise ArgumentError("Learner: %s was saved without a scheduler; this Learner has %r"
                                    % (path, self.scheduler))
            _from_state(path, "scheduler", self.scheduler.load_state_dict, state["scheduler"])
        if self.early_stopping is not None and state.get("early_stopping"):
            _from_state(path, "early_stopping", self.early_stopping.load_state_dict, state["early_stopping"])
        _from_state(path, "rng", _set_rng_states, state.get("rng"))
        self.history = _from_state(path, "history", _history, state.get("history"))
        metrics = state.get("metrics")
        if metrics is not None and (type(metrics) is not dict or [v for v in metrics.values() if type(v) is not dict]):
            raise RecordError("Learner: %s: %s field 'metrics' is %s, expected an object of objects"
                              % (path, ckpt.STATE, type(metrics).__name__))
        return state

    def _resume_point(self, store, resume):
        if resume is None or resume is False:
            return None
        if resume is True or resume == "latest":
            if store is None:
                raise ArgumentError("Learner: resume='latest' needs a checkpoint_dir or run_dir")
            latest = store.latest()
            return None if latest is None else latest.path
        path = os.fspath(resume)
        if not os.path.isdir(path):
            raise ArgumentError("Learner: resume=%r is not a checkpoint folder" % (resume,))
        return path

    def _lineage(self, store, resumed, discard_newer):
        """The lineage this run writes, and what the user should be told about it (or None)."""
        if store is None:
            return 1, None
        point = store.find(resumed) if resumed is not None else None
        if point is None:
            lineage = store.new_lineage()
            if lineage == 1:
                return 1, None
            return lineage, ("%s holds checkpoints of other runs; this run writes its own, named *-run%d, "
                             "and keeps theirs" % (store.folder, lineage))
        newer = store.newer(point)
        if not newer:
            return point.lineage, None
        names = ", ".join(c.name for c in newer)
        if discard_newer:
            if self.strategy.is_main:
                store.delete(newer)
            self.strategy.agree(None)
            return point.lineage, "resumed from %s: deleted the newer checkpoints %s (discard_newer=True)" % (
                point.name, names)
        lineage = store.new_lineage()
        return lineage, ("resumed from %s: the newer checkpoints %s are kept (fit(..., discard_newer=True) "
                         "deletes them); this run writes its own, named *-run%d, and resume='latest' will "
                         "continue this run" % (point.name, names, lineage))

    def train_loop(self, train, valid=None, resume=None, discard_newer=False):
        """The loop ``fit`` runs (in the calling thread, without the signal handlers): views that
        own the main thread, such as the dashboard, call it from their training thread."""
        if not isinstance(train, DataLoader):
            raise ArgumentTypeError("Learner.fit: train must be an ember.accel.data.DataLoader, found %s"
                                    % type(train).__name__)
        if valid is not None and not isinstance(valid, DataLoader):
            raise ArgumentTypeError("Learner.fit: valid must be a DataLoader or None, found %s" % type(valid).__name__)
        run = self._begin(train, valid, resume, discard_newer)
        self.model.train()
        try:
            while run.epoch < self.epochs:
                if not self._train_epoch(run, train):
                    run.stopped = "interrupted"
                    break
                if self._end_epoch(run, valid):
                    break
        finally:
            self.strategy.close()
        return self._finish(run)

    def _begin(self, train, valid, resume, discard_newer=False):
        run = _Run(self._monitor_name(valid), len(train), self.epochs * len(train))
        run.store = self._checkpoints(run.monitor)
        self.history = []
        run.resumed = self._resume_point(run.store, resume)
        if run.resumed is not None:
            state = self._restore(run.resumed)
            run.epoch, run.start_batch = state["position"]
            run.accumulators = state.get("metrics")
        run.lineage, note = self._lineage(run.store, run.resumed, discard_newer)
        run.log = RunLog(self.run_dir, self.history) if self.run_dir is not None and self.strategy.is_main else None
        self.view.fit_start({
            "model": type(self.model).__name__, "epochs": self.epochs, "batches": run.batches,
            "items": len(train.dataset), "device": repr(grad_device(self.device).inner), "start_epoch": run.epoch,
            "start_batch": run.start_batch, "resumed_from": run.resumed, "history": list(self.history),
            "metrics": [m.name for m in self.split_metrics], "formats": self.formats, "total": run.total,
        })
        if note is not None:
            self.view.message(note)
        run.started = time.perf_counter()
        return run

    def _reset_metrics(self, run):
        for m in self.split_metrics + self.run_metrics:
            m.reset()
            if run.accumulators is not None and m.name in run.accumulators:  # a run resumed mid-epoch
                _from_state(run.resumed, "metrics", m.load_state_dict, run.accumulators[m.name])
        run.accumulators = None

    def _train_epoch(self, run, train):
        """Train one epoch from ``run.start_batch`` on; False when stopped on request (after
        writing a mid-epoch checkpoint)."""
        run.epoch_start = time.perf_counter()
        self._reset_metrics(run)
        batch_i, run.start_batch = run.start_batch, 0
        pending, pending_n = None, 0  # gradients accumulated toward the next optimizer step
        items, seconds = 0, 0.0
        batches = train.epoch(run.epoch, start=batch_i)
        try:
            for batch in batches:
                t0 = time.perf_counter()
                x, y = self._to_device(batch)
                batch_i += 1
                if self.compiled is not None:  # forward, backward and the optimizer, captured
                    rate = self._next_rate()
                    if rate is not None:
                        self.optimizer.lr = rate
                    loss, logits = self.compiled(self.model, self.optimizer, self.loss, x, y)
                    self._after_optimizer_step()
                    loss = loss.item() if isinstance(loss, Tensor) else loss
                    logits, y = self.strategy.outputs(logits, y)
                else:
                    grads, loss, logits = self.strategy.step(self.model, self.loss, x, y)
                    logits, y = self.strategy.outputs(logits, y)
                    pending = grads if pending is None else pending + grads
                    pending_n += 1
                    if pending_n == self.grad_accumulation or batch_i == run.batches:
                        self._optimizer_step(pending if pending_n == 1 else pending * (1.0 / pending_n))
                        pending, pending_n = None, 0
                took = time.perf_counter() - t0
                items += y.shape[0]
                seconds += took
                out = M.StepOutput(_numpy(logits), _numpy(y), loss, y.shape[0], self.optimizer.lr, took)
                for m in self.split_metrics + self.run_metrics:
                    m.update(out)
                self._report_step(run, batch_i, out, items / seconds if seconds else None)
                self._stop = self.strategy.agree_stop(self._stop)
                self._announce_stop()
                if self._stop is not None and pending is None and batch_i < run.batches:
                    accumulators = {m.name: m.state_dict() for m in self.split_metrics + self.run_metrics}
                    run.checkpoint = self._save(run.store, run.epoch, batch_i, run.monitor, accumulators,
                                                run.lineage)
                    self._announce_checkpoint(run)
                    return False
        finally:
            close = getattr(batches, "close", None)  # stops the loader's worker threads
            if close is not None:
                close()
        return True

    def _optimizer_step(self, grads):
        if self.clip_grad_norm is not None:
            grads = grads.clip_by_norm(self.clip_grad_norm)
        self.optimizer.step(grads, lr=self._next_rate())
        self._after_optimizer_step()

    def _next_rate(self):
        # the rate of this optimizer step from a scheduler of rates (None: no scheduler, or one in
        # PyTorch's form, which set the groups' rates when built and advances after each step)
        if self.scheduler is None or self.scheduler.optimizer is not None:
            return None
        return self.scheduler.step()

    def _after_optimizer_step(self):
        if self.scheduler is not None and self.scheduler.optimizer is not None:
            self.scheduler.step()

    def _report_step(self, run, batch_i, out, items_per_s):
        run.steps += 1
        elapsed = time.perf_counter() - run.started
        position = run.epoch * run.batches + batch_i
        self.view.step({
            "epoch": run.epoch, "epochs": self.epochs, "batch": batch_i, "batches": run.batches,
            "position": position, "total": run.total, "loss": out.loss,
            "train": {m.name: m.compute() for m in self.split_metrics},
            "batch_values": {m.name: m.batch_value(out) for m in self.split_metrics},
            "lr": out.lr, "items_per_s": items_per_s, "elapsed": elapsed,
            "eta": elapsed / run.steps * (run.total - position), "formats": self.formats,
        })

    def _end_epoch(self, run, valid):
        """Validate, log, checkpoint; True when training should end here (early stop or a stop
        request)."""
        record = {"epoch": run.epoch + 1}
        for m in self.split_metrics:
            record["train_" + m.name] = m.compute()
        if valid is not None:
            for name, v in self.evaluate(valid).items():
                record["valid_" + name] = v
        for m in self.run_metrics:
            record[m.name] = m.compute()
        record["epoch_seconds"] = time.perf_counter() - run.epoch_start
        self.history.append(record)
        if run.log is not None:
            run.log.append(record, self.history)
        self.view.epoch_end(record)
        es = self.early_stopping
        stop_early = False
        if es is not None:
            if es.metric not in record:
                raise ArgumentError("Learner: early stopping watches %r, but the logged metrics are %s"
                                    % (es.metric, ", ".join(sorted(record))))
            stop_early = self.strategy.agree(es.update(record[es.metric], run.epoch + 1))
        run.epoch += 1
        run.checkpoint = self._save(run.store, run.epoch, 0, run.monitor, None, run.lineage)
        self._stop = self.strategy.agree_stop(self._stop)
        if stop_early:
            self.view.message("early stopping: %s has not improved for %d epochs (best %.4f at epoch %s)"
                              % (es.metric, es.bad_epochs, es.best, es.best_epoch))
            run.stopped = "early_stopping"
            return True
        if self._stop is not None:
            self._announce_stop()
            self._announce_checkpoint(run)
            run.stopped = "interrupted"
            return True
        return False

    def _announce_checkpoint(self, run):
        if run.checkpoint:
            self.view.message("checkpoint %s written: resume with fit(..., resume='latest')" % run.checkpoint)

    def _finish(self, run):
        seconds = time.perf_counter() - run.started
        best = run.store.best(run.lineage) if run.store is not None else None
        if self.plot and self.run_dir is not None and self.history and self.strategy.is_main:
            plot_curves(self.history, os.path.join(self.run_dir, CURVES))
        result = FitResult(list(self.history), run.stopped, run.checkpoint, best.path if best else None, seconds,
                           self.run_dir, run.monitor, self._stop if run.stopped == "interrupted" else None)
        self.view.fit_end(result)
        return result


class _Run:
    """The state of one ``train_loop``: position, where it reports and what it has written."""

    def __init__(self, monitor, batches, total):
        self.monitor = monitor
        self.batches = batches
        self.total = total
        self.epoch = 0
        self.start_batch = 0
        self.accumulators = None
        self.store = None
        self.log = None
        self.resumed = None
        self.lineage = 1
        self.started = 0.0
        self.epoch_start = 0.0
        self.steps = 0
        self.stopped = "completed"
        self.checkpoint = None


def _numpy(t):
    if isinstance(t, np.ndarray):
        return t
    if t.device is not None and grad_device(t.device) is not None:
        t = t.detach()
    return t.numpy()


__all__ = ["Learner", "EarlyStopping", "FitResult", "DEFAULT_METRICS"]
