"""Random programs (fuzz_programs.py) as captured steps: ``ember.accel.compile(fn)`` against the
same function run eagerly, on every device a step is captured on.

The function takes the program's inputs as arguments and returns every value it still holds (an
input among them where the program keeps one); under ``Autodiff`` it also runs backward from the
sum of those values and returns the inputs' gradients. It is called five times with other input
values each time: the first call runs eagerly, the second records, the rest replay (through the
device's lowering where it has one: the C loop, Wgpu's command buffers). A replay must give the
eager values to the bit -- it runs the same kernels -- and a program the capture refuses must
still give them (eagerly, with its one warning). On a Fusion device the eager run and the
recording may cut the graph into other kernels (the eager one computes each value when it is
read), so values depending on a fused exp or erf, or on a float64 sum, are compared within a
tolerance there, as are gradients (see ``_inexact_results``). The programs hold no reads halfway (a read to the
host inside a step is what makes a capture refuse); most are captured, and the tests say how
many at least.

``python tests/accel/test_capture_fuzz.py [--seeds A:B] [--device NAME] [--grad]`` runs many seeds
by hand and prints each failure with its program and the refusals' reasons.
"""
import os
import sys
import warnings

import pytest

import ember
from ember.accel import Autodiff, compile
from ember.accel.fusion import Fusion

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_programs import (apply, approximate, c_device, generate, is_float, mismatch, signs_kept,  # noqa: E402
                           wgpu_device)

CALLS = 5


def _function(steps, grad):
    """The program as a step: its inputs as arguments, its held values (and, with ``grad``, the
    inputs' gradients) as the result."""
    def step(*xs):
        env, it = [], iter(xs)
        for s in steps:
            env.append(next(it) if s[0] == "input" else apply(s, env, None, 0))
        held = tuple(v for v in env if v is not None)
        if not grad:
            return held
        total = None
        for v in held:
            if is_float(v) and v.requires_grad:
                total = v.sum() if total is None else total + v.sum()
        if total is None:
            return held
        grads = total.backward()
        return held + tuple(g for g in (x.grad(grads) for x in xs) if g is not None)
    return step


def _inputs(steps, dev, values):
    return [apply(s, [], dev, values) for s in steps if s[0] == "input"]


def _inexact_results(steps, env, n):
    """Which of ``n`` results may move in their last bits between an eager run and a replay on a
    Fusion device, where the two may cut the graph into other kernels: those depending on an exp or
    erf (fused approximations: the same value in every kernel, but not the unfused primitive's) or
    on a float64 sum (a row's order), and the gradients (a sum over several dims is rounded once in
    the device's kernel, once per dim where Fusion fuses its pending input in)."""
    approx = approximate(steps)
    held = [k for k, v in enumerate(env) if v is not None]
    return {r for r, k in enumerate(held) if k in approx} | set(range(len(held), n))


def check(seed, make, grad=False):
    """(failure message or None, whether the program was captured)."""
    dev = Autodiff(make()) if grad else make()
    steps, env = generate(seed, dev, reads=False)
    fn = _function(steps, grad)
    captured = compile(fn)
    fused = type(dev.inner if grad else dev) is Fusion
    labels = approx = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for values in range(CALLS):
            want = fn(*_inputs(steps, dev, values))
            try:
                got = captured(*_inputs(steps, dev, values))
            except Exception as e:
                return "seed %d, call %d: %s: %s" % (seed, values, type(e).__name__, e), False
            if type(got) is not tuple or len(got) != len(want):
                return "seed %d, call %d: %r values against %d" % (seed, values, got, len(want)), False
            if labels is None:
                labels = [("result", k) for k in range(len(want))]
                approx = _inexact_results(steps, env, len(want)) if fused else set()
            bad = mismatch(labels, list(want), list(got), approx=approx, signed_zero=signs_kept(dev))
            if bad:
                return "seed %d, call %d (%s): %s" % (seed, values, captured.stats, bad), False
    return None, captured.stats["replayed"] == CALLS - 2


# -- the devices -------------------------------------------------------------------------------

DEVICES = {"c": c_device, "python": lambda: ember.Cpu(kernels="python"), "wgpu": wgpu_device,
           "fusion-c": lambda: Fusion(c_device()), "fusion-wgpu": lambda: Fusion(wgpu_device())}
SEEDS = {"c": 40, "python": 20, "wgpu": 12, "fusion-c": 24, "fusion-wgpu": 12}
CAPTURED = 0.7  # the least share of programs that must be captured (else the test tests little)


def _run(name, grad):
    make = DEVICES[name]
    make()  # skips here where the device is missing
    n = SEEDS[name] // (2 if grad else 1)
    results = [check(seed + 3000 * grad, make, grad) for seed in range(n)]
    failures = [m for m, _ in results if m]
    assert not failures, "\n".join(failures[:5])
    captured = sum(1 for _, c in results if c)
    assert captured >= CAPTURED * n, "only %d of %d programs were captured" % (captured, n)


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_replays_of_random_programs_give_the_eager_values(name):
    _run(name, False)


@pytest.mark.parametrize("name", sorted(DEVICES))
def test_replays_of_random_programs_with_backward_give_the_eager_gradients(name):
    _run(name, True)


def _main(argv):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: harness
    lo, hi = 0, 100
    if "--seeds" in argv:
        lo, hi = (int(x) for x in argv[argv.index("--seeds") + 1].split(":"))
    name = argv[argv.index("--device") + 1] if "--device" in argv else "c"
    grad = "--grad" in argv
    make = DEVICES[name]
    bad = captured = 0
    for seed in range(lo, hi):
        m, c = check(seed, make, grad)
        captured += c
        if m:
            bad += 1
            print(m)
            dev = Autodiff(make()) if grad else make()
            for k, s in enumerate(generate(seed, dev, reads=False)[0]):
                print("   %2d %s" % (k, s))
    print("%d of %d seeds failed; %d captured" % (bad, hi - lo, captured))


if __name__ == "__main__":
    _main(sys.argv[1:])
