"""The Wgpu device on a real GPU, beside PyTorch CUDA in the same run (issue 9's goals).

    python bench/gpu.py [--quick] [--json PATH] [--only PARTS] [--torch-backend] [--help]

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
- training steps (forward, cross entropy, backward, SGD) of an MLP 784-128-10, LeNet-5 and the MNIST
  CNN at batch 64, eager and compiled (``ember.accel.compile``), through ``Autodiff(Wgpu())`` and
  ``Autodiff(Fusion(Wgpu()))`` (``*_fused_*`` keys), beside PyTorch CUDA eager, ``torch.compile``
  and a CUDA graph; ``mlp_b64_step_ms`` is the fastest lowered compiled step, with a read per step;
  ``*_compiled_step_ms_by_replay``: the compiled step with each replay's commands encoded by the
  replay before it (``lower_wgpu.AHEAD``, "ahead"), or as it runs, cut into command buffers
  submitted in turn (``lower_wgpu.PARTS``: fractions of the step's dispatches), settings interleaved;
  ``*_compiled_step_ms_by_split_k``: the compiled step under each split-K rule of ``SPLIT_RULES``
  (``matmul_kernels.SPLIT_MIN_K:SPLIT_CHUNK``: how a product with few output tiles is cut along K);
  the CNN also on ``Wgpu(random="philox")`` (``cnn_b64_fused_philox_*``: its dropout masks drawn on
  the GPU, not the host's stream; beside the others, never taken as the best);
- fusion (issue 13): GELU from primitives over 64M floats as one fused kernel through
  ``Fusion(Wgpu())`` (``gelu_fused_tbps``, ``gelu_fused_vs_copy`` against PyTorch's device copy;
  GPU time of a batch of calls by the GPU's timestamps, as CUDA events time PyTorch (``gpu_timing``
  names the method; ``*_submit_timed_*`` is the figure of one submit and wait, which adds the
  encoder's finish, the submit and the fence wait; ``*_wall_*`` adds the recording too),
  the fused kernel's vec4-per-thread widths, and a transformer MLP block forward (64 x 128 tokens,
  512 -> 2048 -> 512, bias + GELU in the matmul epilogue) against ``torch.compile`` and eager
  (``mlp_block_vs_torch_compile``, ``mlp_block_vs_torch_eager``).

``--quick`` shrinks every size (for a smoke run on a CPU adapter). ``--only NAME[,NAME]`` runs only
those parts (``matmul``, ``elementwise``, ``queued``, ``training``, ``torch_compile``, ``fusion``,
``torch_backend``, ``variants``: every tiled variant on the MLP block's products by GPU time, and
the tile shapes ``--variants BMxBNxBK_TMxTN,...`` names beside them). ``--torch-backend`` runs only the Torch device's part (issue 19: ``Torch("cuda")``
beside native PyTorch: ``torch_backend_f16_matmul_vs_torch``, ``torch_backend_op_overhead_vs_torch``,
``torch_backend_mlp_b64_step_vs_torch``...), without wgpu; without CUDA it runs on ``Torch("cpu")``. The last line of the output is
one JSON object with ``matmul_f32_4096_vs_torch``, ``matmul_f16_4096_vs_torch``,
``elementwise_vs_copy``, ``queued_op_us`` and the fusion figures first, then every raw figure.
"""
import json
import math
import os
import statistics
import sys
import time

import ember
import ember.nn.functional as F
try:  # --torch-backend runs on a CUDA machine without wgpu
    from ember.accel import Wgpu
    from ember.accel.wgpu import autotune, device as wdevice
except ImportError as _e:
    if "--torch-backend" not in sys.argv:
        raise
    Wgpu = autotune = wdevice = None

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


def bench_variants(dev, torch, np):
    """Every tiled float32 variant on the MLP block's two products and 4096^3, by GPU time (the
    tuner's view, without its rounding of sizes to powers of two), beside PyTorch's matmul."""
    from ember.accel.wgpu import matmul_kernels as mk
    shapes = ((256, 128, 64), (256, 64, 128)) if QUICK else ((8192, 2048, 512), (8192, 512, 2048), (4096, 4096, 4096))
    rng = np.random.default_rng(5)
    table = {}
    for m, n, k in shapes:
        a = from_numpy(rng.standard_normal((m, k)).astype(np.float32), dev, ember.float32)._data
        b = from_numpy(rng.standard_normal((k, n)).astype(np.float32), dev, ember.float32)._data
        out = dev._alloc((m, n), ember.float32)
        flops = 2.0 * m * n * k
        row = {}
        for v in mk.candidates(dev, ember.float32) + _extra_variants(mk):
            if v.coop:
                continue
            try:
                t = device_timed(dev, lambda: mk._run(dev, v, a, b, out), 2 if QUICK else 10)
                row[v.name] = round(flops / t / 1e12, 2)
            except Exception as e:
                row[v.name] = "%s: %s" % (type(e).__name__, str(e)[:120])
        shape = "%dx%dx%d" % (m, n, k)
        if torch is not None:
            ta = torch.randn(m, k, device="cuda")
            tb = torch.randn(k, n, device="cuda")
            row["torch"] = round(flops / torch_timed(torch, lambda: ta @ tb, 10) / 1e12, 2)
            del ta, tb
        table[shape] = row
        best = max((x for x in row.items() if x[0] != "torch" and not isinstance(x[1], str)), key=lambda x: x[1])
        log("matmul %s (M x N x K), TFLOP/s by variant (%s): %s; best %s; torch %s"
            % (shape, timing_method(dev), row, best, row.get("torch")))
    OUT["matmul_variants_tflops"] = table


def _extra_variants(mk):
    """Tile shapes to try beside the shipped ones (``--variants BMxBNxBK_TMxTN,...``)."""
    out = []
    for spec in (arg("--variants") or "").split(","):
        if spec.strip():
            tile, thread = spec.strip().split("_")
            out.append(mk.Variant(*(int(x) for x in tile.split("x") + thread.split("x"))))
    return out


def _chosen(dev, op, dtype, dims):
    """The variant the autotuner kept for ``op`` at ``dims`` ("matmul+": a fused product's), or "default"."""
    return autotune.cached(dev.rt.label, op, dtype, dims) or "default"


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


# -- fusion (issue 13) ---------------------------------------------------------------------------------

def gelu_primitives(v):
    """GELU written from primitives, the seed's form."""
    return v * ((v / math.sqrt(2.0)).erf() + 1) / 2


def _fusion_device(dev):
    """(Fusion(dev), None) or (None, why): the lead's decorator, when this tree has it."""
    try:
        try:
            from ember.accel import Fusion
        except ImportError:
            from ember.accel.fusion import Fusion
        return Fusion(dev), None
    except Exception as e:  # not merged yet, or broken: the compiler alone is measured
        return None, "%s: %s" % (type(e).__name__, str(e)[:200])


def device_timed(dev, fn, reps, rounds=5):
    """Median GPU seconds per call of ``reps`` calls recorded into one batch. Where the adapter
    has timestamp queries: the time the GPU's own clock gives from the batch's first dispatch to
    the end of its last (``Runtime.start_timing``), as CUDA events time the references. Elsewhere
    ``submit_timed``'s figure."""
    rt = dev.rt
    if "timestamp-query" not in rt.features:
        return submit_timed(dev, fn, reps, rounds)

    def one_round():
        rt.start_timing()
        keep = [fn() for _ in range(reps)]  # noqa: F841  (alive until the batch has run)
        return sum(rt.stop_timing()) / reps
    return _batched(dev, fn, one_round, rounds)


def submit_timed(dev, fn, reps, rounds=5):
    """Median seconds per call: ``reps`` calls recorded without a submit, then one submit and
    wait timed alone (what the GPU spends, without the host's recording, but with the encoder's
    finish, the submit and the fence wait shared by the calls). Beside ``timed``'s wall time,
    which adds the recording."""
    def one_round():
        keep = [fn() for _ in range(reps)]  # noqa: F841
        t0 = time.perf_counter()
        dev.synchronize()
        return (time.perf_counter() - t0) / reps
    return _batched(dev, fn, one_round, rounds)


def _batched(dev, fn, one_round, rounds):
    """The median of ``rounds`` calls of ``one_round`` after a warm-up call of ``fn``, with every
    call of a round recorded into one batch (no automatic submit)."""
    rt = dev.rt
    old = rt.auto_flush
    rt.auto_flush = 1 << 30
    try:
        fn()
        dev.synchronize()
        return statistics.median([one_round() for _ in range(rounds)])
    finally:
        rt.auto_flush = old


def timing_method(dev):
    return "GPU timestamps" if "timestamp-query" in dev.rt.features else "submit and wait"


def _dispatches(dev, fn):
    """How many kernels one call of ``fn`` launches."""
    dev.synchronize()
    before = dev.queue_stats()["dispatches"]
    fn()
    n = dev.queue_stats()["dispatches"] - before
    dev.synchronize()
    return n


def _realize(fdev, t):
    """Make the fused device compute ``t`` (queued, no host read): unwrap gives the inner array."""
    return fdev.unwrap(t._data)


def _gelu_kernel():
    from ember.accel.fusion.ir import Map, RowKernel
    nodes = [("load", "float32", 0), ("const", "float32", math.sqrt(2.0)), ("binary", "float32", "div", 0, 1),
             ("unary", "float32", "erf", 2), ("const", "float32", 1.0), ("binary", "float32", "add", 3, 4),
             ("binary", "float32", "mul", 0, 5), ("const", "float32", 2.0), ("binary", "float32", "div", 6, 7)]
    return RowKernel(1, None, ["float32"], nodes, [Map()], [(8, False)])


def _copy_kernel():
    from ember.accel.fusion.ir import Map, RowKernel
    return RowKernel(1, None, ["float32"], [("load", "float32", 0), ("unary", "float32", "neg", 0)], [Map()], [(1, False)])


def bench_fusion(dev, torch, np):
    from ember.accel.fusion import compile_wgsl
    n = (1 << 20) if QUICK else (1 << 26)
    nbytes = 8.0 * n
    reps = 2 if QUICK else 20
    xs = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    x = from_numpy(xs, dev, ember.float32)
    comp = compile_wgsl.WgslCompiler(dev)
    OUT["fusion_fused_fma"] = compile_wgsl.fused_fma(dev)  # reported only: no fast path needs it now
    OUT["fusion_fast_paths"] = comp.fast
    log("fusion: fma rounds once: %s; float32 fast paths: %s" % (OUT["fusion_fused_fma"], comp.fast))
    if torch is not None:
        try:
            tx = torch.tensor(xs, device="cuda")
            ty = torch.empty_like(tx)
            OUT["copy_tbps"] = nbytes / torch_timed(torch, lambda: ty.copy_(tx), 20) / 1e12
            log("torch device copy: %.3f TB/s" % OUT["copy_tbps"])
            del tx, ty
        except Exception as e:
            OUT["error_fusion_copy"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    # the fused kernels alone, at each vec4-per-thread width and workgroup size (the compiler's own
    # VEC and WG are the default)
    xa = x._data
    widths = {}
    default_vec, default_heavy, default_wg = compile_wgsl.VEC, compile_wgsl.VEC_HEAVY, compile_wgsl.WG
    for wg in (64, 128, 256, 512):
        for vec in (1, 2, 4, 8):
            compile_wgsl.VEC, compile_wgsl.VEC_HEAVY, compile_wgsl.WG = vec, vec, wg
            for name, kern in (("neg", _copy_kernel()), ("gelu", _gelu_kernel())):
                k = "%s_vec%d_wg%d" % (name, vec, wg)
                try:
                    t = device_timed(dev, lambda: comp.run(kern, (n,), [(xa, (1,), 0)])[0], reps)
                    widths[k] = nbytes / t / 1e12
                except Exception as e:
                    widths[k] = "%s: %s" % (type(e).__name__, str(e)[:200])
            log("fused kernels at %d vec4 per thread, %d threads a workgroup: neg %s TB/s, gelu %s TB/s"
                % (vec, wg, widths["neg_vec%d_wg%d" % (vec, wg)], widths["gelu_vec%d_wg%d" % (vec, wg)]))
    compile_wgsl.VEC, compile_wgsl.VEC_HEAVY, compile_wgsl.WG = default_vec, default_heavy, default_wg
    OUT["fusion_kernel_tbps_by_width"] = widths
    OUT["fusion_vec_default"] = default_vec
    # the float32 division by a constant against the correctly rounded quotient (numpy)
    try:
        from ember.accel.fusion.ir import Map, RowKernel
        m = min(n, 1 << 22)
        for c in (math.sqrt(2.0), 2.0, 3.0):
            k = RowKernel(1, None, ["float32"], [("load", "float32", 0), ("const", "float32", c),
                                                 ("binary", "float32", "div", 0, 1)], [Map()], [(2, False)])
            [q] = comp.run(k, (m,), [(xa, (1,), 0)])
            got = np.frombuffer(dev.to_bytes(q), dtype=np.float32)
            want = (xs[:m].astype(np.float64) / c).astype(np.float32)
            unfused = np.frombuffer(dev.to_bytes(dev.binary("div", dev.slice(xa, ((0, m, 1),)), c)), dtype=np.float32)
            OUT["fusion_div_%g_mismatch_vs_numpy" % c] = int(np.sum(got.view(np.uint32) != want.view(np.uint32)))
            OUT["fusion_div_%g_mismatch_vs_unfused" % c] = int(np.sum(got.view(np.uint32) != unfused.view(np.uint32)))
            OUT["unfused_div_%g_mismatch_vs_numpy" % c] = int(np.sum(unfused.view(np.uint32) != want.view(np.uint32)))
        log("division by constants, values differing (fused vs numpy / vs unfused; unfused vs numpy): %s"
            % {k: v for k, v in OUT.items() if "_div_" in k})
    except Exception as e:
        import traceback
        traceback.print_exc()
        OUT["error_fusion_div_check"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    _fusion_gelu(dev, torch, np, comp, x, xs, n, reps)
    _fusion_mlp(dev, torch, np, comp)


def _fusion_gelu(dev, torch, np, comp, x, xs, n, reps):
    nbytes = 8.0 * n
    fdev, why = _fusion_device(dev)
    try:
        if fdev is not None:
            OUT["gelu_fused_path"] = "Fusion(Wgpu())"
            xf = x.to(fdev) if hasattr(x, "to") else from_numpy(xs, fdev, ember.float32)

            def run():
                y = gelu_primitives(xf)
                _realize(fdev, y)
                return y
            y = run()
            result = fdev.unwrap(y._data)
        else:
            OUT["gelu_fused_path"] = "WgslCompiler on a hand-built RowKernel (no Fusion: %s)" % why
            kern = _gelu_kernel()
            xa = x._data

            def run():
                return comp.run(kern, (n,), [(xa, (1,), 0)])[0]
            result = run()
        log("fused GELU through %s" % OUT["gelu_fused_path"])
        OUT["gelu_fused_dispatches"] = _dispatches(dev, run)
        t = device_timed(dev, run, reps)
        OUT["gpu_timing"] = timing_method(dev)
        OUT["gelu_fused_tbps"] = nbytes / t / 1e12
        OUT["gelu_fused_ms"] = t * 1e3
        ts = submit_timed(dev, run, reps)
        OUT["gelu_fused_submit_timed_tbps"] = nbytes / ts / 1e12
        tw = timed(run, dev.synchronize, reps)
        OUT["gelu_fused_wall_ms"] = tw * 1e3
        OUT["gelu_fused_wall_tbps"] = nbytes / tw / 1e12
        got = np.frombuffer(dev.to_bytes(result), dtype=np.float32)
        line = "GELU fused (%d kernel(s)): GPU %.3f ms, %.3f TB/s (%s; %.3f TB/s by submit and wait); wall with recording %.3f ms" % (
            OUT["gelu_fused_dispatches"], t * 1e3, OUT["gelu_fused_tbps"], OUT["gpu_timing"],
            OUT["gelu_fused_submit_timed_tbps"], tw * 1e3)
        if torch is not None:
            ref = torch.nn.functional.gelu(torch.tensor(xs, device="cuda")).cpu().numpy()
            OUT["gelu_fused_max_abs_err"] = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
            if "copy_tbps" in OUT:
                OUT["gelu_fused_vs_copy"] = OUT["gelu_fused_tbps"] / OUT["copy_tbps"]
            line += "; vs torch copy %.3f; max abs err vs F.gelu %.2e" % (OUT.get("gelu_fused_vs_copy", float("nan")),
                                                                     OUT["gelu_fused_max_abs_err"])
        log(line)
    except Exception as e:
        import traceback
        traceback.print_exc()
        OUT["error_fusion_gelu"] = "%s: %s" % (type(e).__name__, str(e)[:300])


def _mlp_kernels():
    """x @ W1 + b1 -> GELU (one kernel), then @ W2 + b2 (one kernel): inputs (a, b, bias)."""
    from ember.accel.fusion.ir import MatmulKernel
    acc = [("acc", "float32"), ("load", "float32", 2), ("binary", "float32", "add", 0, 1)]
    gelu = [("const", "float32", math.sqrt(2.0)), ("binary", "float32", "div", 2, 3),
            ("unary", "float32", "erf", 4), ("const", "float32", 1.0), ("binary", "float32", "add", 5, 6),
            ("binary", "float32", "mul", 2, 7), ("const", "float32", 2.0), ("binary", "float32", "div", 8, 9)]
    first = MatmulKernel(2, 0, 1, "float32", ["float32"] * 3, acc + gelu, [(10, False)])
    second = MatmulKernel(2, 0, 1, "float32", ["float32"] * 3, acc, [(2, False)])
    return first, second


def _fusion_mlp(dev, torch, np, comp):
    b, s, d, h = (4, 32, 128, 512) if QUICK else (64, 128, 512, 2048)
    tokens = b * s
    rng = np.random.default_rng(4)
    xs = rng.standard_normal((tokens, d)).astype(np.float32)
    w1 = (rng.standard_normal((d, h)) / math.sqrt(d)).astype(np.float32)
    b1 = (rng.standard_normal(h) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((h, d)) / math.sqrt(h)).astype(np.float32)
    b2 = (rng.standard_normal(d) * 0.1).astype(np.float32)
    reps = 2 if QUICK else 20
    flops = 2.0 * tokens * d * h * 2
    OUT["mlp_block_shape"] = [b, s, d, h]
    result = None
    try:
        fdev, why = _fusion_device(dev)
        if fdev is not None:
            OUT["mlp_block_path"] = "Fusion(Wgpu())"
            ex, ew1, eb1, ew2, eb2 = (from_numpy(a, fdev, ember.float32) for a in (xs, w1, b1, w2, b2))

            def run():
                y = gelu_primitives(ex @ ew1 + eb1) @ ew2 + eb2
                _realize(fdev, y)
                return y
            result = lambda: fdev.unwrap(run()._data)  # noqa: E731
        else:
            OUT["mlp_block_path"] = "WgslCompiler, two hand-built MatmulKernels (no Fusion: %s)" % why
            first, second = _mlp_kernels()
            ex, ew1, eb1, ew2, eb2 = (from_numpy(a, dev, ember.float32)._data for a in (xs, w1, b1, w2, b2))

            def run():
                hid = comp.run(first, (tokens, h, d), [(ex, (d, 1), 0), (ew1, (h, 1), 0), (eb1, (0, 1), 0)])[0]
                return comp.run(second, (tokens, d, h), [(hid, (h, 1), 0), (ew2, (d, 1), 0), (eb2, (0, 1), 0)])[0]
            result = run
        log("MLP block through %s" % OUT["mlp_block_path"])
        out = result()
        OUT["mlp_block_dispatches"] = _dispatches(dev, run)
        OUT["mlp_block_variants"] = [_chosen(dev, "matmul+", ember.float32, dims) for dims in ((tokens, h, d), (tokens, d, h))]
        t = device_timed(dev, run, reps)
        OUT["mlp_block_ms"] = t * 1e3
        OUT["mlp_block_tflops"] = flops / t / 1e12
        OUT["mlp_block_submit_timed_ms"] = submit_timed(dev, run, reps) * 1e3
        OUT["mlp_block_wall_ms"] = timed(run, dev.synchronize, reps) * 1e3
        got = np.frombuffer(dev.to_bytes(out), dtype=np.float32).reshape(tokens, d)
        line = "MLP block %s (%d kernels): ember GPU %.3f ms (%.2f TFLOP/s; %s; %.3f ms by submit and wait), wall %.3f ms" % (
            OUT["mlp_block_shape"], OUT["mlp_block_dispatches"], t * 1e3, OUT["mlp_block_tflops"], timing_method(dev),
            OUT["mlp_block_submit_timed_ms"], OUT["mlp_block_wall_ms"])
        # the unfused ember chain, for the fusion's own gain
        ux, uw1, ub1, uw2, ub2 = (from_numpy(a, dev, ember.float32) for a in (xs, w1, b1, w2, b2))
        tu = device_timed(dev, lambda: gelu_primitives(ux @ uw1 + ub1) @ uw2 + ub2, reps)
        OUT["mlp_block_unfused_ms"] = tu * 1e3
        OUT["mlp_block_fused_vs_unfused"] = tu / t
        plain = gelu_primitives(ux @ uw1 + ub1) @ uw2 + ub2
        unf = np.frombuffer(plain.to_bytes() if hasattr(plain, "to_bytes") else dev.to_bytes(plain._data),
                            dtype=np.float32).reshape(tokens, d)
        OUT["mlp_block_max_abs_diff_vs_unfused"] = float(np.max(np.abs(got - unf)))
        line += "; unfused %.3f ms (max abs diff %.2e)" % (tu * 1e3, OUT["mlp_block_max_abs_diff_vs_unfused"])
        if torch is not None:
            F_t = torch.nn.functional
            tx, tw1, tb1, tw2, tb2 = (torch.tensor(a, device="cuda") for a in (xs, w1, b1, w2, b2))

            def block(v):
                return gelu_torch_primitives(torch, v @ tw1 + tb1) @ tw2 + tb2
            ref = (F_t.gelu(tx.double() @ tw1.double() + tb1.double()) @ tw2.double() + tb2.double()).cpu().numpy()
            OUT["mlp_block_max_abs_err"] = float(np.max(np.abs(got.astype(np.float64) - ref)))
            te = torch_timed(torch, lambda: block(tx), reps)
            OUT["torch_mlp_block_eager_ms"] = te * 1e3
            OUT["mlp_block_vs_torch_eager"] = te / t
            line += "; torch eager %.3f ms (ratio %.3f)" % (te * 1e3, te / t)
            try:
                compiled = torch.compile(block)
                tc = torch_timed(torch, lambda: compiled(tx), reps)
                OUT["torch_mlp_block_compile_ms"] = tc * 1e3
                OUT["mlp_block_vs_torch_compile"] = tc / t
                line += "; torch.compile %.3f ms (ratio %.3f)" % (tc * 1e3, tc / t)
            except Exception as e:
                OUT["torch_mlp_block_compile_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
            line += "; max abs err vs float64 %.2e" % OUT["mlp_block_max_abs_err"]
        log(line)
    except Exception as e:
        import traceback
        traceback.print_exc()
        OUT["error_fusion_mlp"] = "%s: %s" % (type(e).__name__, str(e)[:300])


def gelu_torch_primitives(torch, v):
    return v * (torch.erf(v / math.sqrt(2.0)) + 1) / 2


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

# (lower_wgpu.AHEAD, lower_wgpu.PARTS): the next replay encoded ahead, or each encoded as it runs
# in two parts (the default before AHEAD) or in one command buffer
REPLAYS = ((True, (0.5, 1.0)), (False, (0.5, 1.0)), (False, (1.0,)))
SPLIT_RULES = ((2048, 512), (1024, 256), (512, 128), (256, 64), (128, 32))  # (SPLIT_MIN_K, SPLIT_CHUNK)


def _swept(dev, step, module, names, settings, label, rounds=5):
    """{label(setting): ms of the compiled step with a read} with ``module``'s attributes ``names``
    set to each setting (each recorded afresh under it), the settings taking turns round by round
    (medians of ``rounds`` rounds of 20 calls), then put back."""
    from ember.accel import compile
    saved = tuple(getattr(module, n) for n in names)

    def under(setting, fn):
        for n, v in zip(names, setting):
            setattr(module, n, v)
        try:
            return fn()
        finally:
            for n, v in zip(names, saved):
                setattr(module, n, v)
    steps = []
    for setting in settings:
        cs = compile(step)
        under(setting, lambda: [cs() for _ in range(4)])
        steps.append(cs)
    got = [[] for _ in settings]
    for _ in range(rounds if not QUICK else 1):
        for setting, cs, out in zip(settings, steps, got):
            out.append(under(setting, lambda: timed(lambda: cs().item(), dev.synchronize, 20 if not QUICK else 2, 1)))
    return {label(st): round(statistics.median(out) * 1e3, 4) for st, out in zip(settings, got)}


def bench_training(dev, torch, np):
    from ember.accel import compile
    from ember.accel.autodiff import Autodiff
    from ember.accel.optim import SGD
    from _models import LeNet, MLP, MnistCNN, torch_graph_step  # bench/_models.py, shared with bench/train_step.py

    batch = 64
    rng = np.random.default_rng(2)
    fdev, why = _fusion_device(dev)
    variants = [("", Autodiff(dev))] + ([("fused_", Autodiff(fdev))] if fdev is not None else [])
    for name, cls, shape in (("mlp", MLP, (batch, 784)), ("lenet", LeNet, (batch, 1, 28, 28)),
                             ("cnn", MnistCNN, (batch, 1, 28, 28))):
        xs = rng.standard_normal(shape).astype(np.float32)
        ys = rng.integers(0, 10, batch)
        best = None
        line = "%s step (batch %d):" % (name, batch)
        these = list(variants)
        if name == "cnn" and fdev is not None:  # its dropout masks drawn on the GPU (Philox) instead
            these.append(("fused_philox_", Autodiff(_fusion_device(Wgpu(random="philox"))[0])))
        for tag, ad in these:  # Autodiff(Wgpu()), then Autodiff(Fusion(Wgpu())): kernels fused
            model = cls(ember.Generator(0)).to(ad)
            opt = SGD(model, lr=0.01)
            x = from_numpy(xs, dev, ember.float32).to(ad)
            y = ember.tensor(ys.tolist(), dtype=ember.int64, device=ad)

            def step():
                loss = F.cross_entropy(model(x), y)
                opt.step(loss.backward())
                return loss
            first = step().item()
            t = timed(lambda: step().item(), dev.synchronize, 20 if not QUICK else 2)
            key = "%s_b%d_%s" % (name, batch, tag)
            OUT[key + "eager_step_ms"] = t * 1e3
            compiled = compile(step)
            for _ in range(3):  # two eager calls (the optimizer makes its state), then the recording
                compiled()
            before = dev.queue_stats()["dispatches"]
            compiled()
            dev.synchronize()
            OUT[key + "compiled_dispatches"] = dev.queue_stats()["dispatches"] - before
            tc = timed(lambda: compiled().item(), dev.synchronize, 20 if not QUICK else 2)
            OUT[key + "compiled_lowering"] = compiled.lowering
            OUT[key + "compiled_stats"] = dict(compiled.stats)
            tc_nosync = timed(compiled, dev.synchronize, 20 if not QUICK else 2)
            OUT[key + "compiled_queued_step_ms"] = tc_nosync * 1e3
            OUT[key + "compiled_step_ms"] = tc * 1e3  # a read per step
            if tag == "fused_philox_":  # not a default: reported beside, not a candidate for the best
                line += " [Autodiff(Fusion(Wgpu(random='philox')))] eager %.3f ms, compiled %.3f ms with a read " \
                        "per step (%.3f ms queued);" % (t * 1e3, tc * 1e3, tc_nosync * 1e3)
                continue
            # the replay cut into command buffers submitted in turn (lower_wgpu.PARTS: the GPU starts
            # on the first part while the host encodes the rest), and the split-K rules
            # (matmul_kernels.SPLIT_MIN_K, SPLIT_CHUNK: where a small product's K is cut into slices)
            from ember.accel.capture import lower_wgpu
            from ember.accel.wgpu import matmul_kernels as mk
            OUT[key + "compiled_step_ms_by_replay"] = _swept(
                dev, step, lower_wgpu, ("AHEAD", "PARTS"), REPLAYS,
                lambda s: "ahead" if s[0] else "parts " + ",".join("%g" % f for f in s[1]))
            OUT[key + "compiled_step_ms_by_split_k"] = _swept(
                dev, step, mk, ("SPLIT_MIN_K", "SPLIT_CHUNK"), SPLIT_RULES, lambda r: "%d:%d" % r)
            line += " [%s] eager %.3f ms, compiled %.3f ms with a read per step (%.3f ms queued; %d dispatches; %s) " \
                    "(first loss %.4f);" % ("Autodiff(Fusion(Wgpu()))" if tag else "Autodiff(Wgpu())", t * 1e3, tc * 1e3,
                                            tc_nosync * 1e3, OUT[key + "compiled_dispatches"], compiled.lowering, first)
            if compiled.lowering == "lowered" and (best is None or tc < best[0]):
                best = (tc, "Autodiff(Fusion(Wgpu())), compiled" if tag else "Autodiff(Wgpu()), compiled")
        if best is None:
            best = (tc, "compiled, not lowered")
        t = best[0]
        OUT["%s_b%d_step_ms" % (name, batch)] = t * 1e3  # the fastest compiled step, a read per step
        OUT["%s_b%d_step_path" % (name, batch)] = best[1]
        if torch is not None:
            nn = torch.nn
            if name == "mlp":
                tm = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
            elif name == "cnn":
                tm = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Dropout(0.25), nn.Flatten(), nn.Linear(9216, 128), nn.ReLU(),
                                   nn.Dropout(0.5), nn.Linear(128, 10)).cuda()
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
                return loss
            tt = torch_timed(torch, lambda: tstep().item(), 20)
            OUT["torch_%s_b%d_step_ms" % (name, batch)] = tt * 1e3
            OUT["%s_b%d_step_vs_torch" % (name, batch)] = tt / t
            line += "; torch eager %.3f ms; ratio %.3f" % (tt * 1e3, tt / t)
            if not QUICK and not arg("--no-torch-compile"):
                try:  # torch.compile of the model (forward and backward); the optimizer stays eager
                    cm = torch.compile(tm)

                    def cstep():
                        topt.zero_grad(set_to_none=True)
                        loss = torch.nn.functional.cross_entropy(cm(tx), ty)
                        loss.backward()
                        topt.step()
                        return loss
                    t0 = time.perf_counter()
                    cstep().item()
                    OUT["torch_%s_b%d_compile_seconds" % (name, batch)] = round(time.perf_counter() - t0, 1)
                    tcc = torch_timed(torch, lambda: cstep().item(), 20)
                    OUT["torch_%s_b%d_compiled_step_ms" % (name, batch)] = tcc * 1e3
                    line += "; torch.compile %.3f ms" % (tcc * 1e3)
                except Exception as e:
                    OUT["torch_%s_b%d_compile_error" % (name, batch)] = "%s: %s" % (type(e).__name__, str(e)[:200])
            try:  # the whole step as a CUDA graph (PyTorch's recipe: warm up on a side stream)
                gstep = torch_graph_step(torch, tm, topt, tx, ty)
                tg = torch_timed(torch, lambda: gstep().item(), 20)
                OUT["torch_%s_b%d_cuda_graph_step_ms" % (name, batch)] = tg * 1e3
                line += "; torch CUDA graph %.3f ms" % (tg * 1e3)
            except Exception as e:
                OUT["torch_%s_b%d_cuda_graph_error" % (name, batch)] = "%s: %s" % (type(e).__name__, str(e)[:200])
        log(line)


DEFAULT_VEC = wdevice.VEC4_PER_THREAD if wdevice is not None else None


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


# -- the Torch device (issue 19) ---------------------------------------------------------------------
# ember.accel.Torch("cuda") beside native PyTorch on the same GPU, in one run: f16/bf16 matmul 4096,
# per-op overhead, MLP and LeNet b64 training steps (eager, captured by ember.accel.compile, and
# with bf16 autocast beside torch.autocast). Runs as a part of main() (``--only torch_backend``)
# or alone without wgpu (``--torch-backend``); without CUDA it runs on Torch("cpu"), 1 thread, with
# small sizes, so its code path is checked anywhere. Ratios are PyTorch's time / ember's (>= 1 is
# ember faster), except ``*_op_overhead_vs_torch``, ember's time per op / PyTorch's (goal <= 1.5).
# Both sides are timed the same way: wall time between two synchronizations, rounds interleaved,
# the median kept.

def _tb_sync(torch, cuda):
    return torch.cuda.synchronize if cuda else (lambda: None)


def _tb_pair(ember_fn, torch_fn, sync, reps, rounds=7):
    """Median seconds per call of each, rounds interleaved (the machine's noise hits both)."""
    for fn in (ember_fn, torch_fn):
        fn()
    sync()
    te, tt = [], []
    for _ in range(rounds):
        for fn, out in ((ember_fn, te), (torch_fn, tt)):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            sync()
            out.append((time.perf_counter() - t0) / reps)
    return statistics.median(te), statistics.median(tt)


def bench_torch_backend(dev=None, torch=None, np=None):
    """Torch("cuda") (or Torch("cpu") without CUDA) beside native PyTorch: OUT keys torch_backend_*."""
    import torch as torch_
    from ember.accel import Autodiff, Torch, autocast, from_torch
    from ember.accel.optim import SGD
    from _models import LeNet, MLP, torch_graph_step  # bench/_models.py

    torch = torch_
    cuda = torch.cuda.is_available()
    where = "cuda" if cuda else "cpu"
    if not cuda:
        torch.set_num_threads(1)
    quick = QUICK or not cuda
    tdev = Torch(where)
    sync = _tb_sync(torch, cuda)
    OUT["torch_backend_device"] = "%r on %s" % (tdev, torch.cuda.get_device_name(0) if cuda else "the host (no CUDA)")
    log("Torch backend: %s" % OUT["torch_backend_device"])

    # matmul: the same torch tensors on both sides (from_torch shares them)
    n = 512 if quick else 4096
    for name, dt in (("f16", torch.float16), ("bf16", torch.bfloat16), ("f32", torch.float32)):
        g = torch.Generator(device=where).manual_seed(0)
        ta = torch.randn(n, n, device=where, dtype=dt, generator=g)
        tb = torch.randn(n, n, device=where, dtype=dt, generator=g)
        ea, eb = from_torch(ta), from_torch(tb)
        got = (ea @ eb)._data
        ref = ta.double() @ tb.double()
        err = float((got.double() - ref).norm() / ref.norm())
        reps = 2 if quick else 20
        te, tt = _tb_pair(lambda: ea @ eb, lambda: ta @ tb, sync, reps)
        flops = 2.0 * n ** 3
        key = "torch_backend_%s_matmul" % name
        OUT[key + "_%d_tflops" % n] = flops / te / 1e12
        OUT["torch_native_%s_matmul_%d_tflops" % (name, n)] = flops / tt / 1e12
        OUT[key + "_vs_torch"] = tt / te
        OUT[key + "_rel_err"] = err
        log("%s %d: Torch backend %.2f TFLOP/s, native %.2f; ratio %.3f (goal f16 >= 0.9); rel err %.1e"
            % (key, n, flops / te / 1e12, flops / tt / 1e12, tt / te, err))
        del ta, tb, ea, eb, got, ref

    # per-op overhead: 1000 small adds queued back to back, then one read
    ops = 1000
    ex = ember.ones(256, device=tdev)
    tx = torch.ones(256, device=where)

    def ember_ops():
        x = ex
        for _ in range(ops):
            x = x + 1.0
        return x

    def torch_ops():
        x = tx
        for _ in range(ops):
            x = x + 1.0
        return x
    te, tt = _tb_pair(ember_ops, torch_ops, sync, 1, rounds=9)
    OUT["torch_backend_op_us"] = te / ops * 1e6
    OUT["torch_native_op_us"] = tt / ops * 1e6
    OUT["torch_backend_op_overhead_vs_torch"] = te / tt
    log("per op (x + 1.0 on 256 floats): Torch backend %.2f us, native %.2f us; ember/native %.2f (goal <= 1.5)"
        % (te / ops * 1e6, tt / ops * 1e6, te / tt))

    # training steps at batch 64: Autodiff(Torch) + ember SGD beside PyTorch eager (+ autocast bf16)
    batch = 64
    ad = Autodiff(tdev)
    nn_ = torch.nn
    for name, cls, shape in (("mlp", MLP, (batch, 784)), ("lenet", LeNet, (batch, 1, 28, 28))):
        g = torch.Generator().manual_seed(2)
        xs = torch.randn(shape, generator=g)
        ys = torch.randint(0, 10, (batch,), generator=g)
        model = cls(ember.Generator(0)).to(ad)
        opt = SGD(model, lr=0.01)
        x = from_torch(xs.to(where)).to(ad)
        y = from_torch(ys.to(where)).to(ad)

        def step(low=None):
            with autocast(low, enabled=low is not None):
                loss = F.cross_entropy(model(x), y)
            opt.step(loss.backward())
            return loss
        if name == "mlp":
            tm = nn_.Sequential(nn_.Linear(784, 128), nn_.ReLU(), nn_.Linear(128, 10))
        else:
            tm = nn_.Sequential(nn_.Conv2d(1, 6, 5, padding=2), nn_.ReLU(), nn_.MaxPool2d(2),
                                nn_.Conv2d(6, 16, 5), nn_.ReLU(), nn_.MaxPool2d(2), nn_.Flatten(),
                                nn_.Linear(400, 120), nn_.ReLU(), nn_.Linear(120, 84), nn_.ReLU(), nn_.Linear(84, 10))
        tm = tm.to(where)
        topt = torch.optim.SGD(tm.parameters(), lr=0.01)
        tx_, ty_ = xs.to(where), ys.to(where)

        def tstep(low=None):
            topt.zero_grad(set_to_none=True)
            with torch.autocast(where, dtype=low or torch.bfloat16, enabled=low is not None):
                loss = torch.nn.functional.cross_entropy(tm(tx_), ty_)
            loss.backward()
            topt.step()
            return loss
        reps = 5 if quick else 50
        te, tt = _tb_pair(lambda: step().item(), lambda: tstep().item(), sync, reps)
        key = "torch_backend_%s_b%d_step" % (name, batch)
        OUT[key + "_ms"] = te * 1e3
        OUT["torch_native_%s_b%d_step_ms" % (name, batch)] = tt * 1e3
        OUT[key + "_vs_torch"] = tt / te
        line = "%s b%d step: Autodiff(Torch) %.3f ms, PyTorch eager %.3f ms; ratio %.3f (goal >= 0.7)" % (
            name, batch, te * 1e3, tt * 1e3, tt / te)
        from ember.accel import compile as capture
        captured = capture(step, inplace=True)  # the fastest form: the state updated in the graph's buffers
        for _ in range(3):  # two eager calls (the optimizer makes its state), then the recording
            captured()
        tc, tt2 = _tb_pair(lambda: captured().item(), lambda: tstep().item(), sync, reps)
        OUT[key + "_captured_ms"] = tc * 1e3
        OUT[key + "_captured_vs_torch"] = tt2 / tc
        OUT[key + "_captured_lowering"] = captured.lowering
        line += "; captured in place (ember.accel.compile(inplace=True), %s) %.3f ms, ratio %.3f" % (captured.lowering, tc * 1e3, tt2 / tc)
        OUT[key + "_captured_plan"] = [type(r.lowered).__name__ for r in captured._plans.values()]
        # compile's default: the state given fresh tensors each replay (value semantics) instead of in place
        copied = capture(step)
        for _ in range(3):
            copied()
        tk, tt3 = _tb_pair(lambda: copied().item(), lambda: tstep().item(), sync, reps)
        OUT[key + "_captured_copied_ms"] = tk * 1e3
        OUT[key + "_captured_copied_vs_torch"] = tt3 / tk
        line += "; captured, state copied (the default) %.3f ms, ratio %.3f" % (tk * 1e3, tt3 / tk)
        if cuda:  # PyTorch's own step as one CUDA graph (its docs' whole-network capture), the next mark
            try:
                gstep = torch_graph_step(torch, tm, topt, tx_, ty_)
                tg, tk2 = _tb_pair(lambda: gstep().item(), lambda: captured().item(), sync, reps)
                OUT["torch_native_%s_b%d_step_cuda_graph_ms" % (name, batch)] = tg * 1e3
                OUT[key + "_captured_vs_torch_cuda_graph"] = tg / tk2
                line += "; PyTorch CUDA graph %.3f ms (captured ember %.3f ms in that pair)" % (tg * 1e3, tk2 * 1e3)
                mine = [getattr(r.lowered, "graph", None) for r in captured._plans.values()]
                if mine and mine[0] is not None:  # the two graphs alone, no host work around them: GPU time
                    ge, gt = _tb_pair(mine[0].replay, gstep.graph.replay, sync, reps)
                    OUT[key + "_captured_graph_alone_ms"] = ge * 1e3
                    OUT["torch_native_%s_b%d_cuda_graph_alone_ms" % (name, batch)] = gt * 1e3
                    line += "; the graphs alone: ember %.3f ms, PyTorch %.3f ms" % (ge * 1e3, gt * 1e3)
            except Exception as e:  # say why, do not stop the run
                OUT["torch_native_%s_b%d_step_cuda_graph_error" % (name, batch)] = "%s: %s" % (type(e).__name__, str(e)[:200])
        te, tt = _tb_pair(lambda: step(ember.bfloat16).item(), lambda: tstep(torch.bfloat16).item(), sync, reps)
        OUT[key + "_bf16_autocast_ms"] = te * 1e3
        OUT["torch_native_%s_b%d_step_bf16_autocast_ms" % (name, batch)] = tt * 1e3
        OUT[key + "_bf16_autocast_vs_torch"] = tt / te
        log(line + "; bf16 autocast %.3f ms vs torch.autocast %.3f ms (ratio %.3f)" % (te * 1e3, tt * 1e3, tt / te))


def torch_backend_main():
    """``--torch-backend``: only the Torch section, no wgpu needed; the last line is its JSON."""
    t0 = time.perf_counter()
    bench_torch_backend()
    OUT["seconds_bench_torch_backend"] = round(time.perf_counter() - t0, 1)
    head = ["torch_backend_f16_matmul_vs_torch", "torch_backend_op_overhead_vs_torch",
            "torch_backend_mlp_b64_step_vs_torch", "torch_backend_mlp_b64_step_captured_vs_torch",
            "torch_backend_mlp_b64_step_captured_ms", "torch_backend_mlp_b64_step_captured_lowering"]
    line = {k: OUT.get(k) for k in head}
    line.update({k: v for k, v in OUT.items() if k not in line})
    if arg("--json"):
        with open(arg("--json"), "w") as f:
            json.dump(line, f, indent=1, default=str)
    print(json.dumps(line, default=str))


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
    parts = (bench_matmul, bench_elementwise, bench_queued, bench_training, bench_torch_compile, bench_fusion,
             bench_torch_backend, bench_variants)
    only = arg("--only")
    if only:
        names = [x.strip() for x in only.split(",") if x.strip()]
        parts = [p for p in parts if p.__name__[len("bench_"):] in names]
        OUT["only"] = names
    for part in parts:
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
    head = ["matmul_f32_4096_vs_torch", "matmul_f16_4096_vs_torch", "elementwise_vs_copy", "queued_op_us",
            "gelu_fused_tbps", "gelu_fused_vs_copy", "mlp_block_vs_torch_compile", "mlp_block_vs_torch_eager",
            "torch_backend_f16_matmul_vs_torch", "torch_backend_op_overhead_vs_torch",
            "torch_backend_mlp_b64_step_vs_torch"]
    line = {k: OUT.get(k) for k in head}
    line.update({k: v for k, v in OUT.items() if k not in line})
    path = arg("--json")
    if path:
        with open(path, "w") as f:
            json.dump(line, f, indent=1, default=str)
    print(json.dumps(line, default=str))


if __name__ == "__main__":
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__)
    elif "--probe-coop" in sys.argv:
        probe_coop()
    elif "--torch-backend" in sys.argv:
        torch_backend_main()
    else:
        main()
