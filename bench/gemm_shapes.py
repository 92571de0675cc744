"""The matrix products of a training step, ember's C GEMM beside PyTorch, one thread each.

    .venv/bin/python bench/gemm_shapes.py [--rounds N]

For the MLP 784-128-10 and LeNet-5's first fully connected layer (400-120) at batch 64: the
forward ``x @ w.T`` (w stored as PyTorch stores a Linear's weight, so B has contiguous columns),
the weight gradient ``dh.T @ x`` (A transposed) and the input gradient ``dh @ w``. Operands are
views in those layouts, as the step hands them to the kernels. Each product runs in batches of
calls lasting ~0.05 s, ember and PyTorch alternating, for ``--rounds`` rounds; medians are printed
in microseconds with GFLOP/s, and PyTorch's time / ember's (above 1: ember is faster). The last
line is one JSON object.
"""
import json
import os
import statistics
import sys
import time

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "EMBER_NUM_THREADS"):
    os.environ[_var] = "1"  # read when torch and ember's kernels load

import ember  # noqa: E402

ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 7
BATCH = 64
LAYERS = {"mlp_fc1": (784, 128), "lenet_fc1": (400, 120)}


def batch_time(fn, target=0.05):
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= target:
            return dt / n
        n *= 2


def main():
    import torch
    torch.set_num_threads(1)
    dev = ember.Cpu(kernels="c")
    g = torch.Generator().manual_seed(0)
    print("ember %s GEMM (ISA %s) beside PyTorch %s, 1 thread, batch %d, %d rounds"
          % ("C", ember.backends.cpu.ckernels.isa(), torch.__version__, BATCH, ROUNDS))
    out = {}
    for name, (k, n) in LAYERS.items():
        x = torch.randn(BATCH, k, generator=g)
        w = torch.randn(n, k, generator=g)
        dh = torch.randn(BATCH, n, generator=g)
        ex, ew, edh = (ember.tensor(t.tolist(), device=dev) for t in (x, w, dh))
        products = {
            "forward x @ w.T": ((lambda: ex @ ew.T), (lambda: x @ w.t()), BATCH * n * k),
            "weight grad dh.T @ x": ((lambda: edh.T @ ex), (lambda: dh.t() @ x), BATCH * n * k),
            "input grad dh @ w": ((lambda: edh @ ew), (lambda: dh @ w), BATCH * n * k),
        }
        for what, (fe, ft, macs) in products.items():
            diff = max(abs(a - b) for a, b in zip(fe().reshape(-1).tolist(), ft().reshape(-1).tolist()))
            te, tt = [], []
            for _ in range(ROUNDS):
                te.append(batch_time(fe))
                tt.append(batch_time(ft))
            e, t = statistics.median(te), statistics.median(tt)
            key = "%s %s" % (name, what)
            out[key] = {"ember_us": round(e * 1e6, 2), "torch_us": round(t * 1e6, 2),
                        "torch_vs_ember": round(t / e, 3), "max_abs_diff": diff}
            print("%-34s ember %8.1f us (%5.1f GFLOP/s)  torch %8.1f us (%5.1f GFLOP/s)  torch/ember %.3f"
                  % (key, e * 1e6, 2 * macs / e / 1e9, t * 1e6, 2 * macs / t / 1e9, t / e))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
