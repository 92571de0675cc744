"""ember's Candle device beside raw candle, ember's NumPy device and raw numpy, measured in one run.

    python bench/candle_backend.py [--rounds N] [--target S] [--threads N]

Cells: a float32 512x512 matmul and float32 elementwise ops on 1M values (``a + b``, ``exp(a)``,
``floor(a)``, which the binding lacks: Candle() takes the host road, raw candle has no cell),
each through raw numpy, ember's ``NumPy()``, raw candle (candle-nn 0.4.2) and ember's ``Candle()``.
Every cell is timed once per round, the cells in shuffled order; a figure is the median over the
rounds in which other processes used at most 0.3 cores (all rounds when fewer than 3 were quiet).
Times are wall-clock seconds per call with one thread for BLAS and candle's rayon pool (set before
the libraries load). The last line printed is one JSON object.
"""
import json
import os
import platform
import random
import sys
import time

# this script's folder is on sys.path: the NumPy bench's shuffled rounds and load filter serve here too
import numpy_backend
from numpy_backend import QUIET_CORES, kept, median, run_rounds


def parse_args(argv):
    import argparse
    p = argparse.ArgumentParser(description="ember's Candle device beside candle and numpy")
    p.add_argument("--rounds", type=int, default=9, help="timing rounds (default 9)")
    p.add_argument("--target", type=float, default=0.1, help="seconds per timed batch (default 0.1)")
    p.add_argument("--threads", type=int, default=1, help="BLAS and rayon threads (default 1)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
        os.environ[var] = str(args.threads)  # read when the libraries load
    import numpy as np
    import candle

    import ember
    from ember.accel import Candle, NumPy

    g = ember.Generator(0)
    m = [ember.randn(512, 512, generator=g) for _ in range(2)]
    v = [ember.randn(1 << 20, generator=g) for _ in range(2)]
    na, nb = (x.to(NumPy()) for x in m)
    ca, cb = (x.to(Candle()) for x in m)
    nu, nw = (x.to(NumPy()) for x in v)
    cu, cw = (x.to(Candle()) for x in v)
    raw = {"numpy": [x.numpy() for x in (na, nb, nu, nw)],
           "candle": [x._data.t for x in (ca, cb, cu, cw)]}
    cells = {
        "matmul512.numpy": lambda: raw["numpy"][0] @ raw["numpy"][1],
        "matmul512.ember_numpy": lambda: na @ nb,
        "matmul512.candle": lambda: raw["candle"][0].matmul(raw["candle"][1]),
        "matmul512.ember_candle": lambda: ca @ cb,
        "add1m.numpy": lambda: raw["numpy"][2] + raw["numpy"][3],
        "add1m.ember_numpy": lambda: nu + nw,
        "add1m.candle": lambda: raw["candle"][2] + raw["candle"][3],
        "add1m.ember_candle": lambda: cu + cw,
        "exp1m.numpy": lambda: np.exp(raw["numpy"][2]),
        "exp1m.ember_numpy": lambda: nu.exp(),
        "exp1m.candle": lambda: raw["candle"][2].exp(),
        "exp1m.ember_candle": lambda: cu.exp(),
        # floor: the binding lacks it, so Candle() takes the host road (docs/candle.md)
        "floor1m.numpy": lambda: np.floor(raw["numpy"][2]),
        "floor1m.ember_numpy": lambda: nu.floor(),
        "floor1m.ember_candle": lambda: cu.floor(),
    }
    # the same values everywhere before anything is timed
    assert np.allclose((ca @ cb).numpy(), na.numpy() @ nb.numpy(), rtol=1e-4, atol=1e-3)
    assert np.array_equal((cu + cw).numpy(), nu.numpy() + nw.numpy())

    numpy_backend.CLOCK[0] = time.perf_counter  # rayon's threads: wall time, not this thread's CPU
    samples, loads = run_rounds(cells, args.rounds, args.target, random.Random(0))
    keep, quiet = kept(loads)
    print("ember Candle() beside candle 0.4.2 (%d rayon threads), NumPy() and numpy %s; CPython %s on %s; "
          "%d of %d rounds quiet (other processes <= %.1f cores), figures over %s"
          % (candle.utils.get_num_threads(), np.__version__, platform.python_version(), platform.machine(),
             len(keep) if quiet else 0, len(loads), QUIET_CORES, "those" if quiet else "all rounds"))
    result = {"threads": args.threads, "rounds_kept": len(keep)}
    for op in ("matmul512", "add1m", "exp1m", "floor1m"):
        med = {lib: median([samples["%s.%s" % (op, lib)][i] for i in keep])
               for lib in ("numpy", "ember_numpy", "candle", "ember_candle") if "%s.%s" % (op, lib) in samples}
        print("  %-9s " % op + "  ".join("%s %8.3f ms" % (lib, t * 1e3) for lib, t in med.items()))
        for lib, t in med.items():
            result["candle_bench_%s_%s_ms" % (op, lib)] = round(t * 1e3, 4)
        result["candle_bench_%s_ember_candle_vs_numpy" % op] = round(med["numpy"] / med["ember_candle"], 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
