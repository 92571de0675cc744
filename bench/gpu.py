"""The Wgpu device on a real GPU, beside PyTorch CUDA in the same run (issue 9's goals).

    python bench/gpu.py [--quick] [--json PATH]

Measures, each after a warm-up (pipelines compiled, autotuning done) and timed over several
repetitions between two synchronizing reads:

- matmul f32 at 1024, 4096, 8192 (PyTorch with TF32 off) and f16 (PyTorch f16, tensor cores), in
  TFLOP/s; ``*_vs_torch`` is PyTorch's time divided by ember's; the variant the autotuner kept;
- one elementwise op (``x * 1.5``) over 64M floats against the device copy bandwidth (PyTorch's
  ``copy_``, bytes read plus written), with the vec4 widths of the elementwise kernels;
- GELU written from primitives (``x * 0.5 * (1 + erf(x / sqrt 2))``) on 64M floats, against
  PyTorch eager (the same formula) and ``torch.compile``, in effective TB/s (8 bytes per element);
- the cost of a queued op: wall time of 1,000 small elementwise ops queued back to back then read
  once, divided by 1,000 (and the same for several submit batch sizes);
- training steps (forward, cross entropy, backward, SGD) of an MLP 784-128-10 and LeNet-5 at
  batch 64, through ``Autodiff(Wgpu())``, beside PyTorch CUDA.

``--quick`` shrinks every size (for a smoke run on a CPU adapter). The last line of the output is
one JSON object with ``matmul_f32_4096_vs_torch``, ``matmul_f16_4096_vs_torch``,
``elementwise_vs_copy`` and ``queued_op_us`` first, then every raw figure.
"""
import json
import math
import os
import statistics
import sys
import time

import ember
import ember.nn.functional as F
from ember.accel import Wgpu
from ember.accel.wgpu import autotune, device as wdevice

QUICK = "--quick" in sys.argv
OUT = {}


def log(*args):
    print(*args, flush=True)


def arg(name, default=None):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def load_torch():
    try:
        import torch
    except ImportError as e:
        return None, "torch missing: %s" % e
    if not torch.cuda.is_available():
        return None, "torch has no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, torch.cuda.get_device_name(0)


def from_numpy(a, dev, dtype):
    """An ember tensor from a numpy array through to_bytes' layout (fast, exact)."""
    return ember.tensor(a.tobytes(), dtype=dtype, shape=a.shape, device=dev)


def timed(fn, sync, reps, rounds=5):
    """Median seconds per call of ``fn`` over ``rounds`` rounds of ``reps`` calls, each round
    between two synchronizations."""
    fn()
    sync()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        out.append((time.perf_counter() - t0) / reps)
    return statistics.median(out)


def torch_timed(torch, fn, reps, rounds=5):
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / 1000.0 / reps)
    return statistics.median(out)


# -- matmul -----------------------------------------------------------------------------------------

def bench_matmul(dev, torch, np):
    sizes = (256, 512) if QUICK else (1024, 4096, 8192)
    rng = np.random.default_rng(0)
    for dname, np_dt, e_dt in (("f32", np.float32, ember.float32), ("f16", np.float16, ember.float16)):
        for n in sizes:
            a = rng.standard_normal((n, n)).astype(np_dt)
            b = rng.standard_normal((n, n)).astype(np_dt)
            ea, eb = from_numpy(a, dev, e_dt), from_numpy(b, dev, e_dt)
            t_tune = time.perf_counter()
            c = ea @ eb  # tunes on first use
            dev.synchronize()
            tune_s = time.perf_counter() - t_tune
            # accuracy against float64 on the host, on a corner (a full check costs minutes at 8192)
            k = min(n, 256)
            ref = a[:k].astype(np.float64) @ b[:, :k].astype(np.float64)
            got = np.frombuffer(c[:k, :k].to_bytes(), dtype=np_dt).reshape(k, k).astype(np.float64)
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            flops = 2.0 * n ** 3
            reps = max(1, int(2e12 / flops)) if not QUICK else 1
            t = timed(lambda: ea @ eb, dev.synchronize, reps)
            key = "matmul_%s_%d" % (dname, n)
            OUT[key + "_tflops"] = flops / t / 1e12
            OUT[key + "_rel_err"] = err
            OUT[key + "_tune_s"] = tune_s
            OUT[key + "_variant"] = _chosen(dev, "matmul", e_dt, (n, n, n))
            line = "%s: ember %.2f TFLOP/s (%s, rel err %.1e, first call %.1f s)" % (
                key, OUT[key + "_tflops"], OUT[key + "_variant"], err, tune_s)
            if torch is not None:
                ta = torch.tensor(a, device="cuda")
                tb = torch.tensor(b, device="cuda")
                tt = torch_timed(torch, lambda: ta @ tb, reps)
                OUT["torch_" + key + "_tflops"] = flops / tt / 1e12
                OUT[key + "_vs_torch"] = tt / t
                line += "; torch %.2f TFLOP/s; ratio %.3f" % (flops / tt / 1e12, tt / t)
                del ta, tb
            log(line)
            del ea, eb, c
    OUT["autotune"] = {k: {n: (None if s is None else round(s * 1e3, 4)) for n, s in times.items()}
                       for k, times in autotune.tunings}


def _chosen(dev, op, dtype, dims):
    autotune._load()
    return autotune._memory.get(autotune.key_for(dev.rt.label, op, dtype, dims), "default")


# -- elementwise, GELU ------------------------------------------------------------------------------

def bench_elementwise(dev, torch, np):
    n = (1 << 20) if QUICK else (1 << 26)
    x = from_numpy(np.random.default_rng(1).standard_normal(n).astype(np.float32), dev, ember.float32)
    nbytes = 8.0 * n  # read 4, write 4
    widths = {}
    for vec in (1, 2, 4):
        wdevice.VEC4_PER_THREAD = vec
        t = timed(lambda: x * 1.5, dev.synchronize, 10 if not QUICK else 2)
        widths[vec] = nbytes / t / 1e12
    best = max(widths, key=widths.get)
    wdevice.VEC4_PER_THREAD = DEFAULT_VEC
    # the ceiling for a WGSL kernel here: ember's own copy kernel (vec4 loads and stores)
    src = x._data
    t = timed(lambda: dev._copy_into(src, dev._alloc(src.shape, src.dtype)), dev.synchronize, 10 if not QUICK else 2)
    OUT["wgsl_copy_tbps"] = nbytes / t / 1e12
    t = timed(lambda: x * 1.5, dev.synchronize, 10 if not QUICK else 2)
    OUT["elementwise_tbps"] = nbytes / t / 1e12
    OUT["elementwise_tbps_by_vec4_per_thread"] = widths
    OUT["elementwise_default_vec4_per_thread"] = DEFAULT_VEC
    log("elementwise x*1.5 over %d floats: %.3f TB/s (vec4 per thread: %s; best %d); WGSL copy %.3f TB/s"
        % (n, OUT["elementwise_tbps"], {k: round(v, 3) for k, v in widths.items()}, best, OUT["wgsl_copy_tbps"]))
    # GELU from primitives, ember's own gelu composite
    t = timed(lambda: x * 0.5 * (1.0 + (x * (1.0 / math.sqrt(2.0))).erf()), dev.synchronize, 3 if not QUICK else 1)
    OUT["gelu_primitives_tbps"] = nbytes / t / 1e12
    OUT["gelu_primitives_ms"] = t * 1e3
    log("GELU from primitives: %.3f ms, %.3f TB/s effective" % (t * 1e3, nbytes / t / 1e12))
    if torch is None:
        return
    tx = torch.randn(n, device="cuda")
    ty = torch.empty_like(tx)
    tc = torch_timed(torch, lambda: ty.copy_(tx), 20)
    OUT["copy_tbps"] = nbytes / tc / 1e12
    OUT["elementwise_vs_copy"] = OUT["elementwise_tbps"] / OUT["copy_tbps"]
    te = torch_timed(torch, lambda: tx * 1.5, 20)
    OUT["torch_elementwise_tbps"] = nbytes / te / 1e12
    log("copy (torch copy_): %.3f TB/s; torch x*1.5: %.3f TB/s; ember/copy %.3f"
        % (OUT["copy_tbps"], OUT["torch_elementwise_tbps"], OUT["elementwise_vs_copy"]))

    tg = torch_timed(torch, lambda: torch_gelu(torch, tx), 5)
    OUT["torch_gelu_eager_tbps"] = nbytes / tg / 1e12
    OUT["gelu_vs_torch_eager"] = tg / t
    log("torch GELU eager (same formula) %.3f TB/s" % OUT["torch_gelu_eager_tbps"])


def torch_gelu(torch, v):
    return v * 0.5 * (1.0 + torch.erf(v * (1.0 / math.sqrt(2.0))))


def bench_torch_compile(dev, torch, np):
    """torch.compile of the same GELU (last: its compiler may take a while, or be missing)."""
    if torch is None:
        return
    n = (1 << 20) if QUICK else (1 << 26)
    tx = torch.randn(n, device="cuda")
    try:
        compiled = torch.compile(lambda v: torch_gelu(torch, v))
        tgc = torch_timed(torch, lambda: compiled(tx), 5)
        OUT["torch_gelu_compile_tbps"] = 8.0 * n / tgc / 1e12
        OUT["gelu_vs_torch_compile"] = tgc * 1e3 / OUT["gelu_primitives_ms"]
    except Exception as e:  # no triton, no compiler: say so
        OUT["torch_gelu_compile_tbps"] = None
        OUT["torch_compile_error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
    log("torch GELU compiled: %s TB/s" % OUT.get("torch_gelu_compile_tbps"))


# -- queued op cost --------------------------------------------------------------------------------

def bench_queued(dev, torch):
    ops = 1000

    def run():
        x = ember.ones(256, device=dev)
        dev.synchronize()
        t0 = time.perf_counter()
        for _ in range(ops):
            x = x + 1.0
        v = x[0].item()
        assert v == ops + 1.0
        return (time.perf_counter() - t0) / ops * 1e6
    rt = dev.rt
    default = rt.auto_flush
    by_batch = {}
    for batch in (32, 128, 512, 100000):
        rt.auto_flush = batch
        run()
        by_batch[batch] = statistics.median([run() for _ in range(7)])
    rt.auto_flush = default
    run()
    OUT["queued_op_us"] = statistics.median([run() for _ in range(9)])
    OUT["queued_op_us_by_batch"] = by_batch
    OUT["queued_op_batch_default"] = default
    # the host's share: recording only, no wait
    x = ember.ones(256, device=dev)
    dev.synchronize()
    t0 = time.perf_counter()
    for _ in range(ops):
        x = x + 1.0
    OUT["record_op_us"] = (time.perf_counter() - t0) / ops * 1e6
    dev.synchronize()
    log("queued op: %.2f us (by submit batch: %s; recording alone %.2f us)"
        % (OUT["queued_op_us"], {k: round(v, 2) for k, v in by_batch.items()}, OUT["record_op_us"]))
    if torch is not None:
        tx = torch.ones(256, device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(ops):
            tx = tx + 1.0
        tx[0].item()
        OUT["torch_queued_op_us"] = (time.perf_counter() - t0) / ops * 1e6
        log("torch queued op: %.2f us" % OUT["torch_queued_op_us"])


# -- training steps -----------------------------------------------------------------------------------

def bench_training(dev, torch, np):
    from ember.accel.autodiff import Autodiff
    from ember.accel.optim import SGD
    from _models import LeNet, MLP  # bench/_models.py, shared with bench/train_step.py

    batch = 64
    rng = np.random.default_rng(2)
    ad = Autodiff(dev)
    for name, cls, shape in (("mlp", MLP, (batch, 784)), ("lenet", LeNet, (batch, 1, 28, 28))):
        xs = rng.standard_normal(shape).astype(np.float32)
        ys = rng.integers(0, 10, batch)
        model = cls(ember.Generator(0)).to(ad)
        opt = SGD(model, lr=0.01)
        x = from_numpy(xs, dev, ember.float32).to(ad)
        y = ember.tensor(ys.tolist(), dtype=ember.int64, device=ad)

        def step():
            loss = F.cross_entropy(model(x), y)
            opt.step(loss.backward())
            return loss
        first = step().item()
        t = timed(step, dev.synchronize, 20 if not QUICK else 2)
        OUT["%s_b%d_step_ms" % (name, batch)] = t * 1e3
        line = "%s step (batch %d): ember %.3f ms (first loss %.4f)" % (name, batch, t * 1e3, first)
        if torch is not None:
            nn = torch.nn
            if name == "mlp":
                tm = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
            else:
                tm = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                   nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                                   nn.Linear(84, 10)).cuda()
            topt = torch.optim.SGD(tm.parameters(), lr=0.01)
            tx, ty = torch.tensor(xs, device="cuda"), torch.tensor(ys, device="cuda")

            def tstep():
                topt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(tm(tx), ty)
                loss.backward()
                topt.step()
            tt = torch_timed(torch, tstep, 20)
            OUT["torch_%s_b%d_step_ms" % (name, batch)] = tt * 1e3
            OUT["%s_b%d_step_vs_torch" % (name, batch)] = tt / t
            line += "; torch %.3f ms; ratio %.3f" % (tt * 1e3, tt / t)
        log(line)


DEFAULT_VEC = wdevice.VEC4_PER_THREAD


def probe_coop():
    """Compile and check each cooperative-matrix variant (run in a child process: a driver that
    aborts on one costs this probe, not the benchmark). Prints the names that work."""
    from ember.accel.wgpu import matmul_kernels as mk
    dev = Wgpu()
    ok = []
    for v in mk.COOP:
        dtype = ember.float16 if v.coop == 16 else ember.float32
        try:
            good = mk._check(dev, v.name, dtype)
            log("coop variant %s: %s" % (v.name, "correct" if good else "WRONG RESULT"))
        except Exception as e:
            good = False
            msg = str(e).split("\n   1  ")[0]  # the compiler's message, without the numbered source
            log("coop variant %s: %s" % (v.name, " | ".join(x.strip() for x in msg.splitlines() if x.strip())[-700:]))
        if good:
            ok.append(v.name)
    print("COOP_OK=" + ",".join(ok))


def run_probe():
    """The coop variants that compile and compute right here, or None when the probe died."""
    import subprocess
    if "EMBER_WGPU_COOP" in os.environ:
        return os.environ["EMBER_WGPU_COOP"]
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--probe-coop"], capture_output=True,
                           text=True, timeout=240)
    except subprocess.TimeoutExpired:
        log("coop probe: timed out")
        return None
    for line in (r.stdout + r.stderr).splitlines()[-40:]:
        if not line.startswith("COOP_OK="):
            log("  probe: " + line)
    found = [x for x in r.stdout.splitlines() if x.startswith("COOP_OK=")]
    if r.returncode != 0 or not found:
        log("coop probe: exited with %s" % r.returncode)
        return None
    return found[-1][len("COOP_OK="):]


def main():
    import numpy as np
    dev = Wgpu()
    rt = dev.rt
    OUT["features_refused"] = dict(rt.refused)
    if "cooperative-matrix" in rt.features and not QUICK:
        coop = run_probe()  # in a child process: a driver crash must not end this run
        OUT["coop_variants_ok"] = coop
        os.environ["EMBER_WGPU_COOP"] = coop or "0"
    torch, tinfo = load_torch()
    OUT["adapter"] = rt.label
    OUT["features"] = list(rt.features)
    OUT["max_binding_mib"] = rt.max_binding / 2 ** 20
    OUT["torch"] = tinfo
    log("adapter %s; features %s; torch: %s" % (rt.label, rt.features, tinfo))
    for part in (bench_matmul, bench_elementwise, bench_queued, bench_training, bench_torch_compile):
        t0 = time.perf_counter()
        try:
            if part is bench_queued:
                part(dev, torch)
            else:
                part(dev, torch, np)
        except Exception as e:  # keep the other figures when one part breaks
            import traceback
            traceback.print_exc()
            OUT["error_" + part.__name__] = "%s: %s" % (type(e).__name__, str(e)[:300])
        OUT["seconds_" + part.__name__] = round(time.perf_counter() - t0, 1)
        if arg("--json"):  # what is measured so far survives a timeout
            with open(arg("--json"), "w") as f:
                json.dump(OUT, f, indent=1, default=str)
    OUT["queue"] = dev.queue_stats()
    OUT["queue"].pop("batches", None)
    OUT["memory"] = dev.memory_stats()
    head = ["matmul_f32_4096_vs_torch", "matmul_f16_4096_vs_torch", "elementwise_vs_copy", "queued_op_us"]
    line = {k: OUT.get(k) for k in head}
    line.update({k: v for k, v in OUT.items() if k not in line})
    path = arg("--json")
    if path:
        with open(path, "w") as f:
            json.dump(line, f, indent=1, default=str)
    print(json.dumps(line, default=str))


if __name__ == "__main__":
    if "--probe-coop" in sys.argv:
        probe_coop()
    else:
        main()
