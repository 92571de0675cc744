"""An eager (not captured) training step through ``Autodiff(Fusion(Cpu()))`` beside ``Autodiff(Cpu())``.

    .venv/bin/python bench/fusion_eager_step.py [--steps N]

The MLP 784-128-10 at batch 64 with SGD, one thread, ``--steps`` steps (default 30) each read by
``loss.item()``. Per step it prints the time and how many fused kernels were compiled (C built by
cffi) and built by the scheduler (Python planning): after the first steps a repeated step should
compile nothing. Kernels are compiled into a fresh ``EMBER_CACHE_DIR`` so that the first steps'
compiles are counted, not found on disk. The last line is one JSON object: the median step of the
second half for both devices and the compiles after step 2.
"""
import json
import os
import statistics
import sys
import tempfile
import time

for _var in ("OMP_NUM_THREADS", "EMBER_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember-fusion-eager-")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from _models import MLP  # noqa: E402
from ember.accel import Fusion  # noqa: E402
from ember.accel.autodiff import Autodiff  # noqa: E402
from ember.accel.fusion import cache, schedule  # noqa: E402
from ember.accel.optim import SGD  # noqa: E402

STEPS = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 30
COUNTS = {"compiled": 0, "built": 0}


def _counting(name, fn):
    def counted(*args, **kwargs):
        COUNTS[name] += 1
        return fn(*args, **kwargs)
    return counted


cache._build = _counting("compiled", cache._build)
schedule._Builder.build = _counting("built", schedule._Builder.build)


def run(device):
    gen = ember.Generator(1)
    model = MLP(ember.Generator(0)).to(device)
    opt = SGD(model, lr=0.01)
    x = ember.rand(64, 784, generator=gen).to(device)
    y = (ember.rand(64, generator=gen) * 10).to(ember.int64).to(device)
    rows = []
    for i in range(STEPS):
        before = dict(COUNTS)
        t = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        value = loss.item()
        rows.append((time.perf_counter() - t, COUNTS["compiled"] - before["compiled"],
                     COUNTS["built"] - before["built"], value))
    return rows


def main():
    out = {}
    for name, device in (("autodiff_cpu", Autodiff(ember.Cpu())), ("autodiff_fusion_cpu", Autodiff(Fusion(ember.Cpu())))):
        rows = run(device)
        print("-- %s" % name)
        for i, (t, compiled, built, loss) in enumerate(rows):
            print("  step %2d: %8.2f ms  compiled %d  built %d  loss %.5f" % (i, t * 1e3, compiled, built, loss))
        out[name + "_step_ms"] = round(statistics.median(t for t, _, _, _ in rows[STEPS // 2:]) * 1e3, 3)
        out[name + "_compiled_after_step_2"] = sum(c for _, c, _, _ in rows[2:])
        out[name + "_built_per_step"] = round(statistics.median(b for _, _, b, _ in rows[STEPS // 2:]), 1)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
