"""A run's folder: per-epoch metrics as ``metrics.csv`` and ``metrics.jsonl``, and at the end
``curves.png`` (matplotlib, from ``ember[train]``).

Both logs are rewritten from the run's history when a run starts or resumes, so a resumed run's
logs hold exactly the epochs its checkpoint had, then grow by one line per epoch.
"""
import csv
import json
import math
import os

CSV = "metrics.csv"
JSONL = "metrics.jsonl"
CURVES = "curves.png"


def _columns(history):
    cols = []
    for record in history:
        for k in record:
            if k not in cols:
                cols.append(k)
    return cols


def _json_value(v):
    return None if type(v) is float and (math.isnan(v) or math.isinf(v)) else v


class RunLog:
    """Appends epoch records (dicts with the same keys) to the CSV and JSONL files in ``folder``."""

    def __init__(self, folder, history=()):
        self.folder = os.fspath(folder)
        os.makedirs(self.folder, exist_ok=True)
        self.csv_path = os.path.join(self.folder, CSV)
        self.jsonl_path = os.path.join(self.folder, JSONL)
        self.columns = _columns(history)
        self._rewrite(list(history))

    def _rewrite(self, history):
        for path, write in ((self.csv_path, self._write_csv), (self.jsonl_path, self._write_jsonl)):
            tmp = path + ".tmp"
            with open(tmp, "w", newline="") as f:
                write(f, history, header=True)
            os.replace(tmp, path)

    def _write_csv(self, f, records, header):
        w = csv.writer(f)
        if header and self.columns:
            w.writerow(self.columns)
        for r in records:
            w.writerow(["" if r.get(c) is None else repr(r[c]) if type(r.get(c)) is float else r[c]
                        for c in self.columns])

    def _write_jsonl(self, f, records, header):
        for r in records:
            f.write(json.dumps({k: _json_value(v) for k, v in r.items()}) + "\n")

    def append(self, record, history):
        """Add ``record``; ``history`` (every record so far, this one included) rebuilds the CSV when
        the record brings a new column."""
        if any(k not in self.columns for k in record):
            self.columns = _columns(history)
            self._rewrite(history)
            return
        with open(self.csv_path, "a", newline="") as f:
            self._write_csv(f, [record], header=False)
        with open(self.jsonl_path, "a") as f:
            self._write_jsonl(f, [record], header=False)


def read_jsonl(path):
    """The records of a ``metrics.jsonl`` file (None where a value was NaN)."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def plot_curves(history, path):
    """Training curves as a PNG: one panel per metric with its train and valid values by epoch, and
    the learning rate. Returns ``path``, or None (with the reason printed) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no curves.png: matplotlib is not installed; pip install ember[train] gives it)")
        return None
    names = []
    for record in history:
        for k in record:
            for split in ("train_", "valid_"):
                if k.startswith(split) and k[len(split):] not in names:
                    names.append(k[len(split):])
    panels = names + (["lr"] if any("lr" in r for r in history) else [])
    if not history or not panels:
        return None
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    epochs = [r["epoch"] for r in history]
    for ax, name in zip(axes.flat, panels):
        keys = [("lr", "lr")] if name == "lr" else [("train_" + name, "train"), ("valid_" + name, "valid")]
        for key, label in keys:
            ys = [r.get(key) for r in history]
            if any(y is not None for y in ys):
                ax.plot(epochs, [float("nan") if y is None else y for y in ys], marker="o", markersize=3,
                        label=label)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.grid(alpha=0.3)
        if name != "lr":
            ax.legend()
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)
    return path
