"""Classify the held-out digits with the trained record, on ember's pure-Python Cpu.

Written for MicroPython (examples/train_digits.py runs it on the unix port; ``node tests/mpy/run.mjs
--script examples/digits/classify.py`` runs it on the wasm one); it runs unchanged on CPython.
Reads ``artifacts/digits_cnn.safetensors`` (the weights) and ``artifacts/heldout.safetensors``
(``images`` int8 (N, 8, 8) pixel counts 0..16 and ``labels`` int64 (N,)), next to this file.
"""
import sys
import time

import ember
from ember import record

from digits_cnn import DigitsCNN

HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."  # (MicroPython has no os.path)
ARTIFACTS = HERE + "/artifacts"
CHUNK = 40  # images per forward pass: bounded memory on a small heap

if hasattr(time, "ticks_ms"):  # MicroPython
    def now_ms():
        return time.ticks_ms()

    def since_ms(t0):
        return time.ticks_diff(time.ticks_ms(), t0)
else:
    def now_ms():
        return time.perf_counter() * 1000

    def since_ms(t0):
        return time.perf_counter() * 1000 - t0

device = ember.Cpu(kernels="python")
with record.open(ARTIFACTS + "/heldout.safetensors") as r:
    images = r.read("images", device=device)
    labels = r.read("labels", device=device).tolist()
model = DigitsCNN.from_record(ARTIFACTS + "/digits_cnn.safetensors", device=device)  # no random draw first
model.eval()

t0 = now_ms()
n = images.shape[0]
predictions = []
for start in range(0, n, CHUNK):
    x = images[start:start + CHUNK].to(ember.float32).unsqueeze(1) / 16
    predictions.extend(model(x).argmax(dim=1).tolist())
    print("classified %d/%d images, %.1f s" % (len(predictions), n, since_ms(t0) / 1000))  # progress as it goes
elapsed = since_ms(t0)
correct = sum(1 for p, y in zip(predictions, labels) if p == y)
impl = sys.implementation
print("interpreter: %s %s" % (impl.name, ".".join(str(v) for v in impl.version[:3])))
print("classified %d held-out digits in %.1f s on %r" % (n, elapsed / 1000, device))
print("predictions: %s" % "".join(str(p) for p in predictions))
print("correct: %d/%d" % (correct, n))
print("accuracy: %.2f%%" % (100.0 * correct / n))
