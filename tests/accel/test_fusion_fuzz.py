"""Random programs (fuzz_programs.py) through ``Fusion`` against the same device unfused.

A read halfway makes Fusion compute what is pending below the value then; a dropped value is an
intermediate its kernel need not write. A program is generated while it runs on the unfused
device, from a seed, so it only holds ops that device accepts.

The same steps then run through ``Fusion`` three times: the first run builds the kernels, the
second finds every graph in the schedule cache (the path where a wrong binding would show), the
third with other input values. Every value still held must equal the unfused one to the bit
(every nan counts as one value), except those that depend on an ``exp`` or ``erf`` (whose fused
forms are approximations within the conformance tolerance, tests/accel/test_fusion_approx.py) or
on a float64 sum (summed in another order when fused): those are compared within a tolerance.

Under ``Autodiff`` (``grad=True``) the inputs require grad and the gradients of the sum of every
float value still held are compared too, so the backward graphs go through Fusion as well; within
a tolerance, as a sum over several dims may be rounded once or once per dim (``reduce_dims``).

``python tests/accel/test_fusion_fuzz.py [--seeds A:B] [--device c|python|wgpu] [--grad]`` runs
many seeds and prints each failing one with its program; the tests run a fixed set.
"""
import os
import sys

import pytest

import ember
from ember.accel import Autodiff
from ember.accel.fusion import Fusion

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_programs import apply, c_device, generate, is_float, mismatch, signs_kept, wgpu_device  # noqa: E402


def _gradients(steps, env, leaves):
    """Backward from the sum of every float value still held; the inputs' gradients (None for an
    input nothing held depends on)."""
    total = None
    for v in env:
        if is_float(v) and v.requires_grad:
            s = v.sum()
            total = s if total is None else total + s
    if total is None:
        return [None] * len(leaves)
    grads = total.backward()
    return [t.grad(grads) for t in leaves]


def _run(steps, dev, values, grad):
    """(env, input gradients) of ``steps`` on ``dev``; the inputs are held aside, so a dropped
    one still has its gradient."""
    env, leaves = [], []
    for s in steps:
        v = apply(s, env, dev, values)
        if s[0] == "input":
            leaves.append(v)
        env.append(v)
    return env, (_gradients(steps, env, leaves) if grad else [])


def check(seed, make, length=24, grad=False):
    """Generate ``seed``'s program on the device ``make()`` and run it through Fusion of another
    ``make()`` (``grad``: both under Autodiff, and the inputs' gradients compared as well);
    returns a failure message or None."""
    wrap = Autodiff if grad else (lambda d: d)
    ref = wrap(make())
    steps, want = generate(seed, ref, length)
    fused = wrap(Fusion(make()))
    for values in (0, 0, 1):
        if values or grad:
            want, want_grads = _run(steps, ref, values, grad)
        try:
            got, got_grads = _run(steps, fused, values, grad)
            fused.synchronize()
        except Exception as e:
            return "seed %d, run with values %d: %s: %s" % (seed, values, type(e).__name__, e)
        bad = mismatch(steps, want, got, signed_zero=signs_kept(ref))
        if bad:
            return "seed %d, run with values %d: %s" % (seed, values, bad)
        if grad:
            labels = [("the gradient of value", k) for k, s in enumerate(steps) if s[0] == "input"]
            # within a tolerance: a sum over several dims (broadcasting's backward, the total's
            # sum) rounds once in the device's kernel and once per dim where Fusion takes it apart
            # to fuse its pending input in (ember.reduction.reduce_dims allows either)
            bad = mismatch(labels, want_grads, got_grads, set(range(len(labels))), signed_zero=signs_kept(ref))
            if bad:
                return "seed %d, run with values %d: %s" % (seed, values, bad)
    return None


# -- the devices -------------------------------------------------------------------------------

DEVICES = {"c": c_device, "python": lambda: ember.Cpu(kernels="python"), "wgpu": wgpu_device}
# seeds per device (values, gradients), in blocks of at most 25: lavapipe builds each new kernel's
# pipeline in a fraction of a second, so Wgpu takes fewer
SEEDS = {"c": (100, 20), "python": (100, 40), "wgpu": (25, 10)}


def _blocks(which):
    for name in sorted(DEVICES):
        n = SEEDS[name][which]
        for lo in range(0, n, 25):
            yield name, range(lo + 1000 * which, min(lo + 25, n) + 1000 * which)


@pytest.mark.parametrize("name,seeds", list(_blocks(0)))
def test_random_programs_give_the_unfused_values(name, seeds):
    make = DEVICES[name]
    make()  # skips here where the device is missing
    failures = [m for m in (check(seed, make) for seed in seeds) if m]
    assert not failures, "\n".join(failures[:5])


@pytest.mark.parametrize("name,seeds", list(_blocks(1)))
def test_random_programs_give_the_unfused_gradients(name, seeds):
    make = DEVICES[name]
    make()
    failures = [m for m in (check(seed, make, grad=True) for seed in seeds) if m]
    assert not failures, "\n".join(failures[:5])


def _main(argv):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: harness
    lo, hi = 0, 200
    if "--seeds" in argv:
        lo, hi = (int(x) for x in argv[argv.index("--seeds") + 1].split(":"))
    name = argv[argv.index("--device") + 1] if "--device" in argv else "c"
    make = DEVICES[name]
    grad = "--grad" in argv
    bad = 0
    for seed in range(lo, hi):
        m = check(seed, make, grad=grad)
        if m:
            bad += 1
            print(m)
            for k, s in enumerate(generate(seed, Autodiff(make()) if grad else make())[0]):
                print("   %2d %s" % (k, s))
    print("%d of %d seeds failed" % (bad, hi - lo))


if __name__ == "__main__":
    _main(sys.argv[1:])
