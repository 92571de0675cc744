# cpython-only: reads the training split with ember.accel.data (numpy)
"""Held-out accuracy of the digits CNN in float32, int8 weights only, and int8 weights + activations.

Needs the artifacts of ``python examples/train_digits.py`` (``digits_cnn.safetensors`` and
``heldout.safetensors``). Calibration uses 200 images of the *training* split (the split of
train_digits.py: stratified 20% held out with seed 0, then 10% validation with seed 1), never the
held-out ones. Writes ``artifacts/digits_cnn_int8.safetensors`` (full int8) and checks that
``ember.quant.load`` reads it back to the same predictions.

    python examples/digits/quantized_accuracy.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARTIFACTS = os.path.join(HERE, "artifacts")
sys.path.insert(0, HERE)

import ember  # noqa: E402
import ember.quant  # noqa: E402
from ember import record  # noqa: E402
from ember.accel.data import load_digits  # noqa: E402
from ember.nn import init  # noqa: E402

from digits_cnn import DigitsCNN  # noqa: E402

CALIBRATION = 200
BATCH = 50


def heldout(device):
    with record.open(os.path.join(ARTIFACTS, "heldout.safetensors")) as r:
        images = r.read("images", device=device).to(ember.float32).unsqueeze(1) / 16
        labels = r.read("labels").tolist()
    return images, labels


def calibration_batches(device):
    rest, _ = load_digits().split(0.2, seed=0, stratify=True)
    train, _ = rest.split(0.1, seed=1, stratify=True)
    images, _ = train.get_batch(range(CALIBRATION))
    x = ember.tensor(images.tobytes(), dtype=ember.float32, shape=images.shape, device=device)
    return [x[i:i + BATCH] for i in range(0, CALIBRATION, BATCH)]


def predictions(model, images):
    out = []
    for i in range(0, images.shape[0], 100):
        out.extend(model(images[i:i + 100]).argmax(dim=1).tolist())
    return out


def accuracy(preds, labels):
    return 100.0 * sum(1 for p, y in zip(preds, labels) if p == y) / len(labels)


def main():
    device = ember.Cpu()
    model = DigitsCNN(device=device)
    model.load(os.path.join(ARTIFACTS, "digits_cnn.safetensors"))
    model.eval()
    images, labels = heldout(device)
    weights_only = ember.quant.quantize(model)
    full = ember.quant.quantize(model, calibration=calibration_batches(device))
    path = os.path.join(ARTIFACTS, "digits_cnn_int8.safetensors")
    ember.quant.save(full, path)
    with init.skip():
        loaded = ember.quant.load(DigitsCNN(device=device), path)
    rows = [("float32", model), ("int8 weights", weights_only), ("int8 weights + activations", full)]
    base = reference = None
    print("held-out digits: %d; calibration: %d training images" % (len(labels), CALIBRATION))
    for name, m in rows:
        preds = predictions(m, images)
        acc = accuracy(preds, labels)
        base = acc if base is None else base
        reference = preds if reference is None else reference
        logits = (m(images) - model(images)).abs().max().item()
        print("  %-28s %6.2f%%  (%+.2f points; same class as float32 for %d; max |logit - float32| %.3f)"
              % (name, acc, acc - base, sum(1 for p, r in zip(preds, reference) if p == r), logits))
    same = predictions(loaded, images) == predictions(full, images)
    print("reloaded %s (%d bytes): %s predictions" % (os.path.basename(path), os.path.getsize(path),
                                                    "the same" if same else "DIFFERENT"))
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
