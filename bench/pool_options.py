"""The pools' PyTorch options on ember's C Cpu beside PyTorch: the plain fast path, ceil_mode and
count_include_pad=False (one pool primitive and a multiply by the divisor map), return_indices and
an int64 input (a scan over the window's taps), at LeNet's conv1 output size (64, 6, 28, 28).

    .venv/bin/python bench/pool_options.py [--rounds N]

One thread on both sides. Each cell is the median over rounds of a batch of calls, cells
interleaved round by round. PyTorch has no integer max pool: its row for int64 times float64. The
last line is one JSON object: milliseconds per call and torch / ember per row.
"""
import json
import os
import random
import sys
import time

os.environ["EMBER_NUM_THREADS"] = "1"
import torch  # noqa: E402

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402

torch.set_num_threads(1)
ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 7
CALLS = 10


def main():
    rng = random.Random(0)
    shape = (64, 6, 28, 28)
    values = [rng.uniform(-1, 1) for _ in range(64 * 6 * 28 * 28)]
    x = ember.tensor(values).reshape(shape)
    tx = torch.tensor(x.numpy())
    xi = ember.tensor([int(v * 100) for v in values]).reshape(shape)
    txd = torch.tensor(xi.numpy()).double()
    tf = torch.nn.functional
    rows = [
        ("max_pool2d_k2", lambda: F.max_pool2d(x, 2), lambda: tf.max_pool2d(tx, 2)),
        ("max_pool2d_k3s2_ceil", lambda: F.max_pool2d(x, 3, 2, ceil_mode=True),
         lambda: tf.max_pool2d(tx, 3, 2, ceil_mode=True)),
        ("max_pool2d_k2_indices", lambda: F.max_pool2d(x, 2, return_indices=True),
         lambda: tf.max_pool2d(tx, 2, return_indices=True)),
        ("max_pool2d_k2_int64", lambda: F.max_pool2d(xi, 2), lambda: tf.max_pool2d(txd, 2)),
        ("avg_pool2d_k2", lambda: F.avg_pool2d(x, 2), lambda: tf.avg_pool2d(tx, 2)),
        ("avg_pool2d_k3s2p1_ceil_exclude_pad", lambda: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
         lambda: tf.avg_pool2d(tx, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ]
    times = {name: ([], []) for name, _, _ in rows}
    for _ in range(ROUNDS):
        for name, fe, ft in rows:
            for side, fn in ((0, fe), (1, ft)):
                start = time.perf_counter()
                for _ in range(CALLS):
                    fn()
                times[name][side].append((time.perf_counter() - start) / CALLS * 1e3)
    out = {}
    print("%-38s %10s %10s %8s" % ("row", "ember ms", "torch ms", "t/e"))
    for name, _, _ in rows:
        e = sorted(times[name][0])[ROUNDS // 2]
        t = sorted(times[name][1])[ROUNDS // 2]
        out[name] = {"ember_ms": round(e, 3), "torch_ms": round(t, 3), "torch_over_ember": round(t / e, 3)}
        print("%-38s %10.3f %10.3f %8.3f" % (name, e, t, t / e))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
