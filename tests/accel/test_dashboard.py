"""The training dashboard driven headless through textual's pilot: live status, progress and chart,
arrow keys switching the metric and the history window, ``q`` and Ctrl-C stopping the Learner
after the current step with a checkpoint; the braille chart itself; and which view a run gets."""
import asyncio
import io
import os
import re
import sys
import time

import pytest

pytest.importorskip("textual")

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.accel.data import DataLoader, load_digits  # noqa: E402
from ember.accel.optim import Adam  # noqa: E402
from ember.accel.train import Dashboard, Learner, ProgressLines, read_state  # noqa: E402
from ember.accel.train import chart  # noqa: E402
from ember.accel.train.progress import choose  # noqa: E402
from rich.console import Console  # noqa: E402
from textual.widgets import ProgressBar, Static  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_learner import MLP  # noqa: E402

EPOCHS = 200  # never reached: each test stops the run


def _learner(tmp_path, dashboard):
    train, valid = load_digits().split(0.2, seed=0, stratify=True)
    slow = train.map(lambda batch: (time.sleep(0.005), batch)[1], batched=True)
    model = MLP()
    learner = Learner(model, Adam(model, lr=1e-2), F.cross_entropy, epochs=EPOCHS, run_dir=str(tmp_path),
                      metrics=["accuracy", "f1", "lr", "speed"], progress=dashboard, device=ember.Cpu(), plot=False)
    loaders = DataLoader(slow, 64, shuffle=True, seed=1), DataLoader(valid, 512)
    return learner, loaders


def _text(app, selector):
    content = app.query_one(selector, Static).content
    if isinstance(content, str):
        return content
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


async def _until(pilot, cond, timeout=60.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        await pilot.pause(0.05)


def _drive(tmp_path, keys_then_check, stop_key):
    dashboard = Dashboard(linger=0.0, refresh=0.05)
    learner, (train, valid) = _learner(tmp_path, dashboard)
    app = dashboard.app_for(lambda: learner.train_loop(train, valid))
    assert learner.view is dashboard

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            # one epoch done: the valid curve and the table have data
            await _until(pilot, lambda: app.last_record is not None and app.last_step is not None)
            await keys_then_check(app, pilot)
            await pilot.press(stop_key)
            await _until(pilot, lambda: app.outcome is not None)
            await _until(pilot, lambda: not app.is_running)  # the app closes by itself

    asyncio.run(main())
    kind, result = app.outcome
    assert kind == "ok", result
    return app, result


def test_arrow_keys_and_q(tmp_path):
    async def keys(app, pilot):
        assert app.metric == "loss" and "◀ loss ▶" in _text(app, "#chart-title")
        status = _text(app, "#status")
        assert re.match(r"epoch \d+/200 · batch \d+/23 · step \d+/4600 · lr 0\.01 · \d+ items/s · elapsed",
                        status), status
        bar = app.query_one("#progress", ProgressBar)
        assert bar.total == EPOCHS * 23 and bar.progress > 0
        chart_text = _text(app, "#chart")
        assert any(0x2800 < ord(c) <= 0x28FF for c in chart_text)  # braille dots: a plotted curve
        table = _text(app, "#table")
        assert "last epoch" in table
        assert re.search(r"accuracy +\d\.\d{4} +\d\.\d{4}", table), table
        await pilot.press("right")
        assert app.metric == "accuracy" and "◀ accuracy ▶" in _text(app, "#chart-title")
        await pilot.press("right")
        assert app.metric == "f1"
        await pilot.press("right")  # wraps around
        assert app.metric == "loss"
        await pilot.press("left")
        assert app.metric == "f1"
        assert "recent" in _text(app, "#chart-title") and not app.full_history
        await pilot.press("up")
        assert app.full_history and "full history" in _text(app, "#chart-title")
        await pilot.press("down")
        assert not app.full_history

    app, result = _drive(tmp_path, keys, "q")
    assert result.stopped == "interrupted" and result.stop_reason == "q"
    assert any("stopping after the current step" in m for m in app.messages)
    assert any("stop requested (q)" in m for m in app.messages)
    assert result.checkpoint and os.path.isdir(result.checkpoint)
    state = read_state(result.checkpoint)
    assert state["position"][0] == len(result.history)
    MLP().load(os.path.join(result.checkpoint, "model.safetensors"))
    assert app.final_lines() and "stopped on request" in app.final_lines()[-1]


def test_ctrl_c_key_stops_too(tmp_path):
    async def keys(app, pilot):
        pass

    app, result = _drive(tmp_path, keys, "ctrl+c")
    assert result.stopped == "interrupted" and result.stop_reason == "Ctrl-C" and os.path.isdir(result.checkpoint)
    assert any("stop requested (Ctrl-C)" in m for m in app.messages)


def test_training_errors_reach_the_caller():
    dashboard = Dashboard(linger=0.0)

    def broken():
        raise ValueError("no data")

    app = dashboard.app_for(broken)

    async def main():
        async with app.run_test(size=(80, 24)) as pilot:
            await _until(pilot, lambda: not app.is_running, timeout=10)

    asyncio.run(main())
    kind, error = app.outcome
    assert kind == "error" and str(error) == "no data"


def test_chart_draws_both_series_in_its_box():
    train = [(i, 1.0 / (1 + i)) for i in range(100)]
    valid = [(10 * i, 0.5 / (1 + i)) for i in range(1, 10)]
    text = chart.render([(train, "cyan"), (valid, "magenta")], 60, 12, x_label="step")
    lines = text.plain.split("\n")
    assert len(lines) == 12 and all(len(line) == 60 for line in lines[:-1])
    assert lines[0].strip().startswith("1.0") and "│" in lines[0]
    assert lines[-1].strip().startswith("└step 0") and lines[-1].rstrip().endswith("99")
    assert {span.style for span in text.spans} >= {"cyan", "magenta"}
    empty = chart.render([([], "cyan")], 40, 6)
    assert "waiting for data" in empty.plain
    flat = chart.render([([(0, 2.0), (1, 2.0), (2, float("nan"))], "cyan")], 40, 6)
    assert "2" in flat.plain.split("\n")[2]


class _Tty:
    def isatty(self):
        return True


def test_a_terminal_gets_the_dashboard(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert isinstance(choose("auto"), ProgressLines)
    monkeypatch.setattr(sys, "stdout", _Tty())
    monkeypatch.setattr(sys, "stdin", _Tty())
    assert isinstance(choose("auto"), Dashboard)
    assert isinstance(choose("lines"), ProgressLines)
