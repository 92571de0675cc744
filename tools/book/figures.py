"""The book's generated figures, from a real short training run on the digits (``make docs`` runs it).

    python tools/book/figures.py [OUT_DIR]      # default book/img/generated

- ``dashboard.svg``: the Learner's textual dashboard, driven headless through textual's pilot
  (``App.run_test``), saved with ``App.save_screenshot`` once three epochs have been validated;
- ``curves.png``: the curves the Learner itself writes into its run folder at the end of the run.

The run is the book's MLP (64-32-10) on the 1,437 training digits, validated on 360, 12 epochs
of Adam with a cosine schedule on ``ember.Cpu()``.
"""
import asyncio
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EPOCHS = 12
SIZE = (132, 34)  # the terminal the screenshot shows, in cells


def _learner(run_dir, view, epochs):
    import ember
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.accel.data import DataLoader, load_digits
    from ember.accel.optim import Adam, lr
    from ember.accel.train import Learner

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(64, 32), nn.Linear(32, 10)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    ember.seed(0)
    train, valid = load_digits().split(0.2, seed=0, stratify=True)
    # a few ms per batch so that the screen has time to draw the run as it goes
    slow = train.map(lambda batch: (time.sleep(0.004), batch)[1], batched=True)
    model = MLP()
    learner = Learner(model, Adam(model, lr=1e-2), F.cross_entropy, epochs=epochs, run_dir=run_dir,
                      scheduler=lr.CosineAnnealingLR(1e-2, T_max=epochs * 23), device=ember.Cpu(),
                      metrics=["accuracy", "f1", "lr", "speed"], progress=view)
    return learner, (DataLoader(slow, 64, shuffle=True, seed=1), DataLoader(valid, 512))


async def _until(pilot, cond, timeout):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise RuntimeError("figures: the dashboard did not reach the expected state in %.0f s" % timeout)
        await pilot.pause(0.05)


def make(out_dir, epochs=EPOCHS):
    """Train ``epochs`` epochs under the dashboard; write ``dashboard.svg`` and ``curves.png`` into ``out_dir``."""
    from ember.accel.train import Dashboard

    os.makedirs(out_dir, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="ember-book-run-")
    try:
        dashboard = Dashboard(linger=0.0, refresh=0.05)
        learner, (train, valid) = _learner(run_dir, dashboard, epochs)
        app = dashboard.app_for(lambda: learner.train_loop(train, valid))

        async def main():
            async with app.run_test(size=SIZE) as pilot:
                shown = min(3, epochs - 1)  # validated epochs on screen when it is taken
                await _until(pilot, lambda: len(learner.history) >= shown and app.last_step is not None, 120)
                await pilot.pause(0.3)  # one more refresh: the chart and the table show the latest epoch
                app.save_screenshot(filename="dashboard.svg", path=out_dir)
                await _until(pilot, lambda: app.outcome is not None, 300)
                await _until(pilot, lambda: not app.is_running, 60)

        asyncio.run(main())
        kind, result = app.outcome
        if kind != "ok":
            raise result
        curves = os.path.join(run_dir, "curves.png")
        if not os.path.exists(curves):
            raise RuntimeError("figures: the Learner wrote no curves.png into %s (is matplotlib installed?)"
                               % run_dir)
        shutil.copyfile(curves, os.path.join(out_dir, "curves.png"))
        print("figures: %s; wrote dashboard.svg and curves.png into %s"
              % (result.summary().split(";")[0], out_dir))
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    make(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "book", "img", "generated"))
