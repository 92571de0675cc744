"""A small LeNet-style CNN forward pass: conv2d, relu, max_pool2d, flatten, linear, log_softmax.

Input is a batch of 2 single-channel 12x12 images (kept small: the pure-Python core is the slowest
ember backend, and MicroPython in the browser is about 30x slower than CPython). Layouts follow
PyTorch: images are (N, C, H, W), conv weights (out_channels, in_channels, kh, kw), linear
weights (out_features, in_features). The weights are random, so the classes mean nothing.

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


def init_conv(c_in, c_out, k):
    fan_in = c_in * k * k
    return ember.randn(c_out, c_in, k, k) * math.sqrt(2 / fan_in), ember.zeros(c_out)


def init_linear(n_in, n_out):
    return ember.randn(n_out, n_in) * math.sqrt(1 / n_in), ember.zeros(n_out)


ember.seed(0)
conv1 = init_conv(1, 4, 3)
conv2 = init_conv(4, 8, 3)
fc = init_linear(8 * 2 * 2, 10)
images = ember.randn(2, 1, 12, 12)

# The forward pass as a list of stages, so the shape after each one can be printed.
stages = (
    ("conv2d 1->4, 3x3, padding 1", lambda h: F.conv2d(h, conv1[0], conv1[1], padding=1)),
    ("relu", F.relu),
    ("max_pool2d 2", lambda h: F.max_pool2d(h, 2)),
    ("conv2d 4->8, 3x3", lambda h: F.conv2d(h, conv2[0], conv2[1])),
    ("relu", F.relu),
    ("max_pool2d 2", lambda h: F.max_pool2d(h, 2)),
    ("flatten", lambda h: h.flatten(1)),
    ("linear 32->10", lambda h: F.linear(h, fc[0], fc[1])),
    ("log_softmax", lambda h: F.log_softmax(h, dim=-1)),
)

h = images
shapes = []
t0 = now()
for name, stage in stages:
    h = stage(h)
    shapes.append((name, h.shape))
elapsed = ms_since(t0)
log_probs = h

print("%-30s %s" % ("input", images.shape))
for name, shape in shapes:
    print("%-30s %s" % (name, shape))

sums = log_probs.exp().sum(dim=-1).tolist()
print()
print("exp(log_softmax) per image sums to %s" % ", ".join("%.6f" % s for s in sums))
print("predicted classes: %s" % log_probs.argmax(dim=-1).tolist())
print("forward pass (batch 2): %.1f ms" % elapsed)

assert log_probs.shape == (2, 10)
assert all(abs(s - 1) < 1e-5 for s in sums), sums
print("ok")
