"""An MLP 784-128-10 forward pass (an MNIST-sized classifier) from ``ember.nn.functional``.

Weights use PyTorch's layout, [out_features, in_features], so ``F.linear(x, w, b)`` computes
``x @ w.T + b`` exactly as ``torch.nn.functional.linear`` does, and the same numbers could be
loaded into ``torch.nn.Linear``. The weights are random (He-style scale), so the predicted classes
mean nothing; the demo shows the shapes, a valid probability distribution, and the time.

Runs unchanged on CPython and on MicroPython.
"""
import math
import time

import ember
import ember.nn.functional as F

if hasattr(time, "ticks_us"):  # MicroPython: no perf_counter
    def now():
        return time.ticks_us()

    def ms_since(t0):
        return time.ticks_diff(time.ticks_us(), t0) / 1000
else:
    def now():
        return time.perf_counter()

    def ms_since(t0):
        return (time.perf_counter() - t0) * 1000


def init_linear(n_in, n_out):
    """Weight [n_out, n_in] drawn from N(0, 2 / n_in), bias zero."""
    w = ember.randn(n_out, n_in) * math.sqrt(2 / n_in)
    b = ember.zeros(n_out)
    return w, b


def mlp(x, params):
    w1, b1, w2, b2 = params
    h = F.relu(F.linear(x, w1, b1))
    return F.softmax(F.linear(h, w2, b2), dim=-1)


ember.seed(0)  # same weights and inputs on every run, on CPython and MicroPython alike
t0 = now()
w1, b1 = init_linear(784, 128)
w2, b2 = init_linear(128, 10)
x = ember.randn(4, 784)  # a batch of 4 "images", flattened 28x28
print("weights: fc1 %s, fc2 %s (%d parameters), drawn in %.1f ms"
      % (w1.shape, w2.shape, w1.numel() + b1.numel() + w2.numel() + b2.numel(), ms_since(t0)))
print("input:   %s" % (x.shape,))

t0 = now()
probs = mlp(x, (w1, b1, w2, b2))
elapsed = ms_since(t0)

sums = probs.sum(dim=-1).tolist()
print("output:  %s, probabilities per row sum to %s" % (probs.shape, ", ".join("%.6f" % s for s in sums)))
print("predicted classes: %s" % probs.argmax(dim=-1).tolist())
print("confidence:        %s" % ", ".join("%.3f" % p for p in probs.max(dim=-1).values.tolist()))
print("forward pass (batch 4): %.1f ms" % elapsed)

assert probs.shape == (4, 10)
assert all(abs(s - 1) < 1e-5 for s in sums), sums
print("ok")
