"""How far ember's float32 matmul is from what WGSL can reach on this GPU.

    python bench/wgsl_peak.py [--quick] [--json PATH] [--iters N]

Measures:

- **FMA peak through WGSL**: a kernel whose threads each run independent ``fma`` chains on 8 or 16
  ``vec4<f32>`` accumulators (the loop body unrolled to 64 vec4 FMAs, the loop count a parameter
  word, the sum written out), at workgroup sizes 128 and 256, in TFLOP/s (2 flops per scalar FMA);
  ``fma_peak_tflops`` is the best. The result is checked against the recurrence computed on the host.
- **cuBLAS reference** (where PyTorch has CUDA): ``torch.mm`` float32 with TF32 off, timed by CUDA
  events, at 4096^3 and at each matmul shape below.
- **ember's tiled matmul**: every SIMT variant of ``matmul_kernels.SIMT`` and the tile shapes of
  ``EXTRA``, run as the autotuner runs them (``matmul_kernels._run``), on (M, N, K) = (8192, 2048,
  512) and (8192, 512, 2048) (a transformer MLP block's two products) and 4096^3, and the block's
  two products again with B stored transposed (``_bt``: a Linear's ``x @ W.T``, the weight read in
  place, so both operands are scattered into workgroup memory). Each variant is
  first checked against numpy (float64) on a ragged batched product, then on the timed shape's
  first and last rows; one that fails to compile or computes wrongly is reported and not timed.
  Figures: TFLOP/s, ``of_peak`` (of the FMA peak) and ``of_torch`` (of torch.mm on the same shape).
- **Where a tiled kernel loses time** (``diagnose``): the best variant of each shape again, with its
  loop cut down: ``shared_only`` loads the first tile and then runs every step on it from workgroup
  memory (no global loads, no stores to workgroup memory; the barriers stay), ``no_barrier`` drops
  the barriers too (only the FMAs and the workgroup-memory reads are left). Their results are wrong
  on purpose and not checked; what they take beside the whole kernel says which part costs.

Timing (``timing`` in the output): GPU timestamps where the adapter has ``timestamp-query`` (a batch
of calls, from its first dispatch's start to its last's end, as CUDA events time PyTorch), else one
submit and wait per batch (``bench/gpu.py``'s ``device_timed``); the median of 5 batches after a
warm-up.

At full size it takes about 2 minutes on an H100. ``--quick`` shrinks everything so that a CPU
adapter (lavapipe) runs it in a minute or two: it checks that every kernel compiles and computes
right, its figures mean nothing. ``--iters N`` sets the FMA kernel's loop count (default: about
5 ms of work per dispatch at 60 TFLOP/s). The last line is one JSON object, also written to
``--json PATH``.
"""
import functools
import json
import struct
import sys
import time

import numpy as np

import ember
from ember.accel import Wgpu
from ember.accel.wgpu import codegen
from ember.accel.wgpu import matmul_kernels as mk

from gpu import arg, device_timed, from_numpy, load_torch, log, timing_method, torch_timed  # bench/gpu.py

QUICK = "--quick" in sys.argv
OUT = {}

# H100 and H200 have 132 SMs: the peak kernel's grid is 6144 threads an SM, a whole number of waves
# wherever the workgroups resident on an SM divide 48 (of 128 threads) or 24 (of 256)
SMS = 132
FMA_BODY = 64  # vec4 FMAs per loop iteration, whatever the number of accumulators
FMA_CONFIGS = ((128, 8), (128, 16), (256, 8), (256, 16))  # (workgroup size, vec4 accumulators)
# a <- a * MUL + ADD contracts towards 1: nothing overflows or goes subnormal however long it runs
MUL, ADD = 0.999, 0.001
FMA_TOL = 1e-3  # float32 rounding keeps each value within ~eps / (1 - MUL) = 6e-5 of the exact one


def sizes(quick):
    """Set the sizes: the full ones, or (``quick``) what a CPU adapter runs in seconds."""
    global QUICK, FMA_THREADS, FMA_TARGET, SHAPES
    QUICK = quick
    FMA_THREADS = SMS * 64 if quick else SMS * 6144
    FMA_TARGET = 1e8 if quick else 3e11  # flops per dispatch: about 5 ms at 60 TFLOP/s
    # (M, N, K, B stored transposed): a Linear's x @ W.T reads W in place, as the MLP block's products do
    SHAPES = ((512, 128, 64, False), (256, 64, 128, True), (128, 128, 512, False)) if quick else \
        ((8192, 2048, 512, False), (8192, 512, 2048, False), (4096, 4096, 4096, False),
         (8192, 2048, 512, True), (8192, 512, 2048, True))  # quick: the last one splits K


sizes(QUICK)
# tile shapes the generator accepts beyond SIMT (an H100 run with more of them, all slower than
# SIMT's best: bench/results/gpu-2026-12-06-h100-s5run1-wgsl_peak.txt)
EXTRA = [mk.Variant(*v) for v in ((128, 256, 8, 8, 16), (256, 128, 8, 16, 8))]
TOL = 1e-4  # normwise relative error against float64 (float32 rounding at K = 4096 is ~1e-6)
CHECK_ROWS = 128  # rows of the timed product checked at each end (a full float64 check costs seconds)


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


# -- FMA peak ---------------------------------------------------------------------------------------

def fma_start(acc):
    """The accumulators' starting values, acc x 4, in [0, 1): below the recurrence's fixed point,
    so that the result tells how many steps ran (half as many, or none, fail the check)."""
    return [[(4 * j + c) / (4.0 * acc) for c in range(4)] for j in range(acc)]


def fma_source(wg, acc):
    unroll = FMA_BODY // acc
    L = [codegen.prelude(["f32"], False),
         "@compute @workgroup_size(%d)" % wg,
         "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {",
         "  let n = pw(0u);",
         "  let m = vec4<f32>(bitcast<f32>(pw(1u))); let c = vec4<f32>(bitcast<f32>(pw(2u)));"]
    for j, start in enumerate(fma_start(acc)):
        L.append("  var a%d = vec4<f32>(%s);" % (j, ", ".join("%.6f" % x for x in start)))
    L.append("  for (var i = 0u; i < n; i = i + 1u) {")
    for _ in range(unroll):
        L.append("    " + " ".join("a%d = fma(a%d, m, c);" % (j, j) for j in range(acc)))
    L.append("  }")
    L.append("  b0[pw(3u) + gid.x] = dot(%s, vec4<f32>(1.0));" % " + ".join("a%d" % j for j in range(acc)))
    L.append("}")
    return "\n".join(L) + "\n"


def fma_expected(acc, steps):
    """What each thread writes: the recurrence's closed form, in float64 from the float32 constants."""
    m, c = float(np.float32(MUL)), float(np.float32(ADD))
    fixed = c / (1 - m)
    return sum(fixed + (float("%.6f" % x) - fixed) * m ** steps for row in fma_start(acc) for x in row)


def bench_fma(dev):
    rt = dev.rt
    out = dev._alloc((FMA_THREADS,), ember.float32)
    iters = int(arg("--iters") or max(1, round(FMA_TARGET / (FMA_THREADS * FMA_BODY * 8))))
    words = [iters, f32_bits(MUL), f32_bits(ADD), dev._base(out)]
    OUT["fma_threads"], OUT["fma_iters"], OUT["fma_vec4_per_iter"] = FMA_THREADS, iters, FMA_BODY
    table = {}
    for wg, acc in FMA_CONFIGS:
        name = "wg%d_acc%d" % (wg, acc)
        try:
            entry = rt.pipeline(("wgsl_peak", wg, acc), lambda: fma_source(wg, acc), 1)

            def run():
                rt.dispatch(entry, [out.block.buffer], words, FMA_THREADS // wg)
            run()
            got = np.frombuffer(dev.to_bytes(out), np.float32)
            want = fma_expected(acc, iters * FMA_BODY // acc)
            err = float(np.max(np.abs(got - want)) / abs(want))
            if not err <= FMA_TOL:
                table[name] = "wrong: relative error %.1e (expected %.6g)" % (err, want)
                log("FMA %s: %s" % (name, table[name]))
                continue
            t = device_timed(dev, run, 1 if QUICK else 4)
        except Exception as e:
            table[name] = "%s: %s" % (type(e).__name__, str(e)[:200])
            log("FMA %s failed: %s" % (name, table[name]))
            continue
        flops = 8.0 * FMA_THREADS * FMA_BODY * iters  # 4 lanes x 2 flops per vec4 FMA
        table[name] = round(flops / t / 1e12, 3)
        log("FMA %s: %d threads x %d iterations x %d vec4 FMAs: %.3f ms, %.3f TFLOP/s"
            % (name, FMA_THREADS, iters, FMA_BODY, t * 1e3, table[name]))
    OUT["fma_tflops"] = table
    rates = [x for x in table.values() if not isinstance(x, str)]
    OUT["fma_peak_tflops"] = max(rates) if rates else None
    log("WGSL FMA peak: %s TFLOP/s" % OUT["fma_peak_tflops"])
    return OUT["fma_peak_tflops"]


# -- torch.mm reference ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)  # 4096^3 is both the reference and a timed shape
def torch_tflops(torch, m, n, k, tb=False):
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(n, k, device="cuda").t() if tb else torch.randn(k, n, device="cuda")
    flops = 2.0 * m * n * k
    t = torch_timed(torch, lambda: torch.mm(a, b), max(1, int(1e12 / flops)))
    return round(flops / t / 1e12, 3)


# -- ember's tiled matmul --------------------------------------------------------------------------

def unfit(dev, v):
    """Why variant ``v`` cannot run on this adapter, or None."""
    lim = dev.rt.device.limits
    if v.smem() > dev.rt.max_workgroup_storage:
        return "needs %d bytes of workgroup memory, the adapter has %d" % (v.smem(), dev.rt.max_workgroup_storage)
    if v.threads > lim["max-compute-invocations-per-workgroup"]:
        return "needs %d threads a workgroup, the adapter has %d" % (
            v.threads, lim["max-compute-invocations-per-workgroup"])
    return None


def product(dev, v, a, b, shape):
    """``a @ b`` by variant ``v``, read back. The output starts as NaN, so a kernel that writes
    nothing cannot pass for one that wrote the right values earlier."""
    out = dev.full(shape, float("nan"), ember.float32)
    mk._run(dev, v, a, b, out)
    return np.frombuffer(dev.to_bytes(out), np.float32).reshape(shape)


def rel_err(got, ref):
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def ragged_error(dev, v, rng):
    """Variant ``v``'s error on a batched product whose M and N are no multiples of the tiles."""
    a = rng.standard_normal((2, 100, 72)).astype(np.float32)
    b = rng.standard_normal((2, 72, 136)).astype(np.float32)
    got = product(dev, v, from_numpy(a, dev, ember.float32)._data, from_numpy(b, dev, ember.float32)._data,
                  (2, 100, 136))
    return rel_err(got, np.matmul(a.astype(np.float64), b.astype(np.float64)))


def bench_matmul(dev, torch, peak):
    rng = np.random.default_rng(3)
    variants = list(mk.SIMT) + [v for v in EXTRA if v.name not in {s.name for s in mk.SIMT}]
    ready = []  # the variants that compile and compute a ragged product right
    OUT["variants_skipped"] = skipped = {}
    for v in variants:
        why = unfit(dev, v)
        if why is None:
            try:
                err = ragged_error(dev, v, rng)
                why = None if err <= TOL else "wrong on a ragged product: relative error %.1e" % err
            except Exception as e:
                why = "%s: %s" % (type(e).__name__, str(e)[:200])
        if why is None:
            ready.append(v)
        else:
            skipped[v.name] = why
            log("variant %s skipped: %s" % (v.name, why))
    table = OUT["matmul"] = {}
    for m, n, k, tb in SHAPES:
        shape = "%dx%dx%d%s" % (m, n, k, "_bt" if tb else "")
        flops = 2.0 * m * n * k
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        ea = from_numpy(a, dev, ember.float32)._data
        eb = from_numpy(np.ascontiguousarray(b.T), dev, ember.float32).transpose(0, 1)._data if tb else \
            from_numpy(b, dev, ember.float32)._data
        assert mk.transposes(dev, ea, eb) == (False, tb)
        ends = np.r_[0:CHECK_ROWS, m - CHECK_ROWS:m] if m > 2 * CHECK_ROWS else np.arange(m)
        ref = a[ends].astype(np.float64) @ b.astype(np.float64)
        row = {}
        ref_tflops = torch_tflops(torch, m, n, k, tb) if torch is not None else None
        log("matmul %s (M x N x K)%s:" % (shape, "; torch.mm %.2f TFLOP/s" % ref_tflops if ref_tflops else ""))
        out = dev._alloc((m, n), ember.float32)
        reps = 2 if QUICK else max(1, int(0.02 / (flops / 3e13)))  # about 20 ms a batch at 30 TFLOP/s
        for v in ready:
            try:
                err = rel_err(product(dev, v, ea, eb, (m, n))[ends], ref)
                if not err <= TOL:
                    row[v.name] = "wrong: relative error %.1e" % err
                    log("  %-16s %s" % (v.name, row[v.name]))
                    continue
                t = device_timed(dev, lambda: mk._run(dev, v, ea, eb, out), reps)
            except Exception as e:
                row[v.name] = "%s: %s" % (type(e).__name__, str(e)[:200])
                log("  %-16s %s" % (v.name, row[v.name]))
                continue
            tf = flops / t / 1e12
            row[v.name] = {"tflops": round(tf, 3), "rel_err": float("%.2g" % err),
                           "of_peak": round(tf / peak, 3) if peak else None,
                           "of_torch": round(tf / ref_tflops, 3) if ref_tflops else None}
            log("  %-16s %8.3f TFLOP/s  of peak %-6s  of torch %-6s  (%s%s)"
                % (v.name, tf, row[v.name]["of_peak"], row[v.name]["of_torch"],
                   "SIMT" if v in mk.SIMT else "extra", ", rel err %.1e" % err))
        timed = {name: r for name, r in row.items() if isinstance(r, dict)}
        best = max(timed, key=lambda name: timed[name]["tflops"]) if timed else None
        table[shape] = {"variants": row, "torch_tflops": ref_tflops, "best": best,
                        "best_tflops": timed[best]["tflops"] if best else None}
        log("  best %s%s" % (best, " at %.3f TFLOP/s" % timed[best]["tflops"] if best else ""))
        del ea, eb, out


# -- what the tiled kernel's time is made of ----------------------------------------------------------

# each cut removes a part of the k loop of matmul_kernels._simt_source (the text it generates)
CUTS = {"shared_only": (("    let more = t + 1u < nt;", "    let more = false;"),),
        "no_barrier": (("    let more = t + 1u < nt;", "    let more = false;"),
                       ("    workgroupBarrier();\n  }", "  }"))}


def cut_source(source, cut):
    for old, new in CUTS[cut]:
        if old not in source:
            raise ValueError("the kernel's text changed: %r not found" % old)
        source = source.replace(old, new)
    return source


def diagnose(dev):
    """The best variant of each timed shape whole and with each cut, in TFLOP/s."""
    real = mk._simt_source

    def simt_source(v, *args, **kwargs):  # a cut variant's name ends in "~cut"
        _, _, cut = v.name.partition("~")
        return cut_source(real(v, *args, **kwargs), cut) if cut else real(v, *args, **kwargs)
    mk._simt_source = simt_source
    out = OUT["diagnose"] = {}
    try:
        for shape, row in OUT["matmul"].items():
            best = row["best"]
            if best is None:
                continue
            dims, _, bt = shape.partition("_")
            m, n, k = (int(x) for x in dims.split("x"))
            v0 = [v for v in list(mk.SIMT) + EXTRA if v.name == best][0]
            a = dev._alloc((m, k), ember.float32)
            b = dev.permute(dev._alloc((n, k), ember.float32), (1, 0)) if bt else dev._alloc((k, n), ember.float32)
            c = dev._alloc((m, n), ember.float32)
            flops = 2.0 * m * n * k
            reps = 2 if QUICK else max(1, int(0.02 / (flops / 3e13)))
            res = out[shape] = {"variant": best}
            for cut in ("",) + tuple(CUTS):
                v = mk.Variant(v0.bm, v0.bn, v0.bk, v0.tm, v0.tn)
                if cut:
                    v.name += "~" + cut
                try:
                    t = device_timed(dev, lambda: mk._run(dev, v, a, b, c), reps)
                    res[cut or "whole"] = round(flops / t / 1e12, 3)
                except Exception as e:
                    res[cut or "whole"] = "%s: %s" % (type(e).__name__, str(e)[:200])
            log("diagnose %s %s: %s" % (shape, best, ", ".join("%s %s" % kv for kv in res.items() if kv[0] != "variant")))
            del a, b, c
    finally:
        mk._simt_source = real


def main():
    t0 = time.perf_counter()
    dev = Wgpu()
    torch, tinfo = load_torch()
    OUT["adapter"] = dev.rt.label
    OUT["timing"] = timing_method(dev)
    OUT["torch"] = tinfo
    if not QUICK and "(Vulkan, CPU)" in dev.rt.label:  # `make bench` on a machine without a GPU
        log("a CPU adapter: the quick sizes (the full ones would take hours here)")
        sizes(True)
    OUT["quick"] = QUICK
    log("adapter %s; timing by %s; torch: %s" % (dev.rt.label, OUT["timing"], tinfo))
    peak = bench_fma(dev)
    if torch is not None:
        OUT["torch_mm_4096_tflops"] = torch_tflops(torch, 4096, 4096, 4096)
        log("torch.mm 4096^3 float32 (TF32 off): %.3f TFLOP/s" % OUT["torch_mm_4096_tflops"])
    bench_matmul(dev, torch, peak)
    diagnose(dev)
    OUT["seconds"] = round(time.perf_counter() - t0, 1)
    path = arg("--json")
    if path:
        with open(path, "w") as f:
            json.dump(OUT, f, indent=1)
    print(json.dumps(OUT))


if __name__ == "__main__":
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__)
    else:
        main()
