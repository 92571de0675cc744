"""ember's Cpu device with C kernels, beside numpy (OpenBLAS) and PyTorch, in one run.

    .venv/bin/python bench/cpu.py [--quick] [--random]

Measures matmul GFLOP/s (64, 256, 1024; 1 and 2 threads), conv2d (a LeNet layer; 3x3 64->64 on
56x56), GELU and softmax over 1M floats, MLP 784-128-10 and LeNet forward at batch 1, and one op on
16 floats, and random draws (rand, randn, a Bernoulli mask, dropout) of shape (64, 64, 12, 12), a
CNN's activations (``--random`` runs only those, single-threaded). Each thread count runs in its own
child process with OMP/OPENBLAS/MKL/EMBER_NUM_THREADS set before numpy and torch load, and with
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (they slow numpy's GEMM on this machine; see the env
notes). Inside a child every contender of a group is timed
in shuffled round-robin rounds (each sample a batch of calls lasting ~0.1 s) and the median over
rounds is kept, so the machine's slow and fast phases hit all alike.

Ratios are reference time / ember time (above 1: ember is faster); goals (issue 4):
matmul_256_t1_vs_numpy, matmul_1024_t1_vs_numpy >= 0.9; matmul_1024_t2_vs_torch >= 0.9;
gelu_1m_vs_torch >= 1; conv3x3_vs_torch >= 0.7; mlp_b1_vs_torch, lenet_b1_vs_torch >= 1;
add16_vs_torch >= 0.67; rand_64x64x12x12_vs_torch >= 0.67 (issue 23: within 1.5x of ``torch.rand``);
gelu_fused_vs_torch, softmax_fused_vs_torch >= 1 (issue 13: GELU and softmax
written from primitives, run through ``Fusion(ember.Cpu())`` as one generated kernel each, against
``F.gelu``/``F.softmax``). Those without a thread count in their name compare single-threaded runs
(as the PyTorch figures in the issue were measured); their 2-thread counterparts carry "_t2".
On a machine whose other core is busy, 2-thread figures (PyTorch's most of all) say more about the
load than the code: the JSON records the load average. The last line printed is one JSON object
with every ratio and figure.
"""
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOALS = {
    "matmul_256_t1_vs_numpy": 0.9, "matmul_1024_t1_vs_numpy": 0.9, "matmul_1024_t2_vs_torch": 0.9,
    "gelu_1m_vs_torch": 1.0, "conv3x3_vs_torch": 0.7, "mlp_b1_vs_torch": 1.0, "lenet_b1_vs_torch": 1.0,
    "add16_vs_torch": 0.67, "gelu_fused_vs_torch": 1.0, "softmax_fused_vs_torch": 1.0,
    "rand_64x64x12x12_vs_torch": 0.67,
}
RANDOM_KEYS = ("rand", "randn", "bernoulli", "dropout")


# -- timing ----------------------------------------------------------------------------------------

def calibrate(fn, target):
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        took = time.perf_counter() - start
        if took >= target or n >= 1 << 22:
            return max(1, int(n * target / max(took, 1e-9)))
        n *= 2


def interleaved(contenders, rounds, target):
    """{name: median seconds per call} over `rounds` shuffled rounds of batched calls."""
    batch = {}
    for name, fn in contenders:
        fn()  # warm up (first-touch allocations, lazy imports)
        batch[name] = calibrate(fn, target)
    samples = {name: [] for name, _ in contenders}
    order = list(contenders)
    rnd = random.Random(0)
    for _ in range(rounds):
        rnd.shuffle(order)
        for name, fn in order:
            n = batch[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    return {name: statistics.median(v) for name, v in samples.items()}


# -- the child: one thread count -------------------------------------------------------------------

def random_draws(dev, rounds, target):
    """{op: {"ember", "torch"} us} for draws of shape (64, 64, 12, 12) (torch.bernoulli reads a
    tensor of probabilities; ember's Bernoulli mask is float32, as dropout draws it)."""
    import torch
    import torch.nn.functional as TF

    import ember
    import ember.nn.functional as F
    shape = (64, 64, 12, 12)
    if ember.rand(1000, generator=ember.Generator(3), device=dev).tolist() != ember.Generator(3).uniforms(1000):
        raise SystemExit("bench/cpu.py: rand does not give the Generator's stream")
    probs = torch.full(shape, 0.5)
    xe, xt = ember.ones(*shape, device=dev), torch.ones(shape)
    half = ember.Bernoulli(0.5)
    pairs = {
        "rand": (lambda: ember.rand(*shape, device=dev), lambda: torch.rand(shape)),
        "randn": (lambda: ember.randn(*shape, device=dev), lambda: torch.randn(shape)),
        "bernoulli": (lambda: ember.random(shape, half, device=dev), lambda: torch.bernoulli(probs)),
        "dropout": (lambda: F.dropout(xe, 0.5), lambda: TF.dropout(xt, 0.5, training=True)),
    }
    out = {}
    for op in RANDOM_KEYS:
        e, t = pairs[op]
        times = interleaved([("ember", e), ("torch", t)], rounds, target)
        out[op] = {k: v * 1e6 for k, v in times.items()}
    return out


def child(threads, quick, only_random=False):
    import numpy as np
    import torch
    import torch.nn.functional as TF

    import ember
    import ember.nn.functional as F
    from ember.backends.cpu import ckernels

    torch.set_num_threads(threads)
    ckernels.set_num_threads(threads)
    dev = ember.Cpu()
    if dev.kernels != "c":
        raise SystemExit("bench/cpu.py: the C kernels are unavailable: %s" % ckernels.reason())
    rounds = 3 if quick else 9
    target = 0.03 if quick else 0.1
    out = {"threads": threads, "isa": ckernels.isa(), "numpy": np.__version__, "torch": torch.__version__}
    out["random_64x64x12x12_us"] = random_draws(dev, rounds, target)
    if only_random:
        print(json.dumps(out))
        return
    rng = np.random.default_rng(0)
    checks = {}

    def agree(name, got, want, tol):
        diff = float(np.max(np.abs(np.asarray(got.tolist(), dtype=np.float64) - want.astype(np.float64))))
        checks[name] = diff
        if not diff <= tol:
            raise SystemExit("bench/cpu.py: %s differs from the reference by %g" % (name, diff))

    # matmul
    mm = {}
    for n in (64, 256, 1024):
        an = rng.standard_normal((n, n), dtype=np.float32)
        bn = rng.standard_normal((n, n), dtype=np.float32)
        at, bt = torch.from_numpy(an), torch.from_numpy(bn)
        ae, be = ember.tensor(an.tolist(), device=dev), ember.tensor(bn.tolist(), device=dev)
        agree("matmul_%d" % n, ae @ be, an.astype(np.float64) @ bn.astype(np.float64), 1e-3 * n ** 0.5)
        cn = np.empty_like(an)
        t = interleaved([("ember", lambda: ae @ be), ("numpy", lambda: np.matmul(an, bn, out=cn)),
                         ("torch", lambda: at @ bt)], rounds, target)
        mm[str(n)] = {k: 2.0 * n ** 3 / v / 1e9 for k, v in t.items()}
    out["matmul_gflops"] = mm

    # conv2d: a LeNet layer (8 -> 16, 3x3 on 13x13) and 3x3 64 -> 64 on 56x56, batch 1
    conv = {}
    for name, (c, o, hw, k, pad) in (("lenet_layer", (8, 16, 13, 3, 0)), ("3x3_64_56", (64, 64, 56, 3, 1))):
        xn = rng.standard_normal((1, c, hw, hw), dtype=np.float32)
        wn = rng.standard_normal((o, c, k, k), dtype=np.float32) * 0.1
        bn = rng.standard_normal((o,), dtype=np.float32)
        xt, wt, bt = torch.from_numpy(xn), torch.from_numpy(wn), torch.from_numpy(bn)
        xe, we, be = (ember.tensor(v.tolist(), device=dev) for v in (xn, wn, bn))
        with torch.inference_mode():
            want = TF.conv2d(xt, wt, bt, padding=pad).numpy()
        agree("conv_" + name, F.conv2d(xe, we, be, padding=pad), want, 1e-3)

        def run_t(xt=xt, wt=wt, bt=bt, pad=pad):
            with torch.inference_mode():
                return TF.conv2d(xt, wt, bt, padding=pad)
        t = interleaved([("ember", lambda: F.conv2d(xe, we, be, padding=pad)), ("torch", run_t)], rounds, target)
        conv[name] = {kk: v * 1e6 for kk, v in t.items()}
    out["conv_us"] = conv

    # GELU and softmax over 1M floats
    n = 1 << 20
    xn = (rng.standard_normal(n, dtype=np.float32) * 2).astype(np.float32)
    xt = torch.from_numpy(xn)
    xe = ember.tensor(xn.tolist(), device=dev)
    with torch.inference_mode():
        agree("gelu", F.gelu(xe), TF.gelu(xt).numpy(), 1e-5)
    tmp = np.empty_like(xn)
    res = np.empty_like(xn)

    def gelu_np():  # numpy has no erf: the tanh form, in place, as a fair fast numpy version
        np.multiply(xn, xn, out=tmp)
        np.multiply(tmp, xn, out=tmp)
        np.multiply(tmp, 0.044715, out=tmp)
        np.add(tmp, xn, out=tmp)
        np.multiply(tmp, 0.7978845608028654, out=tmp)
        np.tanh(tmp, out=tmp)
        np.add(tmp, 1.0, out=tmp)
        np.multiply(tmp, xn, out=res)
        np.multiply(res, 0.5, out=res)
        return res

    def gelu_t():
        with torch.inference_mode():
            return TF.gelu(xt)
    t = interleaved([("ember", lambda: F.gelu(xe)), ("numpy_tanh_form", gelu_np), ("torch", gelu_t)],
                    rounds, target)
    out["gelu_1m_us"] = {k: v * 1e6 for k, v in t.items()}
    x2n = xn.reshape(1024, 1024)
    x2t = torch.from_numpy(x2n)
    x2e = xe.reshape(1024, 1024)

    def softmax_np():
        e = np.exp(x2n - x2n.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def softmax_t():
        with torch.inference_mode():
            return TF.softmax(x2t, -1)
    agree("softmax", F.softmax(x2e, -1), softmax_np(), 1e-6)
    t = interleaved([("ember", lambda: F.softmax(x2e, -1)), ("numpy", softmax_np), ("torch", softmax_t)],
                    rounds, target)
    out["softmax_1m_us"] = {k: v * 1e6 for k, v in t.items()}

    # the same two written from primitives, through Fusion: one generated kernel each (issue 13)
    from ember.accel import Fusion
    fdev = Fusion(dev)
    xf, x2f = xe.to(fdev), x2e.to(fdev)

    def gelu_prims(v):
        return v * ((v / math.sqrt(2)).erf() + 1) / 2

    def softmax_prims(v):
        m = v.max(-1, keepdim=True)[0]
        e = (v - m).exp()
        return e / e.sum(-1, keepdim=True)

    # as a program calls them: the functions' locals are gone when their result is computed, so
    # only the result is written (a local still held would be written too, as torch writes it)
    def gelu_fused():
        y = gelu_prims(xf)
        fdev.synchronize()
        return y

    def softmax_fused():
        y = softmax_prims(x2f)
        fdev.synchronize()
        return y
    with torch.inference_mode():
        agree("gelu_fused", gelu_fused(), TF.gelu(xt).numpy(), 1e-5)
    agree("softmax_fused", softmax_fused().reshape(1024, 1024), softmax_np(), 1e-6)
    t = interleaved([("ember_fused", gelu_fused), ("torch", gelu_t)], rounds, target)
    out["gelu_fused_1m_us"] = {k: v * 1e6 for k, v in t.items()}
    t = interleaved([("ember_fused", softmax_fused), ("torch", softmax_t)], rounds, target)
    out["softmax_fused_1m_us"] = {k: v * 1e6 for k, v in t.items()}

    # MLP 784-128-10 and LeNet (conv 1->8 3x3, relu, maxpool 2, conv 8->16 3x3, relu, maxpool 2,
    # linear 400->10) forward at batch 1
    def params(*shape, scale=0.1):
        a = (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
        return torch.from_numpy(a), ember.tensor(a.tolist(), device=dev)
    w1t, w1 = params(128, 784)
    b1t, b1 = params(128)
    w2t, w2 = params(10, 128)
    b2t, b2 = params(10)
    xin_t, xin = params(1, 784, scale=1.0)

    def mlp_e():
        return F.linear(F.relu(F.linear(xin, w1, b1)), w2, b2)

    def mlp_t():
        with torch.inference_mode():
            return TF.linear(TF.relu(TF.linear(xin_t, w1t, b1t)), w2t, b2t)
    agree("mlp", mlp_e(), mlp_t().numpy(), 1e-4)
    c1t, c1 = params(8, 1, 3, 3, scale=0.3)
    cb1t, cb1 = params(8)
    c2t, c2 = params(16, 8, 3, 3)
    cb2t, cb2 = params(16)
    l3t, l3 = params(10, 400)
    lb3t, lb3 = params(10)
    img_t, img = params(1, 1, 28, 28, scale=1.0)

    def lenet_e():
        h = F.max_pool2d(F.relu(F.conv2d(img, c1, cb1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, c2, cb2)), 2)
        return F.linear(h.reshape(1, 400), l3, lb3)

    def lenet_t():
        with torch.inference_mode():
            h = TF.max_pool2d(TF.relu(TF.conv2d(img_t, c1t, cb1t)), 2)
            h = TF.max_pool2d(TF.relu(TF.conv2d(h, c2t, cb2t)), 2)
            return TF.linear(h.reshape(1, 400), l3t, lb3t)
    agree("lenet", lenet_e(), lenet_t().numpy(), 1e-4)
    t = interleaved([("ember_mlp", mlp_e), ("torch_mlp", mlp_t), ("ember_lenet", lenet_e),
                     ("torch_lenet", lenet_t)], rounds, target)
    out["mlp_b1_us"] = {"ember": t["ember_mlp"] * 1e6, "torch": t["torch_mlp"] * 1e6}
    out["lenet_b1_us"] = {"ember": t["ember_lenet"] * 1e6, "torch": t["torch_lenet"] * 1e6}

    # one op on 16 floats, through each library's tensor type
    a16n = rng.standard_normal(16, dtype=np.float32)
    b16n = rng.standard_normal(16, dtype=np.float32)
    a16t, b16t = torch.from_numpy(a16n), torch.from_numpy(b16n)
    a16, b16 = ember.tensor(a16n.tolist(), device=dev), ember.tensor(b16n.tolist(), device=dev)
    t = interleaved([("ember", lambda: a16 + b16), ("numpy", lambda: a16n + b16n), ("torch", lambda: a16t + b16t)],
                    rounds * 2, target)
    out["add16_us"] = {k: v * 1e6 for k, v in t.items()}
    out["max_abs_diff"] = checks
    print(json.dumps(out))


# -- the parent ------------------------------------------------------------------------------------

def run_child(threads, quick, only_random=False):
    env = dict(os.environ)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(var, None)  # for this benchmark's processes only
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "EMBER_NUM_THREADS"):
        env[var] = str(threads)
    args = [sys.executable, os.path.abspath(__file__), "--child", str(threads)] + (["--quick"] if quick else []) + \
        (["--random"] if only_random else [])
    run = subprocess.run(args, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        raise SystemExit("bench/cpu.py: the %d-thread child failed" % threads)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main():
    quick = "--quick" in sys.argv
    only_random = "--random" in sys.argv
    if "--child" in sys.argv:
        child(int(sys.argv[sys.argv.index("--child") + 1]), quick, only_random)
        return
    if only_random:
        r = run_child(1, quick, True)["random_64x64x12x12_us"]
        result = {"%s_64x64x12x12_vs_torch" % op: round(r[op]["torch"] / r[op]["ember"], 3) for op in RANDOM_KEYS}
        print("ember Cpu (C kernels) random draws of (64, 64, 12, 12) beside torch, 1 thread; medians of "
              "interleaved rounds")
        for op in RANDOM_KEYS:
            print("  %-9s: ember %9.1f  torch %9.1f us  (torch / ember %.3f)"
                  % (op, r[op]["ember"], r[op]["torch"], result["%s_64x64x12x12_vs_torch" % op]))
        result["raw"] = r
        print(json.dumps(result, sort_keys=True))
        return
    cores = os.cpu_count() or 1
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    runs = {1: run_child(1, quick)}
    if cores >= 2:
        runs[2] = run_child(2, quick)
    one = runs[1]
    two = runs.get(2, one)

    def ratios(r, suffix=""):
        out = {
            "gelu_1m%s_vs_torch" % suffix: r["gelu_1m_us"]["torch"] / r["gelu_1m_us"]["ember"],
            "conv3x3%s_vs_torch" % suffix: r["conv_us"]["3x3_64_56"]["torch"] / r["conv_us"]["3x3_64_56"]["ember"],
            "mlp_b1%s_vs_torch" % suffix: r["mlp_b1_us"]["torch"] / r["mlp_b1_us"]["ember"],
            "lenet_b1%s_vs_torch" % suffix: r["lenet_b1_us"]["torch"] / r["lenet_b1_us"]["ember"],
            "add16%s_vs_torch" % suffix: r["add16_us"]["torch"] / r["add16_us"]["ember"],
            "gelu_fused%s_vs_torch" % suffix:
                r["gelu_fused_1m_us"]["torch"] / r["gelu_fused_1m_us"]["ember_fused"],
            "softmax_fused%s_vs_torch" % suffix:
                r["softmax_fused_1m_us"]["torch"] / r["softmax_fused_1m_us"]["ember_fused"],
        }
        for op in RANDOM_KEYS:
            d = r["random_64x64x12x12_us"][op]
            out["%s_64x64x12x12%s_vs_torch" % (op, suffix)] = d["torch"] / d["ember"]
        return out
    # The goals compare single-threaded runs (as the anchors measured PyTorch), except the one that
    # names 2 threads; the 2-thread figures of the other ops are reported beside them ("_t2").
    result = {
        "matmul_256_t1_vs_numpy": one["matmul_gflops"]["256"]["ember"] / one["matmul_gflops"]["256"]["numpy"],
        "matmul_1024_t1_vs_numpy": one["matmul_gflops"]["1024"]["ember"] / one["matmul_gflops"]["1024"]["numpy"],
        "matmul_1024_t2_vs_torch": two["matmul_gflops"]["1024"]["ember"] / two["matmul_gflops"]["1024"]["torch"],
        "matmul_1024_t2_vs_numpy": two["matmul_gflops"]["1024"]["ember"] / two["matmul_gflops"]["1024"]["numpy"],
    }
    result.update(ratios(one))
    if 2 in runs:
        result.update(ratios(two, "_t2"))
    for key in list(result):
        result[key] = round(result[key], 3)
    print("ember Cpu (C kernels, %s) beside numpy %s and torch %s; %d cores; medians of interleaved rounds"
          % (one["isa"], one["numpy"], one["torch"], cores))
    for threads, r in sorted(runs.items()):
        print("-- %d thread(s)" % threads)
        for n, v in r["matmul_gflops"].items():
            print("  matmul %4s: ember %6.1f  numpy %6.1f  torch %6.1f GFLOP/s" % (n, v["ember"], v["numpy"], v["torch"]))
        for name, v in r["conv_us"].items():
            print("  conv2d %-11s: ember %8.1f  torch %8.1f us" % (name, v["ember"], v["torch"]))
        for key, label in (("gelu_1m_us", "gelu 1M"), ("softmax_1m_us", "softmax 1M"), ("mlp_b1_us", "MLP b1"),
                           ("lenet_b1_us", "LeNet b1"), ("add16_us", "add 16"),
                           ("gelu_fused_1m_us", "gelu fused"), ("softmax_fused_1m_us", "softmax fused")):
            print("  %-11s: %s us" % (label, "  ".join("%s %.2f" % kv for kv in sorted(r[key].items()))))
        for op in RANDOM_KEYS:
            print("  %-11s: %s us" % (op + " 590k", "  ".join("%s %.2f" % kv for kv in
                                                               sorted(r["random_64x64x12x12_us"][op].items()))))
    for key, goal in GOALS.items():
        print("%-26s %6.3f  goal >= %.2f  %s" % (key, result[key], goal, "met" if result[key] >= goal else "NOT met"))
    result["isa"] = one["isa"]
    result["loadavg_before_after"] = [load_before, os.getloadavg() if hasattr(os, "getloadavg") else None]
    result["raw"] = {"t%d" % t: r for t, r in runs.items()}
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
