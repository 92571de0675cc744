"""Fused kernels from primitives (CCompiler) beside PyTorch's hand-written ops, in one run.

    .venv/bin/python bench/fusion_cpu.py [--rounds N]

- GELU: ``x * ((x / sqrt2).erf() + 1) / 2`` as one flat RowKernel over 1M float32, against
  ``torch.nn.functional.gelu`` on the same floats.
- softmax: ``exp(x - max) / sum`` as one RowKernel (reduce max, reduce sum, map) over (1000, 1000)
  float32 rows, against ``F.softmax(x, dim=-1)``.

Torch keeps its default thread count (``torch.get_num_threads()``), ember its own
(``ckernels.num_threads()``): both use the machine's cores. Contenders are timed interleaved,
round after round (each sample a batch of calls lasting ~50 ms), and the median per-call time over
rounds is kept. Ratios are torch time / ember time (above 1: ember is faster); the issue's goals
are >= 1.0 for both. The last line printed is one JSON object with every figure.
"""
import json
import math
import random
import statistics
import sys
import time
from array import array

import torch

import ember
from ember.accel.fusion import ir
from ember.accel.fusion.compile_c import CCompiler
from ember.backends.cpu import ckernels
from ember.backends.cpu.array import CpuArray

F32 = ember.float32


def gelu_kernel():
    nodes = [("load", "float32", 0), ("const", "float32", array("f", [math.sqrt(2)])[0]),
             ("binary", "float32", "div", 0, 1), ("unary", "float32", "erf", 2),
             ("const", "float32", 1.0), ("binary", "float32", "add", 3, 4),
             ("binary", "float32", "mul", 0, 5), ("const", "float32", 2.0),
             ("binary", "float32", "div", 6, 7)]
    return ir.RowKernel(1, None, ["float32"], nodes, [ir.Map()], [(8, False)])


def softmax_kernel():
    nodes = [("load", "float32", 0), ("row", "float32", 0), ("binary", "float32", "sub", 0, 1),
             ("unary", "float32", "exp", 2), ("row", "float32", 1), ("binary", "float32", "div", 3, 4)]
    return ir.RowKernel(2, 1, ["float32"], nodes,
                        [ir.Reduce("max", 0, "float32"), ir.Reduce("sum", 3, "float32"), ir.Map()], [(5, False)])


def per_call(fn, seconds=0.05):
    """Seconds per call of ``fn``, from a batch of calls lasting about ``seconds``."""
    fn()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return dt / n


def race(contenders, rounds):
    samples = {name: [] for name in contenders}
    names = list(contenders)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            samples[name].append(per_call(contenders[name]))
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 15
    rnd = random.Random(0)
    compiler = CCompiler()
    out = {"torch_threads": torch.get_num_threads(), "ember_threads": ckernels.num_threads(),
           "isa": ckernels.isa()}

    n = 1 << 20
    xs = array("f", [rnd.gauss(0.0, 2.0) for _ in range(n)])
    x = CpuArray(xs, (n,), F32)
    tx = torch.frombuffer(xs, dtype=torch.float32)
    gk = gelu_kernel()
    got = compiler.run(gk, (n,), [(x, (1,), 0)])[0]
    want = torch.nn.functional.gelu(tx)
    out["gelu_max_abs_diff"] = float((torch.frombuffer(got.data, dtype=torch.float32) - want).abs().max())
    t = race({"ember": lambda: compiler.run(gk, (n,), [(x, (1,), 0)]),
              "torch": lambda: torch.nn.functional.gelu(tx)}, rounds)
    out["gelu_1m_ember_ms"], out["gelu_1m_torch_ms"] = t["ember"] * 1e3, t["torch"] * 1e3
    out["gelu_1m_vs_torch"] = t["torch"] / t["ember"]

    rows = cols = 1000
    ys = array("f", [rnd.gauss(0.0, 3.0) for _ in range(rows * cols)])
    y = CpuArray(ys, (rows, cols), F32)
    ty = torch.frombuffer(ys, dtype=torch.float32).reshape(rows, cols)
    sk = softmax_kernel()
    got = compiler.run(sk, (rows, cols), [(y, (cols, 1), 0)])[0]
    want = torch.softmax(ty, dim=-1)
    out["softmax_max_rel_diff"] = float(((torch.frombuffer(got.data, dtype=torch.float32).reshape(rows, cols)
                                           - want).abs() / want).max())
    t = race({"ember": lambda: compiler.run(sk, (rows, cols), [(y, (cols, 1), 0)]),
              "torch": lambda: torch.softmax(ty, dim=-1)}, rounds)
    out["softmax_1000x1000_ember_ms"], out["softmax_1000x1000_torch_ms"] = t["ember"] * 1e3, t["torch"] * 1e3
    out["softmax_1000x1000_vs_torch"] = t["torch"] / t["ember"]

    for key in ("gelu_1m", "softmax_1000x1000"):
        print("%-20s ember %7.3f ms   torch %7.3f ms   torch/ember %.2fx"
              % (key, out[key + "_ember_ms"], out[key + "_torch_ms"], out[key + "_vs_torch"]))
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
