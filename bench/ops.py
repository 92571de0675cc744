"""Per-op speed of ember's pure-Python Cpu backend beside numpy and PyTorch, measured in one run.

    python bench/ops.py [--rounds N] [--target S] [--threads N] [--no-mpy] [--mpy-runner PATH]
                        [--no-overhead | --overhead-only] [--no-wgpu]

Small ops (add, mul, sum of 16 floats; a 4x4 matmul) show the fixed cost of one op; square
matmuls (64, 128) show the pure-Python arithmetic rate in MFLOP/s (2 n^3 per product). Every
implementation is timed in the same rounds, in shuffled order, so the slow and fast phases of a
shared machine hit all of them alike; a cell is the median over rounds, shown with its [min-max].

The same file runs under MicroPython (``node tests/mpy/run.mjs --script bench/ops.py``) and then
measures ember alone there; on CPython it starts that run itself unless ``--no-mpy`` is given.
Then the per-op overhead of ember's layers (``bench/op_overhead.py``): ``autodiff_record_us``,
recording one op on ``Autodiff(Cpu())``, and ``wgpu_dispatch_us``, queuing one op on ``Wgpu``, with
the Python call depth of each. The last line printed is one JSON object (keys in bench/README.md).
"""
import sys
import time

import ember

MICROPYTHON = sys.implementation.name == "micropython"
SMALL_OPS = ("add16", "mul16", "sum16", "matmul4")
MATMUL_SIZES = (64, 128)
GOALS = {"add16_us": 10.0, "pure_matmul_128_mflops": 25.0}  # from the issue; printed, not asserted

if MICROPYTHON:
    def now():
        return time.ticks_us()

    def seconds_since(t0):
        return time.ticks_diff(time.ticks_us(), t0) / 1e6
else:
    def now():
        return time.perf_counter()

    def seconds_since(t0):
        return time.perf_counter() - t0


# The timed loops are written out per op so that ember, numpy and torch pay the same loop cost.
def _loop_add(a, b, n):
    for _ in range(n):
        a + b


def _loop_mul(a, b, n):
    for _ in range(n):
        a * b


def _loop_sum(a, b, n):
    for _ in range(n):
        a.sum()


def _loop_matmul(a, b, n):
    for _ in range(n):
        a @ b


LOOPS = {"add16": _loop_add, "mul16": _loop_mul, "sum16": _loop_sum, "matmul4": _loop_matmul}


def batch_seconds(loop, a, b, n):
    t0 = now()
    loop(a, b, n)
    return seconds_since(t0)


def calibrate(loop, a, b, target_s):
    """How many calls make one batch of about ``target_s`` seconds (at least 1)."""
    n = 1
    while True:
        t = batch_seconds(loop, a, b, n)
        if t >= target_s / 5 or n >= 1 << 22:
            break
        n *= 4
    return max(1, int(n * target_s / max(t, 1e-9)))


def median(xs):
    s = sorted(xs)
    k = len(s)
    return s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) / 2


def summarize(samples, keep=None):
    """(median, min, max) of a list of per-call seconds, over the rounds in ``keep`` (default all)."""
    if keep is not None:
        samples = [samples[i] for i in keep]
    return median(samples), min(samples), max(samples)


QUIET_CORES = 0.3  # as in the CPU anchors: rounds where other processes used more are dropped
MIN_KEPT = 3


def quiet_rounds(loads):
    """(indices of the rounds to summarize, whether they are quiet ones): the rounds where other
    processes used at most QUIET_CORES if there are MIN_KEPT of them, else every round."""
    quiet = [i for i, load in enumerate(loads) if load is not None and load <= QUIET_CORES]
    if len(quiet) >= MIN_KEPT:
        return quiet, True
    return list(range(len(loads))), False


def operands(values16, mat4, n_sq, convert):
    """The operands of every case, converted by ``convert(list_of_rows_or_values)``."""
    cases = {"add16": (convert(values16[0]), convert(values16[1])),
             "mul16": (convert(values16[0]), convert(values16[1])),
             "sum16": (convert(values16[0]), None),
             "matmul4": (convert(mat4[0]), convert(mat4[1]))}
    for n in n_sq:
        cases[n] = (convert(n_sq[n][0]), convert(n_sq[n][1]))
    return cases


def inputs(sizes):
    """The same float32-exact values for every implementation, from ember's seeded generator."""
    g = ember.Generator(0)

    def vec(k):
        return ember.tensor(g.normals(k)).tolist()  # rounded to float32 once, so all sides agree

    def mat(n):
        flat = vec(n * n)
        return [flat[i * n:(i + 1) * n] for i in range(n)]

    values16 = (vec(16), vec(16))
    mat4 = (mat(4), mat(4))
    squares = {}
    for n in sizes:
        squares[n] = (mat(n), mat(n))
    return values16, mat4, squares


def run_rounds(cells, rounds, target_s, shuffle, meter=None):
    """Time every cell once per round, in shuffled order.

    ``cells`` maps a name to (loop, a, b); each batch lasts about ``target_s`` seconds. Returns
    ({cell name: [per-call seconds, one per round]}, [other processes' load per round, in cores]);
    the loads are measured by ``meter()`` objects when given, else None.
    """
    names = sorted(cells, key=str)
    counts = {}
    for name in names:
        loop, a, b = cells[name]
        counts[name] = calibrate(loop, a, b, target_s)
    samples = {}
    for name in names:
        samples[name] = []
    loads = []
    for _ in range(rounds):
        order = list(names)
        shuffle(order)
        m = meter() if meter else None
        for name in order:
            loop, a, b = cells[name]
            n = counts[name]
            samples[name].append(batch_seconds(loop, a, b, n) / n)
        loads.append(m.foreign_cores() if m else None)
    return samples, loads


def fmt_range(med, lo, hi, digits=2):
    f = "%." + str(digits) + "f"
    return (f + " [" + f + "-" + f + "]") % (med, lo, hi)


# ---------------------------------------------------------------------------------------------
# MicroPython: ember alone, small shapes; prints its own table and a JSON line for the parent.

def main_micropython():
    rounds, target_s = 5, 0.2  # batches of 0.2 s: ticks_us counts whole milliseconds in the wasm port
    values16, mat4, squares = inputs((64,))
    cpu = ember.Cpu()
    cases = operands(values16, mat4, squares, lambda v: ember.tensor(v, device=cpu))
    gen = ember.Generator(1)
    cells = {}
    for op in SMALL_OPS:
        cells[op] = (LOOPS[op],) + cases[op]
    cells["matmul64"] = (_loop_matmul,) + cases[64]
    samples, _ = run_rounds(cells, rounds, target_s, gen.shuffle)
    out = {}
    print("ember Cpu on MicroPython %s, median [min-max] over %d rounds"
          % (".".join(str(v) for v in sys.implementation.version[:3]), rounds))
    for op in SMALL_OPS:
        med, lo, hi = summarize(samples[op])
        out["mpy_%s_us" % op] = med * 1e6
        out["mpy_%s_us_range" % op] = [lo * 1e6, hi * 1e6]
        print("  %-8s %s us" % (op, fmt_range(med * 1e6, lo * 1e6, hi * 1e6)))
    med, lo, hi = summarize(samples["matmul64"])
    flop = 2.0 * 64 ** 3
    out["mpy_matmul_64_mflops"] = flop / med / 1e6
    out["mpy_matmul_64_mflops_range"] = [flop / hi / 1e6, flop / lo / 1e6]
    print("  matmul 64x64: %s MFLOP/s" % fmt_range(flop / med / 1e6, flop / hi / 1e6, flop / lo / 1e6))
    import json
    print(json.dumps(out))


# ---------------------------------------------------------------------------------------------
# CPython: ember, numpy and torch in the same rounds, then the MicroPython run.

def parse_args(argv):
    import argparse
    p = argparse.ArgumentParser(description="ember per-op speed beside numpy and PyTorch")
    p.add_argument("--rounds", type=int, default=9, help="timing rounds per cell (default 9)")
    p.add_argument("--target", type=float, default=0.1,
                   help="seconds per timed batch of small ops (default 0.1)")
    p.add_argument("--threads", type=int, default=1,
                   help="numpy/torch threads (default 1, as ember's Cpu backend uses one)")
    p.add_argument("--no-mpy", action="store_true", help="skip the MicroPython run")
    p.add_argument("--mpy-runner", default=None,
                   help="the MicroPython runner script (default tests/mpy/run.mjs)")
    p.add_argument("--no-overhead", action="store_true",
                   help="skip the per-op overhead figures (Autodiff recording, Wgpu dispatch)")
    p.add_argument("--overhead-only", action="store_true", help="measure only the per-op overhead")
    p.add_argument("--no-wgpu", action="store_true", help="leave Wgpu out of the per-op overhead")
    return p.parse_args(argv)


def load_references(threads):
    """{name: (module, version) or (None, why missing)} for numpy and torch."""
    import os
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)  # read when the libraries load, so set before importing
    refs = {}
    try:
        import numpy
        refs["numpy"] = (numpy, numpy.__version__)
    except ImportError as exc:
        refs["numpy"] = (None, "not installed (%s); pip install numpy" % exc)
    try:
        import torch
        torch.set_num_threads(threads)
        refs["torch"] = (torch, torch.__version__)
    except ImportError as exc:
        refs["torch"] = (None, "not installed (%s); pip install torch==2.13.0" % exc)
    return refs


def converters(refs):
    cpu = ember.Cpu(kernels="python")  # the pure-Python reference; bench/cpu.py measures the C kernels
    conv = {"ember": lambda v: ember.tensor(v, device=cpu)}
    if refs["numpy"][0] is not None:
        np = refs["numpy"][0]
        conv["numpy"] = lambda v: np.array(v, dtype=np.float32)
    if refs["torch"][0] is not None:
        torch = refs["torch"][0]
        conv["torch"] = lambda v: torch.tensor(v, dtype=torch.float32)
    if refs["numpy"][0] is not None:  # ember's NumPy device: its cost above raw numpy is the figure
        from ember.accel import NumPy
        dev = NumPy()
        conv["numpy_backend"] = lambda v: ember.tensor(v, device=dev)
    return conv


def apply(case, a, b):
    """What the timed loop for ``case`` computes, once."""
    if case == "add16":
        return a + b
    if case == "mul16":
        return a * b
    if case == "sum16":
        return a.sum()
    return a @ b


def check_results(cases, impls):
    """Largest |ember - reference| / max(1, |reference|) per reference over every case, so that a
    fast wrong answer cannot pass unnoticed."""
    worst = {}
    for impl in impls[1:]:
        err = 0.0
        for case in cases["ember"]:
            mine = _flat(apply(case, *cases["ember"][case]).tolist())
            ref = _flat(apply(case, *cases[impl][case]).tolist())
            scale = max([1.0] + [abs(v) for v in ref])
            err = max([err] + [abs(x - y) / scale for x, y in zip(mine, ref)])
        worst[impl] = err
    return worst


def _flat(x):
    if type(x) is list:
        out = []
        for v in x:
            out += _flat(v)
        return out
    return [x]


def run_micropython(runner):
    """(ember's MicroPython figures as a dict, their title line), or (None, why there are none)."""
    import json
    import os
    import shutil
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runner = runner or os.path.join(root, "tests", "mpy", "run.mjs")
    node = shutil.which("node")
    if node is None:
        return None, "node not found (MicroPython runs under Node.js)"
    if not os.path.isfile(runner):
        return None, "%s not found" % runner
    try:
        proc = subprocess.run([node, runner, "--script", os.path.abspath(__file__)], cwd=root,
                              capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "MicroPython run timed out after 600 s"
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        return None, "MicroPython run failed (exit %d): %s" % (proc.returncode, tail[0])
    return json.loads(lines[-1]), lines[0] if len(lines) > 1 else ""


def main_cpython(argv):
    import json

    from _load import LoadMeter  # bench/_load.py (CPython only: this script also runs on MicroPython)
    import op_overhead  # bench/op_overhead.py (CPython only too)
    import platform
    import random

    args = parse_args(argv)
    if args.overhead_only:
        out = op_overhead.measure(args.rounds, args.target, not args.no_wgpu)
        for line in op_overhead.report(out):
            print(line)
        print(json.dumps(op_overhead.rounded(out), sort_keys=True))
        return
    refs = load_references(args.threads)
    conv = converters(refs)
    impls = [name for name in ("ember", "numpy", "torch", "numpy_backend") if name in conv]
    values16, mat4, squares = inputs(MATMUL_SIZES)
    cases = {}
    for impl in impls:
        cases[impl] = operands(values16, mat4, squares, conv[impl])
    errors = check_results(cases, impls)
    rng = random.Random(0)

    print("ember ops benchmark: ember's pure-Python Cpu backend beside numpy and PyTorch")
    print("  CPython %s on %s, %d logical CPUs; numpy/torch threads: %d"
          % (platform.python_version(), platform.machine(), _cpu_count(), args.threads))
    for name in ("numpy", "torch"):
        mod, info = refs[name]
        print("  %-6s %s" % (name, info if mod is not None else "MISSING: " + info))
    for impl in sorted(errors):
        print("  results agree with %s: max relative difference %.1e" % (impl, errors[impl]))

    cells = {}
    for impl in impls:
        for op in SMALL_OPS:
            cells[(impl, op)] = (LOOPS[op],) + cases[impl][op]
    small, small_loads = run_rounds(cells, args.rounds, args.target, rng.shuffle, LoadMeter)
    cells = {}
    for impl in impls:
        for n in MATMUL_SIZES:
            cells[(impl, n)] = (_loop_matmul,) + cases[impl][n]
    big_rounds = max(3, (args.rounds + 1) // 2)
    big, big_loads = run_rounds(cells, big_rounds, 2 * args.target, rng.shuffle, LoadMeter)
    (keep_small, quiet_small), (keep_big, quiet_big) = quiet_rounds(small_loads), quiet_rounds(big_loads)

    mpy, mpy_info = (None, "skipped (--no-mpy)") if args.no_mpy else run_micropython(args.mpy_runner)

    result = {}
    spread = {}
    for impl in impls:
        prefix = "" if impl == "ember" else impl + "_"
        for op in SMALL_OPS:
            med, lo, hi = summarize(small[(impl, op)], keep_small)
            result[prefix + op + "_us"] = med * 1e6
            spread[prefix + op + "_us"] = [lo * 1e6, hi * 1e6]
        for n in MATMUL_SIZES:
            med, lo, hi = summarize(big[(impl, n)], keep_big)
            flop = 2.0 * n ** 3
            key = ("pure" if impl == "ember" else impl) + "_matmul_%d_mflops" % n
            result[key] = flop / med / 1e6
            spread[key] = [flop / hi / 1e6, flop / lo / 1e6]
    for ref in ("numpy", "torch"):
        for op in SMALL_OPS:
            r = ref + "_" + op + "_us"
            result[op + "_vs_" + ref] = result[r] / result[op + "_us"] if r in result else None
            result.setdefault(r, None)
        for n in MATMUL_SIZES:
            r = ref + "_matmul_%d_mflops" % n
            pure = result["pure_matmul_%d_mflops" % n]
            # a time ratio like the others: reference time / ember time = ember rate / reference rate
            result["pure_matmul_%d_vs_%s" % (n, ref)] = pure / result[r] if r in result else None
            result.setdefault(r, None)
    if "numpy_backend" in impls:
        result["numpy_backend_add16_overhead_us"] = result["numpy_backend_add16_us"] - result["numpy_add16_us"]
    else:
        result["numpy_backend_add16_overhead_us"] = None
    for key in ("mpy_matmul_64_mflops", "mpy_add16_us", "mpy_mul16_us", "mpy_sum16_us", "mpy_matmul4_us"):
        result[key] = mpy.get(key) if mpy else None
        if mpy and key + "_range" in mpy:
            spread[key] = mpy[key + "_range"]

    loads = [v for v in small_loads + big_loads if v is not None]
    foreign = median(loads) if loads else None
    kept = (len(keep_small), len(keep_big))
    print_tables(result, spread, impls, kept, (args.rounds, big_rounds), foreign, quiet_small and quiet_big,
                 mpy, mpy_info)
    if not args.no_overhead:
        overhead = op_overhead.measure(args.rounds, args.target, not args.no_wgpu)
        for line in op_overhead.report(overhead):
            print(line)
        print()
        for key, value in overhead.items():
            if key == "spread":
                spread.update(value)
            else:
                result[key] = value
        for key, goal in op_overhead.GOALS.items():
            result["goal_" + key] = goal
    result["goal_add16_us"] = GOALS["add16_us"]
    result["goal_pure_matmul_128_mflops"] = GOALS["pure_matmul_128_mflops"]
    result["rounds"] = [args.rounds, big_rounds]
    result["rounds_kept"] = list(kept)
    result["threads"] = args.threads
    result["foreign_cores"] = foreign
    result["spread"] = spread
    result["versions"] = {"python": platform.python_version(),
                          "numpy": refs["numpy"][1] if refs["numpy"][0] else None,
                          "torch": refs["torch"][1] if refs["torch"][0] else None}
    print(json.dumps(op_overhead.rounded(result), sort_keys=True))


def _cpu_count():
    import os
    return os.cpu_count() or 1


def _cell(result, spread, key, digits=2):
    v = result.get(key)
    if v is None:
        return "-"
    lo, hi = spread.get(key, (v, v))
    return fmt_range(v, lo, hi, digits)


def _ratio(v):
    return "-" if v is None else "%.3g" % v


def _goal(value, goal, smaller_is_better):
    if value is None:
        return "goal %s %g" % ("<=" if smaller_is_better else ">=", goal)
    met = value <= goal if smaller_is_better else value >= goal
    return "goal %s %g: %s" % ("<=" if smaller_is_better else ">=", goal, "met" if met else "NOT met")


def print_tables(result, spread, impls, kept, rounds, foreign, quiet, mpy, mpy_info):
    print()
    print("Per call, microseconds: median [min-max] over %d rounds (lower is better)." % kept[0])
    print("vs X = X's time / ember's time: above 1 means ember is faster.")
    head = "%-8s %-22s %-22s %-22s %9s %9s  %-22s %s"
    print(head % ("op", "ember Cpu", "numpy", "torch", "vs numpy", "vs torch", "ember on MicroPython", ""))
    for op in SMALL_OPS:
        goal = _goal(result[op + "_us"], GOALS["add16_us"], True) if op == "add16" else ""
        print(head % (op, _cell(result, spread, op + "_us"), _cell(result, spread, "numpy_" + op + "_us"),
                      _cell(result, spread, "torch_" + op + "_us"), _ratio(result[op + "_vs_numpy"]),
                      _ratio(result[op + "_vs_torch"]), _cell(result, spread, "mpy_" + op + "_us", 1), goal))
    if result.get("numpy_backend_add16_us") is not None:
        print("ember on its NumPy device: add16 %s us, %.2f us above raw numpy (goal <= 1.5)"
              % (_cell(result, spread, "numpy_backend_add16_us"), result["numpy_backend_add16_overhead_us"]))
    print()
    print("Square float32 matmul, MFLOP/s (2n^3 / time): median [min-max] over %d rounds (higher is better)."
          % kept[1])
    head = "%-8s %-22s %-24s %-24s %9s %9s  %-22s %s"
    print(head % ("n", "ember Cpu", "numpy", "torch", "vs numpy", "vs torch", "ember on MicroPython", ""))
    for n in MATMUL_SIZES:
        goal = _goal(result["pure_matmul_128_mflops"], GOALS["pure_matmul_128_mflops"], False) if n == 128 else ""
        mpy_cell = _cell(result, spread, "mpy_matmul_64_mflops") if n == 64 else ""
        print(head % ("%dx%d" % (n, n), _cell(result, spread, "pure_matmul_%d_mflops" % n, 1),
                      _cell(result, spread, "numpy_matmul_%d_mflops" % n, 0),
                      _cell(result, spread, "torch_matmul_%d_mflops" % n, 0),
                      _ratio(result["pure_matmul_%d_vs_numpy" % n]), _ratio(result["pure_matmul_%d_vs_torch" % n]),
                      mpy_cell, goal))
    print()
    missing = [name for name in ("numpy", "torch") if name not in impls]
    for name in missing:
        print("%s is missing: its columns and ratios are empty (null in the JSON)." % name)
    if mpy is None:
        print("MicroPython: %s" % mpy_info)
    else:
        print("MicroPython column: ember alone, from `node tests/mpy/run.mjs --script bench/ops.py`, run by "
              "this script (%s)." % mpy_info)
    if foreign is not None:
        print("Other processes used %.2f cores (median over rounds) while CPython was measured." % foreign)
        if quiet:
            print("Kept the rounds where they used at most %.1f cores: %d of %d (small ops), %d of %d (matmul)."
                  % (QUIET_CORES, kept[0], rounds[0], kept[1], rounds[1]))
        else:
            print("Fewer than %d rounds of a phase were quiet (other processes at most %.1f cores), so every round "
                  "is kept: the machine was busy, figures may be skewed; run again when it is quiet."
                  % (MIN_KEPT, QUIET_CORES))
    print()


if __name__ == "__main__":
    if MICROPYTHON:
        main_micropython()
    else:
        main_cpython(sys.argv[1:])
