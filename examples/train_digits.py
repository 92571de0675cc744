# cpython-only: trains on CPython, then runs examples/digits/classify.py under MicroPython itself
"""Train a small CNN on the 1,797 real 8x8 handwritten digits, then deploy it to MicroPython.

1. Data: ember's own copy of the UCI digits (``ember.accel.data.load_digits``). A stratified 20%
   is held out (never seen in training); 10% of the rest is the validation set.
2. Training: the ``Learner`` (AdamW, cosine schedule, label smoothing, early stopping, checkpoints, metrics logged to
   CSV/JSONL, curves.png) on the fastest backend here: the C kernels, else NumPy. A terminal shows
   the dashboard (arrows switch the plot, ``q`` stops after the current step); pipes get plain lines.
3. The weights go to a safetensors record; the held-out digits to a second small record.
4. MicroPython (the unix port, ``ember.accel.deploy.micropython.run_script``) loads the record
   into the same ``DigitsCNN`` on the pure-Python Cpu and classifies the held-out digits; both
   interpreters' accuracies are printed side by side, and their predictions must agree.
5. A board: ``ember deploy`` turns the record into an int8 bundle for the rp2040 profile (calibrated
   on 200 training digits) and checks it on MicroPython's unix port with the Pico's heap: heap,
   flash, time per image and accuracy beside CPython's.

    python examples/train_digits.py            # a fresh run
    python examples/train_digits.py --resume   # continue a run stopped with q or Ctrl-C
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "digits")  # the folder MicroPython gets: model definition, script, artifacts
ARTIFACTS = os.path.join(APP, "artifacts")
RUN = os.path.join(ARTIFACTS, "run")
BUNDLE = os.path.join(ARTIFACTS, "rp2040")  # the board bundle ember deploy writes
ROOT = os.path.dirname(HERE)
sys.path.insert(0, APP)

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember import record  # noqa: E402
from ember.accel.autodiff import no_grad  # noqa: E402
from ember.accel.data import DataLoader, load_digits  # noqa: E402
from ember.accel.optim import AdamW, lr  # noqa: E402
from ember.accel.train import Learner  # noqa: E402

from digits_cnn import DigitsCNN  # noqa: E402

SEED = 0
EPOCHS = 30
BATCH = 32
LR = 5e-3
TARGET = 0.97


def loss_fn(logits, labels):
    """Cross entropy with label smoothing 0.1: softer targets, better held-out accuracy here."""
    return F.cross_entropy(logits, labels, label_smoothing=0.1)


def fastest_device():
    """The C kernels when they are built, else NumPy, else the pure-Python Cpu (slow)."""
    try:
        return ember.Cpu(kernels="c"), "ember.Cpu with C kernels"
    except ImportError:
        pass
    try:
        from ember.accel import NumPy
        return NumPy(), "ember.accel.NumPy"
    except ImportError:
        print("note: neither the C kernels nor numpy is available: training on the pure-Python Cpu is slow")
        return ember.Cpu(kernels="python"), "ember.Cpu (pure Python)"


def size_kb(path):
    return "%.0f KB" % (os.path.getsize(path) / 1024)


def run_micropython():
    """Run classify.py under MicroPython's unix port (from the package: no checkout needed), its
    lines streamed as they come; the output, or None when the port is not installed."""
    from ember.accel.deploy.micropython import find_micropython, run_script
    from ember.errors import DeployError
    try:
        find_micropython()
    except DeployError as e:
        print("skipping the MicroPython half: %s" % e)
        return None
    print("$ micropython examples/digits/classify.py   (the unix port, ember's core beside it, a 64 MB heap)")
    status, lines = run_script(os.path.join(APP, "classify.py"),
                               on_line=lambda line: None if line.startswith("predictions:") else print("  mpy> " + line,
                                                                                                      flush=True))
    if status != 0:
        sys.exit("MicroPython failed (exit %d)" % status)
    return "\n".join(lines)


def deploy_to_board(weights, heldout_ds, train_ds):
    """The int8 bundle for a Raspberry Pi Pico, classifying the held-out digits on MicroPython's unix
    port with the Pico's heap; the report, or None when MicroPython's unix port is missing."""
    from ember.accel.deploy import deploy
    from ember.accel.deploy.run import micropython_binary
    from ember.errors import DeployError
    try:
        micropython_binary()
    except DeployError as e:
        print("skipping the board deployment: %s" % e)
        return None
    inputs = os.path.join(ARTIFACTS, "heldout_inputs.safetensors")
    x, y = heldout_ds.get_batch(range(len(heldout_ds)))
    record.write(inputs, [("inputs", ember.tensor(x.tobytes(), dtype=ember.float32, shape=x.shape)),
                          ("labels", ember.tensor(y.tolist(), dtype=ember.int32))])
    calibration = os.path.join(ARTIFACTS, "calibration.safetensors")
    cx, _ = train_ds.get_batch(range(200))
    record.write(calibration, [("inputs", ember.tensor(cx.tobytes(), dtype=ember.float32, shape=cx.shape))])
    print("$ ember deploy %s --board rp2040 --model examples/digits/digits_cnn.py:DigitsCNN --out %s "
          "--calibration %s --data %s --check" % (os.path.relpath(weights, ROOT), os.path.relpath(BUNDLE, ROOT),
                                                  os.path.relpath(calibration, ROOT), os.path.relpath(inputs, ROOT)))
    return deploy("rp2040", weights, os.path.join(APP, "digits_cnn.py") + ":DigitsCNN", BUNDLE,
                  calibration=calibration, data=inputs, check=True, log=lambda text: print("  " + text.replace("\n", "\n  ")))


def main():
    resume = "--resume" in sys.argv[1:]
    device, device_name = fastest_device()

    data = load_digits()
    rest, heldout = data.split(0.2, seed=SEED, stratify=True)
    train, valid = rest.split(0.1, seed=SEED + 1, stratify=True)
    print("digits: %d images -> train %d, valid %d, held out %d (stratified, never trained on)"
          % (len(data), len(train), len(valid), len(heldout)))

    if not resume and os.path.isdir(RUN):
        shutil.rmtree(RUN)
    os.makedirs(ARTIFACTS, exist_ok=True)
    ember.seed(SEED)
    model = DigitsCNN(generator=ember.Generator(SEED))
    train_loader = DataLoader(train, BATCH, shuffle=True, seed=SEED, workers=1, prefetch=2)
    valid_loader = DataLoader(valid, 256)
    learner = Learner(
        model, AdamW(model, lr=LR, weight_decay=1e-4), loss_fn, epochs=EPOCHS,
        scheduler=lr.CosineAnnealingLR(LR, T_max=EPOCHS * len(train_loader)),
        metrics=["accuracy", "f1", "lr", "speed", "cpu", "memory"],
        early_stopping=("valid_loss", "min", 8), run_dir=RUN, keep_last=2, keep_best=True, device=device)
    print("training %s (%d parameters) on %s" % (type(model).__name__, model.num_params(), device_name))
    result = learner.fit(train_loader, valid_loader, resume="latest" if resume else None)
    print("training time: %.1f s (%d epochs, %s)" % (result.seconds, len(result.history), device_name))
    if result.stopped == "interrupted":
        print("training was stopped: continue it with python examples/train_digits.py --resume")
        if result.stop_reason != "q":  # Ctrl-C or SIGTERM: end here; q goes on to deploy what was learned
            sys.exit(130)

    # the model as trained, on the held-out digits, in CPython
    predictions, labels = [], []
    model.eval()
    with no_grad():
        for x, y in DataLoader(heldout, 512, device=device).epoch(0):
            predictions.extend(model(x.to(learner.device)).argmax(dim=1).tolist())
            labels.extend(y.tolist())
    cpy_correct = sum(p == y for p, y in zip(predictions, labels))
    n = len(labels)

    # the artifacts MicroPython reads: the weights, and the held-out digits as raw pixel counts
    weights = os.path.join(ARTIFACTS, "digits_cnn.safetensors")
    model.save(weights)
    raw = load_digits(normalize=False)
    images, targets = raw.subset(heldout.indices).get_batch(range(n))
    heldout_path = os.path.join(ARTIFACTS, "heldout.safetensors")
    record.write(heldout_path, [("images", ember.tensor(images[:, 0].astype("int8").tobytes(), dtype=ember.int8,
                                                        shape=(n, 8, 8))),
                                ("labels", ember.tensor(targets.tolist(), dtype=ember.int64))],
                 metadata={"what": "the held-out 20%% of ember's digits (stratified, seed %d)" % SEED})

    out = run_micropython()
    board = deploy_to_board(weights, heldout, train)
    print()
    print("held-out digits: %d images never seen in training" % n)
    print("%-14s %-34s %s" % ("", "CPython (%s)" % device_name, "MicroPython (pure-Python ember.Cpu)"))
    mpy_acc = "-"
    agree = None
    if out is not None:
        mpy_pred = re.search(r"^predictions: (\d+)$", out, re.M).group(1)
        mpy_correct = int(re.search(r"^correct: (\d+)/", out, re.M).group(1))
        mpy_acc = "%.2f%% (%d/%d)" % (100.0 * mpy_correct / n, mpy_correct, n)
        agree = sum(str(p) == q for p, q in zip(predictions, mpy_pred))
    print("%-14s %-34s %s" % ("accuracy", "%.2f%% (%d/%d)" % (100.0 * cpy_correct / n, cpy_correct, n), mpy_acc))
    if agree is not None:
        print("%-14s %d/%d images" % ("same answer", agree, n))
    if board is not None:
        c = board["check"]
        print()
        print("%-14s %-34s %s" % ("", "CPython (the bundle, ember.micro)", "Raspberry Pi Pico profile (unix port, %d KB heap)"
                                  % (c["heap_bytes"] // 1024)))
        print("%-14s %-34s %s" % ("int8 accuracy", "%.2f%% (%d/%d)" % (board["deployed_accuracy_pt"], board["deployed_correct"], n),
                                  "same predictions %d/%d" % (c["same_predictions"], c["images"])))
        print("%-14s %-34s %s" % ("time / image", "%.2f ms" % board["cpython_ms_per_image"], "%.2f ms" % c["ms_per_image"]))
        print("%-14s %-34s %s" % ("heap", "-", "%.1f KB live after load, %.1f KB peak" % (
            c["live_heap_after_load"] / 1024.0, c["live_heap_peak"] / 1024.0)))
        print("%-14s %s (weights %.1f KB); float32 accuracy %.2f%%: int8 drops %.2f points" % (
            "flash", "%.1f KB" % (board["flash_bytes"] / 1024.0), board["weights_bytes"] / 1024.0,
            board["float32_accuracy_pt"], board["accuracy_drop_pt"]))
    print("training time  %.1f s" % result.seconds)
    print()
    rel = os.path.relpath(ARTIFACTS, ROOT)
    print("artifacts in %s/:" % rel)
    print("  digits_cnn.safetensors  %s  the trained weights (ember.record, safetensors)" % size_kb(weights))
    print("  heldout.safetensors     %s  the held-out digits and labels" % size_kb(heldout_path))
    print("  run/metrics.csv, run/metrics.jsonl, run/curves.png, run/checkpoints/ (last 2 + best)")
    if board is not None:
        print("  rp2040/                 the board bundle (.mpy, int8 weights, plan, manifest.py, report.json)")

    if agree is not None and agree != n:
        sys.exit("CPython and MicroPython disagree on %d images" % (n - agree))
    if result.stopped != "interrupted" and cpy_correct / n < TARGET:
        sys.exit("accuracy %.2f%% is below the %.0f%% target" % (100.0 * cpy_correct / n, 100 * TARGET))
    print("ok")


if __name__ == "__main__":
    main()
