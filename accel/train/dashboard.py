"""The training dashboard (F8): a terminal UI over a running ``Learner``, built with textual.

                         ember — training DigitsCNN on Cpu()
    epoch 11/30 · batch 13/41 · step 423/1230 · lr 0.00368 · 2706 items/s · elapsed 0:05
    ━━━━━━━━━━━╺━━━━━━━━━━━━━━━━━━━━  34% 00:00:11
    ◀ loss ▶   train (per batch, smoothed)  valid (per epoch)   recent 100 steps (↑↓ to switch)
    <a braille line chart of the metric>
    <last epoch: each metric, train beside valid>    <log: epochs, checkpoints, stops>
    ↑ recent/full  ← metric  → metric  q stop after this step

The Learner trains in a background thread and posts its events to a queue that the app drains
five times a second, so training never waits for the screen. ``q`` (and Ctrl-C, which the app
receives as a key) asks the Learner to stop after the current step; it writes a checkpoint and
the app closes when training has ended.
"""
import queue
import threading

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Header, ProgressBar, RichLog, Static

from . import chart
from .progress import View, format_seconds, format_value

TRAIN_STYLE = "cyan"
VALID_STYLE = "magenta"
MAX_POINTS = 20000
SMOOTHING = 0.9  # the train curve is a moving average of per-batch values with this decay


class Dashboard(View):
    """The textual dashboard as a Learner view. ``recent``: how many steps the "recent" history
    shows (default: two epochs, at least 100); ``linger``: seconds the final screen stays up."""

    def __init__(self, recent=None, linger=1.0, refresh=0.2):
        self.recent = recent
        self.linger = linger
        self.refresh = refresh
        self.events = queue.SimpleQueue()
        self.learner = None
        self.app = None

    def bind(self, learner):
        self.learner = learner

    # -- events from the training thread (any thread: they only enqueue) -----------------------------
    def fit_start(self, info):
        self.events.put(("fit_start", info))

    def step(self, info):
        self.events.put(("step", info))

    def epoch_end(self, record):
        self.events.put(("epoch_end", record))

    def message(self, text):
        self.events.put(("message", text))

    def fit_end(self, result):
        self.events.put(("fit_end", result))

    # -- running --------------------------------------------------------------------------------------
    def app_for(self, fn):
        """The textual app that runs ``fn`` (the training loop) in a thread while it shows its
        progress; ``app.run()``, or ``app.run_test()`` headless. ``app.outcome`` holds
        ``("ok", result)`` or ``("error", exception)`` once ``fn`` has returned."""
        self.app = DashboardApp(self, fn)
        return self.app

    def run(self, fn):
        app = self.app_for(fn)
        app.run()
        if app.outcome is None:  # the app closed before training ended (it cannot, but never hang)
            app.join()
        kind, value = app.outcome
        if kind == "error":
            raise value
        for line in app.final_lines():
            print(line)
        return value


class DashboardApp(App):
    CSS = """
    #status { height: 1; padding: 0 1; }
    #progress { height: 1; padding: 0 1; }
    #chart-title { height: 1; padding: 0 1; color: $text-muted; }
    #chart { height: 1fr; min-height: 8; padding: 0 1; }
    #bottom { height: 12; }
    #table { width: 1fr; padding: 0 1; }
    #log { width: 1fr; border: round $primary-darken-2; }
    """
    BINDINGS = [
        Binding("left", "metric(-1)", "metric", key_display="←", priority=True),
        Binding("right", "metric(1)", "metric", key_display="→", priority=True),
        Binding("up", "history", "recent/full", key_display="↑", priority=True),
        Binding("down", "history", "recent/full", key_display="↓", show=False, priority=True),
        Binding("q", "stop('q')", "stop after this step", priority=True),
        Binding("ctrl+c", "stop('Ctrl-C')", "stop", show=False, priority=True),
    ]
    TITLE = "ember"

    def __init__(self, view, fn):
        super().__init__()
        self.view = view
        self.fn = fn
        self.outcome = None
        self.info = None
        self.metric_names = ["loss"]
        self.metric_index = 0
        self.full_history = False
        self.train_points = {}
        self.smoothing = {}  # metric -> (moving average, count)
        self.valid_points = {}
        self.last_record = None
        self.last_step = None
        self.messages = []
        self.notes = []
        self.stopping = False
        self.training_thread = None
        self.closing = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("starting…", id="status")
        yield ProgressBar(total=None, show_eta=True, id="progress")
        yield Static("", id="chart-title")
        yield Static("", id="chart")
        with Horizontal(id="bottom"):
            yield Static("", id="table")
            yield RichLog(id="log", wrap=True, markup=False)
        yield Footer()

    def on_mount(self):
        self.set_interval(self.view.refresh, self.drain)
        self.training_thread = threading.Thread(target=self._train, name="ember-learner", daemon=True)
        self.training_thread.start()

    def _train(self):
        try:
            self.outcome = ("ok", self.fn())
        except BaseException as e:  # handed to Dashboard.run, which re-raises it
            self.outcome = ("error", e)
        self.view.events.put(("done", None))

    def join(self):
        if self.training_thread is not None:
            self.training_thread.join()

    # -- events ---------------------------------------------------------------------------------------
    def drain(self):
        changed = False
        while True:
            try:
                kind, payload = self.view.events.get_nowait()
            except queue.Empty:
                break
            changed = True
            getattr(self, "_event_" + kind)(payload)
        if changed:
            self.redraw()

    def _event_fit_start(self, info):
        self.info = info
        self.sub_title = "training %s on %s" % (info["model"], info["device"])
        self.metric_names = list(info["metrics"])
        self.query_one("#progress", ProgressBar).update(total=info["total"],
                                                         progress=info["start_epoch"] * info["batches"]
                                                         + info["start_batch"])
        batches = info["batches"]
        for record in info["history"]:  # a resumed run: earlier epochs, one point each
            self._add_record(record, record["epoch"] * batches)
            for key, value in record.items():
                if key.startswith("train_"):
                    self.train_points.setdefault(key[6:], []).append((record["epoch"] * batches, value))
        if info.get("resumed_from"):
            self.add_message("resumed from %s" % info["resumed_from"])

    def _event_step(self, info):
        self.last_step = info
        for name, value in info["batch_values"].items():
            if value != value:
                continue
            # an exponential moving average of the per-batch values (bias-corrected at the start)
            avg, count = self.smoothing.get(name, (0.0, 0))
            avg, count = SMOOTHING * avg + (1 - SMOOTHING) * value, count + 1
            self.smoothing[name] = (avg, count)
            pts = self.train_points.setdefault(name, [])
            pts.append((info["position"], avg / (1 - SMOOTHING ** count)))
            if len(pts) > MAX_POINTS:
                del pts[::2]
        self.query_one("#progress", ProgressBar).update(progress=info["position"])

    def _add_record(self, record, position):
        self.last_record = record
        for key, value in record.items():
            if key.startswith("valid_"):
                self.valid_points.setdefault(key[6:], []).append((position, value))

    def _event_epoch_end(self, record):
        position = record["epoch"] * self.info["batches"] if self.info else record["epoch"]
        self._add_record(record, position)
        split = "valid" if "valid_loss" in record else "train"
        self.add_message("epoch %d %s: %s" % (record["epoch"], split, " ".join(
            "%s %s" % (k[len(split) + 1:], format_value(v)) for k, v in record.items()
            if k.startswith(split + "_"))), note=False)

    def _event_message(self, text):
        self.add_message(text)

    def _event_fit_end(self, result):
        self.add_message(result.summary())

    def _event_done(self, _):
        if not self.closing:
            self.closing = True
            if self.view.linger > 0:
                self.set_timer(self.view.linger, self.exit)
            else:
                self.exit()

    def add_message(self, text, note=True):
        """Show ``text`` in the log panel; notes (not the per-epoch lines) also stay on the terminal
        after the dashboard closes."""
        self.messages.append(text)
        if note:
            self.notes.append(text)
        try:
            self.query_one("#log", RichLog).write(text)
        except Exception:  # noqa: BLE001 - before compose or after exit
            pass

    # -- drawing --------------------------------------------------------------------------------------
    @property
    def metric(self):
        return self.metric_names[self.metric_index % len(self.metric_names)]

    def recent_steps(self):
        if self.view.recent is not None:
            return self.view.recent
        batches = self.info["batches"] if self.info else 50
        return max(100, 2 * batches)

    def redraw(self):
        status = self.query_one("#status", Static)
        s = self.last_step
        if s is not None:
            text = "epoch %d/%d · batch %d/%d · step %d/%d · lr %s · %s items/s · elapsed %s" % (
                s["epoch"] + 1, s["epochs"], s["batch"], s["batches"], s["position"], s["total"],
                format_value(s["lr"], "%.3g"), format_value(s["items_per_s"], "%.0f"),
                format_seconds(s["elapsed"]))
            if self.stopping:
                text += " · stopping after this step"
            status.update(text)
        name = self.metric
        window = "full history" if self.full_history else "recent %d steps" % self.recent_steps()
        self.query_one("#chart-title", Static).update(
            "◀ %s ▶   [%s]train (per batch, smoothed)[/]  [%s]valid (per epoch)[/]   %s (↑↓ to switch)"
            % (name, TRAIN_STYLE, VALID_STYLE, window))
        self._draw_chart()
        self._draw_table()

    def _draw_chart(self):
        widget = self.query_one("#chart", Static)
        size = widget.content_size
        width, height = max(20, size.width), max(4, size.height)
        train = self.train_points.get(self.metric, [])
        valid = self.valid_points.get(self.metric, [])
        if not self.full_history and train:
            start = train[-1][0] - self.recent_steps()
            train = [p for p in train if p[0] >= start]
            valid = [p for p in valid if p[0] >= start]
        widget.update(chart.render([(train, TRAIN_STYLE), (valid, VALID_STYLE)], width, height))

    def _draw_table(self):
        r = self.last_record
        table = Table(box=None, padding=(0, 2), expand=False, title="last epoch" if r else "no epoch yet",
                      title_justify="left")
        table.add_column("metric")
        table.add_column("train", style=TRAIN_STYLE, justify="right")
        table.add_column("valid", style=VALID_STYLE, justify="right")
        if r:
            formats = self.info["formats"] if self.info else {}
            for name in self.metric_names:
                style = "bold" if name == self.metric else ""
                table.add_row(name, format_value(r.get("train_" + name), formats.get(name, "%.4f")),
                              format_value(r.get("valid_" + name), formats.get(name, "%.4f")), style=style)
            for key in ("lr", "items_per_s", "cpu_percent", "memory_mb"):
                if key in r:
                    table.add_row(key, format_value(r[key], formats.get(key, "%.4g")), "")
        self.query_one("#table", Static).update(table)

    def on_resize(self, event):
        if self.info is not None:
            self._draw_chart()

    # -- keys -----------------------------------------------------------------------------------------
    def action_metric(self, delta):
        self.metric_index = (self.metric_index + delta) % len(self.metric_names)
        self.redraw()

    def action_history(self):
        self.full_history = not self.full_history
        self.redraw()

    def action_stop(self, key="q"):
        if self.view.learner is not None:
            self.view.learner.request_stop(key)
        if not self.stopping:
            self.stopping = True
            self.add_message("stopping after the current step: a checkpoint is written, then the dashboard closes")
        self.redraw()

    # -- after the app -------------------------------------------------------------------------------
    def final_lines(self):
        """What stays on the terminal after the dashboard closes: the last epoch and the notes."""
        lines = []
        r = self.last_record
        if r:
            lines.append("epoch %d: %s" % (r["epoch"], " ".join(
                "%s %s" % (k, format_value(v)) for k, v in r.items() if k.startswith(("train_", "valid_")))))
        lines.extend(self.notes)
        return lines


__all__ = ["Dashboard", "DashboardApp"]
