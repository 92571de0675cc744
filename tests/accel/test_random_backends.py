"""The ``random`` primitive on every backend that implements it, against the pure-Python Cpu.

The C-backed Cpu (ext_c/k_random.c) and the NumPy device keep the Generator's stream: every kind
and dtype must give the pure Cpu's values bit for bit and leave the generator in the same state
(the Box-Muller spare included), over several seeds, sizes (odd ones for the spare) and a sequence
of draws that interleaves kinds. The decorators forward the primitive. Wgpu's ``random="philox"``
mode draws other values (Philox4x32-10 on the GPU): checked against a Python Philox, then by its
statistics (n = 1e5). Timing is in bench/ops.py, never here.
"""
import math
import os
import platform
import shutil
import subprocess

import pytest

import ember
import ember.nn.functional
import ember.nn.init
from ember.accel import Autodiff, Fusion
from ember.accel.numpy import NumPy
from ember.backends.cpu import ckernels
from harness import backends

PURE = ember.Cpu(kernels="python")
C = ember.Cpu(kernels="c") if ckernels.available() else None
needs_c = pytest.mark.skipif(C is None, reason="the C kernels are not built: %s" % ckernels.reason())
f16, bf16, f32, f64 = ember.float16, ember.bfloat16, ember.float32, ember.float64
i8, i32, i64, b = ember.int8, ember.int32, ember.int64, ember.bool_
FLOATS = (f32, f64, f16, bf16)

# (kind, params, dtypes): every kind and dtype the primitive takes, incl. the spans C hands back
CASES = [
    ("uniform", (0.0, 1.0), FLOATS),
    ("uniform", (-2.5, 3.0), FLOATS),
    ("uniform", (1e-3, 1e-3 + 1e-9), (f32, f64)),
    ("normal", (0.0, 1.0), FLOATS),
    ("normal", (1.5, 0.25), FLOATS),
    ("normal", (-3.0, 7.0), (f32, f64)),
    ("randint", (0, 10), (i64, i32, i8, f32, f64, f16, b)),
    ("randint", (-5, 300), (i64, i32, i8, f32)),
    ("randint", (-128, 128), (i8,)),
    ("randint", (0, 2 ** 32 - 1), (i64, i32)),
    ("randint", (0, 2 ** 32), (i64, f64)),
    ("randint", (3, 3 * 2 ** 30 + 3), (i64,)),
    ("randint", (-(2 ** 40), 2 ** 40), (i64, i32, f32, f64)),
    ("randint", (5, 2 ** 62 + 7), (i64, f64)),
    ("randint", (-(2 ** 63), 2 ** 63 - 1), (i64,)),
    ("randint", (0, 2 ** 70), (f64,)),  # beyond int64: drawn by the pure path
    ("bernoulli", (0.0,), (b, f32)),
    ("bernoulli", (0.3,), (b, f32, f64, f16, i8, i32, i64)),
    ("bernoulli", (0.1,), (b, f32)),
    ("bernoulli", (1.0,), (b, f32)),
]
SEEDS = (0, 1, 12345)
SIZES = ((), (0,), (1,), (2,), (7,), (3, 333))


def bits(values):
    """Values compared bit for bit: repr tells -0.0 from 0.0 and keeps every digit."""
    return [repr(v) for v in values]


def draw(dev, g, kind, shape, dtype, params):
    return dev.to_list(dev.random(kind, shape, dtype, g, params))


def same_stream(dev):
    for kind, params, dts in CASES:
        for dtype in dts:
            for seed in SEEDS:
                for shape in SIZES:
                    ga, gb = ember.Generator(seed), ember.Generator(seed)
                    got = draw(dev, ga, kind, shape, dtype, params)
                    want = draw(PURE, gb, kind, shape, dtype, params)
                    what = "%s%s %s %s seed %d" % (kind, params, dtype.name, shape, seed)
                    assert bits(got) == bits(want), what
                    assert ga.get_state() == gb.get_state(), what


INTERLEAVED = [("normal", 3, (0.0, 1.0), f32), ("uniform", 5, (0.0, 1.0), f32), ("normal", 1, (2.0, 0.5), f64),
               ("randint", 4, (0, 7), i64), ("bernoulli", 7, (0.25,), b), ("normal", 2, (0.0, 1.0), f16),
               ("normal", 0, (0.0, 1.0), f32), ("uniform", 0, (0.0, 1.0), f32), ("normal", 5, (-1.0, 3.0), f32),
               ("randint", 3, (0, 2 ** 40), i64), ("normal", 1, (0.0, 1.0), f64), ("bernoulli", 9, (0.5,), f32)]


def interleaved(dev):
    for seed in SEEDS:
        ga, gb = ember.Generator(seed), ember.Generator(seed)
        for kind, n, params, dtype in INTERLEAVED:
            got = draw(dev, ga, kind, (n,), dtype, params)
            assert bits(got) == bits(draw(PURE, gb, kind, (n,), dtype, params)), (seed, kind, n)
            assert ga.get_state() == gb.get_state(), (seed, kind, n)


# -- the C-backed Cpu ----------------------------------------------------------------------------

@needs_c
def test_c_gives_the_pure_stream_for_every_kind_and_dtype():
    same_stream(C)


@needs_c
def test_c_continues_the_stream_across_interleaved_kinds():
    interleaved(C)


@needs_c
def test_one_generator_shared_by_the_c_and_the_pure_cpu():
    # the spare and the words cross between Python and C through the Generator's state
    mixed, ref = ember.Generator(9), ember.Generator(9)
    out, want = [], []
    for k, (kind, n, params, dtype) in enumerate(INTERLEAVED):
        dev = C if k % 2 else PURE
        out += draw(dev, mixed, kind, (n,), dtype, params)
        want += draw(PURE, ref, kind, (n,), dtype, params)
    assert bits(out) == bits(want)
    assert mixed.get_state() == ref.get_state()


@needs_c
def test_c_frontend_functions_equal_the_pure_ones():
    def run(dev):
        ember.seed(5)
        x = ember.randn(3, 5, device=dev)
        return bits(ember.rand(2, 3, device=dev).tolist() + x.tolist()[0]
                    + ember.randn(7, dtype="float64", device=dev).tolist()
                    + ember.randint(-3, 9, (11,), device=dev).tolist()
                    + ember.random((4,), ember.Normal(1.0, 2.0), device=dev).tolist()
                    + ember.random((6,), ember.Bernoulli(0.4), device=dev).tolist()
                    + ember.random((5,), ember.Uniform(-1.0, 4.0), dtype="float16", device=dev).tolist()
                    + ember.nn.functional.dropout(ember.ones(40, device=dev), 0.3).tolist()
                    + ember.nn.init.kaiming_uniform((4, 6), device=dev).tolist()[0])
    assert run(C) == run(PURE)


@needs_c
def test_dropout_keeps_its_values():
    # dropout keeps what uniform >= p keeps, as before the random primitive
    x = ember.tensor([float(i) - 20.0 for i in range(50)], device=C)
    got = ember.nn.functional.dropout(x, 0.3, generator=ember.Generator(4)).tolist()
    u = ember.Generator(4).uniforms(50)
    want = ember.tensor([(float(i) - 20.0) * (1.0 if u[i] >= 0.3 else 0.0) for i in range(50)]) / 0.7
    assert bits(got) == bits(want.tolist())


def test_k_random_fuses_no_multiply_add(tmp_path):
    # with FMA in the ISA and the build's -ffp-contract=fast, an add fused with the product before it
    # would round once where rng.py rounds twice: the kernel must hold every product apart
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None or platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("needs a C compiler for x86-64")
    ext = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "ext_c")
    asm = str(tmp_path / "k_random.s")
    subprocess.run([cc, "-O3", "-std=gnu99", "-mavx2", "-mfma", "-ffp-contract=fast", "-fno-math-errno",
                    "-I", ext, "-S", "-o", asm, os.path.join(ext, "k_random.c")], check=True)
    text = open(asm).read()
    assert "cvtsi2sd" in text or "cvtsi2sdq" in text or "vcvt" in text  # the file compiled to real code
    fused = [line for line in text.splitlines() if "vfmadd" in line or "vfmsub" in line or "vfnm" in line]
    assert not fused, fused


# -- NumPy --------------------------------------------------------------------------------------

def test_numpy_gives_the_pure_stream():
    same_stream(NumPy())
    interleaved(NumPy())


def test_numpy_without_c_draws_the_same_values(monkeypatch):
    from ember.accel.numpy import random as nprandom
    monkeypatch.setattr(nprandom, "_c_draw", lambda: (None, None))
    g, h = ember.Generator(3), ember.Generator(3)
    got = draw(NumPy(), g, "normal", (9,), f32, (0.0, 1.0)) + draw(NumPy(), g, "randint", (5,), i8, (-200, 200))
    want = draw(PURE, h, "normal", (9,), f32, (0.0, 1.0)) + draw(PURE, h, "randint", (5,), i8, (-200, 200))
    assert bits(got) == bits(want) and g.get_state() == h.get_state()


# -- decorators ---------------------------------------------------------------------------------

def test_decorators_forward_random_as_a_leaf():
    inner = C or PURE
    for dev in (Autodiff(inner), Fusion(inner), Autodiff(Fusion(inner))):
        ember.seed(21)
        x = ember.randn(4, 3, device=dev)
        ember.seed(21)
        assert bits(x.tolist()) == bits(ember.randn(4, 3, device=PURE).tolist()), repr(dev)
        assert (x * 2).sum().item() == pytest.approx(2 * sum(ember.randn(12, generator=ember.Generator(21)).tolist()))
    dev = Autodiff(inner)
    w = ember.ones(3, device=dev).requires_grad_()
    loss = (ember.nn.functional.dropout(w, 0.5, generator=ember.Generator(2)) * 3).sum()
    keep = [1.0 if u >= 0.5 else 0.0 for u in ember.Generator(2).uniforms(3)]
    assert w.grad(loss.backward()).tolist() == [6.0 * k for k in keep]


# -- Wgpu -----------------------------------------------------------------------------------------

WGPU = dict(backends.available()).get("wgpu")
needs_wgpu = pytest.mark.skipif(WGPU is None, reason="no wgpu device: %s" % dict(backends.unavailable()).get("wgpu"))
M32 = 0xFFFFFFFF


def philox(counter, key):
    """Philox4x32-10 (Salmon et al. 2011) in Python: the reference for the WGSL kernel."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return [c0, c1, c2, c3]


def test_python_philox_matches_the_published_vectors():
    # Random123's kat_vectors for philox4x32_10
    assert philox((0, 0, 0, 0), (0, 0)) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox((M32,) * 4, (M32, M32)) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert philox((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0)) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@pytest.fixture(scope="module")
def gpu():
    if WGPU is None:
        pytest.skip("no wgpu device")
    from ember.accel.wgpu import Wgpu
    return Wgpu(random="philox")


@needs_wgpu
def test_philox_words_on_the_gpu(gpu):
    g = ember.Generator(77)
    key = ember.Generator(77)
    k = (key.next_u32(), key.next_u32())
    got = ember.rand(4099, generator=g, device=gpu).tolist()
    want = []
    for t in range(1025):
        want += [(w >> 8) * 2.0 ** -24 for w in philox((t, 0, 0, 0), k)]
    assert got == want[:4099]
    assert g.get_state() == key.get_state(), "the host stream must advance by two words per call"


def moments(values):
    n = len(values)
    mean = math.fsum(values) / n
    return mean, math.fsum((v - mean) ** 2 for v in values) / n


@needs_wgpu
def test_philox_statistics(gpu):
    n = 100_000
    sd_mean = lambda var: 5 * math.sqrt(var / n)  # noqa: E731  (5 standard deviations)
    u = ember.random((n,), ember.Uniform(-2.0, 3.0), generator=ember.Generator(1), device=gpu).tolist()
    assert min(u) >= -2.0 and max(u) < 3.0
    m, v = moments(u)
    assert abs(m - 0.5) < sd_mean(25 / 12) and abs(v - 25 / 12) < 0.03 * 25 / 12
    z = ember.random((n,), ember.Normal(1.0, 2.0), generator=ember.Generator(2), device=gpu).tolist()
    m, v = moments(z)
    assert abs(m - 1.0) < sd_mean(4.0) and abs(v - 4.0) < 0.04 * 4.0  # sd of the variance: 4 * sqrt(2/n)
    tails = sum(1 for x in z if abs(x - 1.0) > 2 * 2.0) / n  # P(|Z| > 2) = 0.0455
    assert abs(tails - 0.0455) < 0.004
    for p in (0.1, 0.5, 0.9):
        r = sum(ember.random((n,), ember.Bernoulli(p), generator=ember.Generator(3), device=gpu).tolist()) / n
        assert abs(r - p) < 5 * math.sqrt(p * (1 - p) / n), (p, r)
    k = ember.randint(-3, 7, (n,), generator=ember.Generator(4), device=gpu).tolist()
    counts = [k.count(v) for v in range(-3, 7)]
    assert sum(counts) == n and max(abs(c - n / 10) for c in counts) < 5 * math.sqrt(n * 0.09), counts
    big = ember.randint(-(2 ** 31), 2 ** 31 - 1, (n,), dtype="int32", generator=ember.Generator(5), device=gpu).tolist()
    assert min(big) < -(2 ** 30) and max(big) > 2 ** 30


@needs_wgpu
def test_philox_seeds_and_dtypes(gpu):
    a = ember.randn(1000, generator=ember.Generator(8), device=gpu).tolist()
    assert a == ember.randn(1000, generator=ember.Generator(8), device=gpu).tolist()
    assert a != ember.randn(1000, generator=ember.Generator(9), device=gpu).tolist()
    g = ember.Generator(8)
    first = ember.randn(1000, generator=g, device=gpu).tolist()
    second = ember.randn(1000, generator=g, device=gpu).tolist()
    assert first == a and second != a, "each call takes a new key"
    assert a != ember.randn(1000, generator=ember.Generator(8), device=PURE).tolist()  # not the Cpu's stream
    for dtype in ("float16", "float64"):
        try:
            h = ember.rand(20_000, dtype=dtype, generator=ember.Generator(6), device=gpu)
        except ember.DTypeError:  # float64 needs shader-f64
            continue
        vals = h.tolist()
        assert h.dtype.name == dtype and min(vals) >= 0.0 and max(vals) <= 1.0
        assert abs(sum(vals) / len(vals) - 0.5) < 0.02
    k8 = ember.randint(-128, 128, (5000,), dtype="int8", generator=ember.Generator(7), device=gpu).tolist()
    assert min(k8) == -128 and max(k8) == 127
    mask = gpu.random("bernoulli", (3, 5), ember.bool_, ember.Generator(1), (0.5,))
    assert set(gpu.to_list(mask)) <= {True, False}
    # what the kernel does not serve is drawn in the Cpu's stream
    wide = ember.randint(0, 2 ** 40, (6,), generator=ember.Generator(3), device=gpu).tolist()
    assert wide == ember.randint(0, 2 ** 40, (6,), generator=ember.Generator(3), device=PURE).tolist()


@needs_wgpu
def test_wgpu_stream_mode_is_the_cpu_stream():
    from ember.accel.wgpu import Wgpu
    dev = Wgpu()
    assert dev.random_mode == "stream"
    interleaved(dev)
    with pytest.raises(ValueError, match="random='stream' or 'philox'"):
        Wgpu(random="mt19937")
