"""LeNet-5's conv and pool kernels at batch 64, forward and gradients, ember's C Cpu beside PyTorch.

    .venv/bin/python bench/conv_grad.py [--rounds N]

One thread on both sides (EMBER_NUM_THREADS and torch.set_num_threads). Rows: conv1 (1->6, 5x5,
pad 2, 28x28) and conv2 (6->16, 5x5, 14x14) forward, weight gradient and (conv2) input gradient,
the composites ``conv_weight_grad``/``conv_input_grad`` that Autodiff's conv rule calls against
``torch.nn.grad.conv2d_weight``/``conv2d_input``; max pool 2x2 over conv1's output, forward and
forward + backward (ember's ``pool_input_grad`` after its pool, torch's autograd). Each cell is the
median over rounds of a batch of calls, cells interleaved round by round. The last line is one
JSON object: milliseconds per call and torch / ember per row.
"""
import json
import os
import random
import sys
import time

os.environ["EMBER_NUM_THREADS"] = "1"
import torch  # noqa: E402

import ember  # noqa: E402
from ember.accel.autodiff import rules  # noqa: E402

torch.set_num_threads(1)
ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 7
CALLS = 20


def main():
    dev = ember.Cpu()
    rng = random.Random(0)

    def pair(shape):
        n = 1
        for s in shape:
            n *= s
        e = ember.tensor([rng.uniform(-1, 1) for _ in range(n)], device=dev).reshape(shape)
        return e, torch.tensor(e.numpy())

    (x1, tx1), (w1, tw1), (g1, tg1) = pair((64, 1, 28, 28)), pair((6, 1, 5, 5)), pair((64, 6, 28, 28))
    (x2, tx2), (w2, tw2), (g2, tg2) = pair((64, 6, 14, 14)), pair((16, 6, 5, 5)), pair((64, 16, 10, 10))
    (p1, tp1), (pg1, tpg1) = pair((64, 6, 28, 28)), pair((64, 6, 14, 14))
    one, pad2, pad0 = (1, 1), ((2, 2), (2, 2)), ((0, 0), (0, 0))
    tp1.requires_grad_()
    grad = torch.nn.grad

    def torch_pool_both():
        torch.nn.functional.max_pool2d(tp1, 2).backward(tpg1)

    def ember_pool_both():
        dev.pool("max", p1._data, (2, 2), (2, 2), pad0, one)
        rules.pool_input_grad(pg1, p1, "max", (2, 2), (2, 2), pad0, one)

    rows = [
        ("conv1_forward", lambda: dev.conv(x1._data, w1._data, one, pad2, one, 1),
         lambda: torch.nn.functional.conv2d(tx1, tw1, padding=2)),
        ("conv2_forward", lambda: dev.conv(x2._data, w2._data, one, pad0, one, 1),
         lambda: torch.nn.functional.conv2d(tx2, tw2)),
        ("conv1_weight_grad", lambda: rules.conv_weight_grad(x1, g1, w1.shape, one, pad2, one, 1),
         lambda: grad.conv2d_weight(tx1, tw1.shape, tg1, padding=2)),
        ("conv2_weight_grad", lambda: rules.conv_weight_grad(x2, g2, w2.shape, one, pad0, one, 1),
         lambda: grad.conv2d_weight(tx2, tw2.shape, tg2)),
        ("conv2_input_grad", lambda: rules.conv_input_grad(g2, w2, x2.shape, one, pad0, one, 1),
         lambda: grad.conv2d_input(tx2.shape, tw2, tg2)),
        ("pool1_forward", lambda: dev.pool("max", p1._data, (2, 2), (2, 2), pad0, one),
         lambda: torch.nn.functional.max_pool2d(tp1.detach(), 2)),
        ("pool1_forward_backward", ember_pool_both, torch_pool_both),
    ]
    times = {(name, side): [] for name, _, _ in rows for side in ("ember", "torch")}
    for _ in range(ROUNDS):
        for name, e, t in rows:
            for side, fn in (("ember", e), ("torch", t)):
                fn()
                start = time.perf_counter()
                for _ in range(CALLS):
                    fn()
                times[(name, side)].append((time.perf_counter() - start) / CALLS * 1e3)
    result = {}
    print("%-24s %10s %10s %9s" % ("ms per call", "ember", "torch", "torch/em"))
    for name, _, _ in rows:
        e, t = (sorted(times[(name, s)])[ROUNDS // 2] for s in ("ember", "torch"))
        print("%-24s %10.3f %10.3f %9.2f" % (name, e, t, t / e))
        result[name + "_ms"] = round(e, 4)
        result["torch_" + name + "_ms"] = round(t, 4)
        result[name + "_vs_torch"] = round(t / e, 3)
    result["rounds"] = ROUNDS
    result["versions"] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
