"""How a run reports itself: ``View`` (silent), ``ProgressLines`` (plain lines, for pipes and CI) and
``choose`` (the dashboard on a terminal, lines elsewhere).

The Learner calls a view's methods from its training thread: ``fit_start(info)``, ``step(info)``
after every optimizer step, ``epoch_end(record)``, ``message(text)`` and ``fit_end(result)``.
``run(fn)`` runs the training function ``fn`` and returns its result: a plain view calls it; the
dashboard runs it in a thread while its terminal UI owns the main thread.
"""
import sys
import time

from ..text import format_seconds  # noqa: F401  (the dashboard and the CLI use it too)


def format_value(v, fmt="%.4f"):
    if v is None or v != v:
        return "-"
    return fmt % v


class View:
    """A view that shows nothing; the base of every view."""

    def bind(self, learner):
        """Called by the Learner that reports to this view."""

    def run(self, fn):
        """Run the training function ``fn`` and return its result (a plain view just calls it)."""
        return fn()

    def fit_start(self, info):
        """Training starts; ``info`` holds the model, device, epochs, batches and items."""
        pass

    def step(self, info):
        """An optimizer step ended; ``info`` holds the epoch, batch and the metrics so far."""
        pass

    def epoch_end(self, record):
        """An epoch ended; ``record`` is its logged dict (every metric, per split)."""
        pass

    def message(self, text):
        """Show a one-line message (a checkpoint written, an early stop, an interruption)."""
        pass

    def fit_end(self, result):
        """Training ended; ``result`` is the ``FitResult``."""
        pass


class ProgressLines(View):
    """Plain progress lines on ``stream`` (stdout by default): one per epoch with every metric, one
    for each message (checkpoint, early stop, interruption), and during an epoch a step line at
    most every ``interval`` seconds::

        epoch 2/20 batch 30/45 (67%) | train loss 0.3127 accuracy 0.9042 | lr 0.00488 | 1520 items/s | eta 0:21
        epoch 2/20 done in 1.1 s | train loss 0.2811 accuracy 0.9140 | valid loss 0.2013 accuracy 0.9375 |
            lr 0.00488 1520 items/s cpu 99% 48 MB      (one line, cut here to fit)
    """

    def __init__(self, stream=None, interval=5.0):
        self.stream = stream
        self.interval = interval
        self._last = 0.0
        self.info = None

    def _print(self, text):
        stream = self.stream if self.stream is not None else sys.stdout
        stream.write(text + "\n")
        stream.flush()

    def fit_start(self, info):
        self.info = info
        self._last = time.perf_counter()
        where = " from %s" % info["resumed_from"] if info.get("resumed_from") else ""
        self._print("training %s: %d epochs of %d batches (%d items) on %s%s"
                    % (info["model"], info["epochs"], info["batches"], info["items"], info["device"], where))

    def step(self, info):
        now = time.perf_counter()
        if now - self._last < self.interval or info["batch"] == info["batches"]:
            return
        self._last = now
        self._print("epoch %d/%d batch %d/%d (%d%%) | train %s | lr %s | %s items/s | eta %s" % (
            info["epoch"] + 1, info["epochs"], info["batch"], info["batches"],
            100 * info["batch"] // info["batches"], _metrics(info["train"], info["formats"]),
            format_value(info["lr"], "%.3g"), format_value(info["items_per_s"], "%.0f"),
            format_seconds(info["eta"])))

    def epoch_end(self, record):
        formats = self.info["formats"] if self.info else {}
        parts = ["epoch %d/%d done in %.1f s" % (record["epoch"], self.info["epochs"] if self.info else 0,
                                                 record["epoch_seconds"])]
        for split in ("train", "valid"):
            values = {k[len(split) + 1:]: v for k, v in record.items() if k.startswith(split + "_")}
            if values:
                parts.append("%s %s" % (split, _metrics(values, formats)))
        run = [_RUN_LABELS[k] % format_value(record[k], formats.get(k, "%.4g")) for k in _RUN_LABELS if k in record]
        if run:
            parts.append(" ".join(run))
        self._print(" | ".join(parts))
        self._last = time.perf_counter()

    def message(self, text):
        self._print(text)

    def fit_end(self, result):
        self._print(result.summary())


_RUN_LABELS = {"lr": "lr %s", "items_per_s": "%s items/s", "cpu_percent": "cpu %s%%", "memory_mb": "%s MB"}


def _metrics(values, formats):
    return " ".join("%s %s" % (k, format_value(v, formats.get(k, "%.4f"))) for k, v in values.items())


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def choose(progress):
    """The view for ``Learner(progress=...)``: ``"auto"`` gives the dashboard when stdin and stdout
    are terminals and textual is installed, else ``ProgressLines``; ``"dashboard"``, ``"lines"``;
    None or False: silent; a ``View``: itself."""
    if isinstance(progress, View):
        return progress
    if progress is None or progress is False:
        return View()
    if progress == "lines":
        return ProgressLines()
    if progress in ("auto", "dashboard"):
        if progress == "auto" and not (_is_terminal(sys.stdout) and _is_terminal(sys.stdin)):
            return ProgressLines()
        try:
            from .dashboard import Dashboard
        except ImportError as e:
            if progress == "dashboard":
                raise ImportError("Learner: the dashboard needs textual (pip install ember[train]): %s" % e)
            print("(no dashboard: textual is not installed; pip install ember[train] gives it)")
            return ProgressLines()
        return Dashboard()
    from ember.errors import ArgumentError
    raise ArgumentError("Learner: progress must be 'auto', 'dashboard', 'lines', None or a View, found %r"
                        % (progress,))
