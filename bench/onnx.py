"""ResNet-18 and the small BERT-like encoder at batch 1: ember beside onnxruntime in one run.

    python bench/onnx.py [--rounds N] [--target S] [--clock cpu|wall] [--wgpu] [--models encoder,...]

The models are tools/onnx_fixtures.py's (random weights, made at first use in tests/.cache/onnx):
onnxruntime runs torch.onnx.export's file, ember runs the same model built with ember.nn and
loaded with the same weights, on the C-backed Cpu and on NumPy (``--wgpu`` adds Wgpu). One
thread everywhere (EMBER_NUM_THREADS, BLAS, onnxruntime's intra- and inter-op pools). Every cell
is timed once per round, the cells in shuffled order; a figure is the median over rounds. Rounds
in which other processes used more than 0.3 cores are dropped while at least 3 remain. The last
line is one JSON object: per-cell milliseconds and ``resnet18_b1_vs_ort``/``encoder_b1_vs_ort``,
onnxruntime's time divided by ember's on the fastest CPU device for the .onnx file itself, run
through ``ember.accel.onnx.load`` (the importer's path; the ``*_onnxload_*`` cells; above 1: ember
is faster). ``*_b1_nn_vs_ort`` is the same for the model built with ember.nn (eager). The
``*_compiled`` cells run the C-Cpu ember.nn and onnx.load models under ``ember.accel.compile`` (step
capture, docs/capture.md); ``*_b1_compiled_vs_ort`` is the faster of the two (``--no-compiled``
drops them).
"""
import os

for _v in ("EMBER_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import importlib.util  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from _load import LoadMeter  # noqa: E402  (bench/_load.py: this script's folder is on sys.path)

# this file is named onnx.py: with its folder on sys.path, the importer's ``import onnx`` would find it
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

MODELS = ("resnet18", "encoder")
QUIET_CORES = 0.3
MIN_KEPT = 3


def parse_args(argv):
    import argparse
    p = argparse.ArgumentParser(description="ember beside onnxruntime on ResNet-18 and an encoder, batch 1")
    p.add_argument("--rounds", type=int, default=9, help="timing rounds (default 9)")
    p.add_argument("--target", type=float, default=0.3, help="seconds per timed batch (default 0.3)")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="cpu: this process's CPU time (busy neighbours do not inflate it; default); wall: elapsed")
    p.add_argument("--wgpu", action="store_true", help="also time ember on Wgpu (not in the ratio)")
    p.add_argument("--no-compiled", action="store_true", help="leave out the ember.accel.compile cells")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of %s" % ",".join(MODELS))
    p.add_argument("--no-onnx-numpy", action="store_true", help="time the onnx.load cells on the C Cpu only")
    args = p.parse_args(argv)
    args.models = tuple(m for m in args.models.split(",") if m)
    bad = [m for m in args.models if m not in MODELS]
    if bad or not args.models:
        p.error("--models: expected names from %s, found %s" % (",".join(MODELS), ",".join(bad) or "none"))
    return args


def median(xs):
    s = sorted(xs)
    k = len(s)
    return s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) / 2


def _fixtures():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "onnx_fixtures.py")
    spec = importlib.util.spec_from_file_location("onnx_fixtures", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cells(args):
    """{name: a function running one forward}, each checked against onnxruntime's output first."""
    import numpy as np
    import onnxruntime as ort
    import ember
    import ember.nn as nn
    from ember.accel import NumPy, from_numpy
    from ember.accel import compile, onnx as ember_onnx
    fx = _fixtures()
    folder = fx.ensure(names=args.models)
    devices = [("cpu_c", ember.Cpu(kernels="c")), ("numpy", NumPy())]
    if args.wgpu:
        from ember.accel import Wgpu
        devices.append(("wgpu", Wgpu()))
    out = {}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    for name in args.models:
        base = os.path.join(folder, name)
        x, expected, state = np.load(base + ".input.npy"), np.load(base + ".expected.npy"), np.load(base + ".npz")
        session = ort.InferenceSession(base + ".onnx", options, providers=["CPUExecutionProvider"])
        feeds = {"input": x}
        out["%s_ort" % name] = lambda s=session, f=feeds: s.run(None, f)
        for dev_name, dev in devices:
            model, _ = fx.build(name, nn, ember)
            model.load_state_dict({k: from_numpy(state[k]).to("cpu") for k in state.files})
            model.eval().to(dev)
            xe = from_numpy(x).to("cpu").to(dev)
            err = float(np.abs(model(xe).numpy() - expected).max())
            if err > 1e-4:
                raise SystemExit("bench/onnx.py: %s on %s differs from onnxruntime by %g (expected <= 1e-4)"
                                 % (name, dev_name, err))
            out["%s_ember_%s" % (name, dev_name)] = lambda m=model, v=xe: m(v).numpy()
        # the same file imported by ember.accel.onnx.load (what a user of the importer runs)
        for dev_name, dev in devices[:1] if args.no_onnx_numpy else devices:
            model = ember_onnx.load(base + ".onnx", device=dev).eval()
            xe = from_numpy(x).to("cpu").to(dev)
            err = float(np.abs(model(xe).numpy() - expected).max())
            if err > 1e-4:
                raise SystemExit("bench/onnx.py: onnx.load(%s) on %s differs from onnxruntime by %g (expected <= 1e-4)"
                                 % (name, dev_name, err))
            out["%s_onnxload_%s" % (name, dev_name)] = lambda m=model, v=xe: m(v).numpy()
        if not args.no_compiled:
            # both C-Cpu models under ember.accel.compile (step capture replays the recorded kernels)
            for kind in ("ember", "onnxload"):
                fn = out["%s_%s_cpu_c" % (name, kind)]
                model, xe = fn.__defaults__
                step = compile(lambda v, m=model: m(v))
                for _ in range(3):
                    y = step(xe)
                err = float(np.abs(y.numpy() - expected).max())
                if err > 1e-4 or step.stats.get("replayed", 0) < 1:
                    raise SystemExit("bench/onnx.py: compiled %s (%s) differs from onnxruntime by %g or did not "
                                     "replay (%s, %s)" % (name, kind, err, step.stats, step.refused))
                out["%s_%s_cpu_c_compiled" % (name, kind)] = lambda f=step, v=xe: f(v).numpy()
    return out


def calibrate(fn, target, clock):
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            fn()
        dt = clock() - t0
        if dt >= target / 4 or n >= 1 << 16:
            return max(1, int(n * target / max(dt, 1e-9)))
        n *= 2


def main(argv):
    args = parse_args(argv)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    fns = cells(args)
    reps = {k: calibrate(f, args.target, clock) for k, f in fns.items()}
    times = {k: [] for k in fns}
    dropped = 0
    order = list(fns)
    rng = random.Random(16)
    for r in range(args.rounds):
        rng.shuffle(order)
        meter = LoadMeter()
        got = {}
        for k in order:
            t0 = clock()
            for _ in range(reps[k]):
                fns[k]()
            got[k] = (clock() - t0) / reps[k] * 1e3
        busy = meter.foreign_cores()
        if busy is not None and busy > QUIET_CORES and args.rounds - dropped > MIN_KEPT:
            dropped += 1
            continue
        for k, v in got.items():
            times[k].append(v)
    result = {"%s_ms" % k: round(median(v), 3) for k, v in sorted(times.items())}
    for name in args.models:
        ember_ms = min(median(times["%s_ember_%s" % (name, d)]) for d in ("cpu_c", "numpy"))
        result["%s_b1_nn_vs_ort" % name] = round(median(times["%s_ort" % name]) / ember_ms, 3)
        loaded = [median(v) for k, v in times.items()
                  if k.startswith("%s_onnxload_" % name) and not k.endswith("_compiled")]
        # the figure: the imported file, as onnx.load gives it, on the fastest CPU device
        result["%s_b1_vs_ort" % name] = round(median(times["%s_ort" % name]) / min(loaded), 3)
        compiled = [median(v) for k, v in times.items() if k.startswith(name + "_") and k.endswith("_compiled")]
        if compiled:
            result["%s_b1_compiled_vs_ort" % name] = round(median(times["%s_ort" % name]) / min(compiled), 3)
    result.update(rounds_kept=args.rounds - dropped, rounds_dropped=dropped, clock=args.clock, threads=1)
    for k, v in sorted(result.items()):
        print("%-32s %s" % (k, v))
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1:])
