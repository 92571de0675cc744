"""Soak runs and threaded inference. A soak trains and runs a small model on one backend for a while
(``make stress``: 10 minutes per backend; ``EMBER_SOAK_SECONDS`` overrides) and samples the process's
resident memory: after the warm-up (the first third) it must stay flat within 2%. Threaded inference:
eight threads share one module and must get the bits one thread gets."""
import os
import threading
import time

import pytest

import ember
import ember.nn.functional as F
import ember.nn.layers as nn
from ember.accel import Autodiff
from ember.accel.optim import Adam

from harness.backends import REGISTRY
from probes import scale, tally

SOAK_SECONDS = float(os.environ.get("EMBER_SOAK_SECONDS", scale(4, 600)))
SOAK_BACKENDS = ("cpu-c", "numpy", "wgpu")
THREAD_BACKENDS = ("cpu", "cpu-c", "numpy", "wgpu")
LIMIT_PCT = 2.0


def _device(name):
    factory = dict(REGISTRY)[name]
    try:
        return factory()
    except (ImportError, RuntimeError) as e:
        if name in os.environ.get("EMBER_REQUIRE_BACKENDS", "").split(","):
            raise
        pytest.skip("%s: %s" % (name, e))


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _model(dev):
    g = ember.Generator(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, generator=g), nn.ReLU(), nn.Flatten(), nn.Linear(144, 10, generator=g)
                         ).to(dev)


@pytest.mark.parametrize("name", SOAK_BACKENDS)
def test_soak_rss_is_flat(name):
    dev = Autodiff(_device(name))
    model = _model(dev)
    opt = Adam(model, lr=1e-3)
    x = ember.randn(8, 1, 8, 8, generator=ember.Generator(1), device=dev)
    y = ember.tensor([i % 10 for i in range(8)], device=dev)
    # sampled on a clock, not per step: a list growing with the steps would be the growth it measures
    samples, start = [], time.perf_counter()
    steps, every = 0, max(0.05, SOAK_SECONDS / 400)
    while time.perf_counter() - start < SOAK_SECONDS or len(samples) < 6:
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        with ember.accel.no_grad():
            model(x).tolist()
        steps += 1
        now = time.perf_counter() - start
        if not samples or now - samples[-1][0] >= every:
            samples.append((now, _rss()))
    settled = [rss for t, rss in samples if t >= SOAK_SECONDS / 3] or [rss for _, rss in samples[len(samples) // 3:]]
    base = min(settled[:max(1, len(settled) // 10)])
    growth = (max(settled) - base) * 100.0 / base
    tally("soak-" + name, rss_growth_pct=round(growth, 3), seconds=round(time.perf_counter() - start, 1),
          steps=steps, rss_base=base, rss_peak=max(settled))
    assert loss.item() == loss.item()  # trained to a number
    assert growth <= LIMIT_PCT, "%s: RSS grew %.2f%% over %d steps after warm-up (%d -> %d bytes)" % (
        name, growth, steps, base, max(settled))


@pytest.mark.parametrize("name", THREAD_BACKENDS)
def test_threads_share_a_module(name):
    dev = _device(name)
    model = _model(dev).eval()
    inputs = [ember.randn(4, 1, 8, 8, generator=ember.Generator(10 + i), device=dev) for i in range(6)]
    expect = [model(x).to_bytes() for x in inputs]
    found, errors = [], []

    def work(k):
        try:
            for r in range(scale(3, 30)):
                for i, x in enumerate(inputs):
                    j = (i + k + r) % len(inputs)
                    found.append((j, model(inputs[j]).to_bytes()))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    hung = sum(t.is_alive() for t in threads)
    wrong = sum(1 for j, b in found if b != expect[j])
    tally("threads-" + name, inputs=len(found), hangs=hung, silent_wrong=wrong,
          non_ember=sum(1 for e in errors if not isinstance(e, ember.EmberError)))
    assert not errors and not hung and not wrong, (errors[:3], hung, wrong)
