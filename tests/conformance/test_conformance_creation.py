"""Creation: empty, *_like, linspace, eye, arange; rand, randn, randint and ember.random with the
Distributions, checked for shape, dtype, range and exact values under a fixed ember.Generator seed.

Each case takes a 0-d "anchor" input only to learn the device to create on. The random references
read the raw 32-bit stream of ``ember.Generator`` (itself checked against an independent
xoshiro128++ in tests/tools/test_rng_reference.py) and apply each distribution's transform here.
"""
import math

import ember

import conformance_kit as kit
from conformance_kit import EXACT, F, I, case

PARAMETERS = ("device", "case")

ANCHOR = F(())
SEED = 1234
U24 = 5.9604644775390625e-08


def c(name, fn, ref, out, tol=None, anchor=ANCHOR):
    return case(name, fn, ref, [anchor], out, tol)


def _u24(g, n):
    return [(g.next_u32() >> 8) for _ in range(n)]


def ref_uniform(n, lo=0.0, hi=1.0, seed=SEED):
    g = ember.Generator(seed)
    return [lo + u * ((hi - lo) * U24) for u in _u24(g, n)]


def ref_normal(n, mean=0.0, std=1.0, seed=SEED):
    g = ember.Generator(seed)
    out = []
    while len(out) < n:
        u1 = ((g.next_u32() >> 8) + 1) * U24
        u2 = (g.next_u32() >> 8) * U24
        r = math.sqrt(-2.0 * math.log(u1))
        out.append(mean + std * r * math.cos(2 * math.pi * u2))
        out.append(mean + std * r * math.sin(2 * math.pi * u2))
    return out[:n]


def ref_randint(n, lo, hi, seed=SEED):
    g = ember.Generator(seed)
    span = hi - lo
    limit = (1 << 32) - ((1 << 32) % span)
    out = []
    while len(out) < n:
        v = g.next_u32()
        if v < limit:
            out.append(lo + v % span)
    return out


def _shaped(np, values, shape):
    return np.array(values, dtype=np.float64 if values and type(values[0]) is float else np.int64).reshape(shape)


def deterministic_cases():
    specs = []
    d = lambda t: t.device  # noqa: E731
    specs.append(c("empty.f32.2x3", lambda a: ember.empty(2, 3, device=d(a)), lambda np, a: np.zeros((2, 3)), "f32", EXACT))
    specs.append(c("empty.i32.tuple", lambda a: ember.empty((3,), dtype="int32", device=d(a)), lambda np, a: np.zeros(3), "i32"))
    x = F((2, 3), "f64")
    for name, fn, ref, out in (
            ("empty_like", lambda t: ember.empty_like(t), lambda np, t: np.zeros_like(t), "f64"),
            ("zeros_like", lambda t: ember.zeros_like(t), lambda np, t: np.zeros_like(t), "f64"),
            ("ones_like", lambda t: ember.ones_like(t), lambda np, t: np.ones_like(t), "f64"),
            ("full_like", lambda t: ember.full_like(t, -2.5), lambda np, t: np.full_like(t, -2.5), "f64"),
            ("zeros_like.i8", lambda t: ember.zeros_like(t, dtype="int8"), lambda np, t: np.zeros(t.shape), "i8"),
            ("ones_like.b", lambda t: ember.ones_like(t, dtype=ember.bool_), lambda np, t: np.ones(t.shape), "b"),
            ("full_like.f16", lambda t: ember.full_like(t, 0.1, dtype="float16"), lambda np, t: np.full(t.shape, 0.1), "f16")):
        specs.append(case("%s.%s" % (name, "f64.2x3"), fn, ref, [x], out, EXACT if out in ("f32", "f64") else None))
    specs.append(case("empty_like.i32.0d", lambda t: ember.empty_like(t), lambda np, t: np.zeros(()), [I((), "i32")], "i32"))
    for label, args, kw, out in (("0_1_5", (0.0, 1.0, 5), {}, "f32"), ("m3_3_7", (-3.0, 3.0, 7), {}, "f32"),
                                 ("1_0_4", (1.0, 0.0, 4), {}, "f32"), ("2_2_1", (2.0, 2.0, 1), {}, "f32"),
                                 ("0_1_0", (0.0, 1.0, 0), {}, "f32"), ("0_1_11.f64", (0.0, 1.0, 11), {"dtype": "float64"}, "f64"),
                                 ("ints.i64", (0, 10, 6), {"dtype": "int64"}, "i64")):
        specs.append(c("linspace.%s" % label, lambda a, ar=args, k=kw: ember.linspace(*ar, device=d(a), **k),
                       lambda np, a, ar=args: np.linspace(*ar), out, "composite" if out != "i64" else None))
    for label, args, kw, out in (("3", (3,), {}, "f32"), ("2x4", (2, 4), {}, "f32"), ("4x2.i64", (4, 2), {"dtype": "int64"}, "i64"),
                                 ("3.b", (3,), {"dtype": "bool"}, "b"), ("0", (0,), {}, "f32")):
        specs.append(c("eye.%s" % label, lambda a, ar=args, k=kw: ember.eye(*ar, device=d(a), **k),
                       lambda np, a, ar=args: np.eye(*ar), out, EXACT if out == "f32" else None))
    for label, args, kw, out in (("5", (5,), {}, "i64"), ("2_9_3", (2, 9, 3), {}, "i64"), ("5_m3_m2", (5, -3, -2), {}, "i64"),
                                 ("0_1_0.25", (0.0, 1.0, 0.25), {}, "f32"), ("f64", (1, 2, 0.1), {"dtype": "float64"}, "f64"),
                                 ("i32", (-4, 4), {"dtype": "int32"}, "i32"), ("empty", (3, 3), {}, "i64")):
        specs.append(c("arange.%s" % label, lambda a, ar=args, k=kw: ember.arange(*ar, device=d(a), **k),
                       lambda np, a, ar=args: np.arange(*ar), out, "composite" if out in ("f32", "f64") else None))
    return specs


def random_cases():
    specs = []
    d = lambda t: t.device  # noqa: E731
    g = lambda: ember.Generator(SEED)  # noqa: E731
    specs.append(c("rand.f32.2x3", lambda a: ember.rand(2, 3, generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, ref_uniform(6), (2, 3)), "f32", EXACT))
    specs.append(c("rand.f64.4", lambda a: ember.rand(4, generator=g(), dtype="float64", device=d(a)),
                   lambda np, a: _shaped(np, ref_uniform(4), (4,)), "f64", EXACT))
    specs.append(c("rand.f16.3", lambda a: ember.rand(3, generator=g(), dtype="float16", device=d(a)),
                   lambda np, a: _shaped(np, ref_uniform(3), (3,)), "f16"))
    specs.append(c("randn.f32.2x3", lambda a: ember.randn(2, 3, generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, ref_normal(6), (2, 3)), "f32", "composite"))
    specs.append(c("randn.f64.5", lambda a: ember.randn(5, generator=g(), dtype="float64", device=d(a)),
                   lambda np, a: _shaped(np, ref_normal(5), (5,)), "f64", "composite"))
    specs.append(c("randint.i64.0_10.2x4", lambda a: ember.randint(0, 10, (2, 4), generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, ref_randint(8, 0, 10), (2, 4)), "i64"))
    specs.append(c("randint.i64.high_only", lambda a: ember.randint(7, (5,), generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, ref_randint(5, 0, 7), (5,)), "i64"))
    specs.append(c("randint.i32.m5_5.3", lambda a: ember.randint(-5, 5, (3,), generator=g(), dtype="int32", device=d(a)),
                   lambda np, a: _shaped(np, ref_randint(3, -5, 5), (3,)), "i32"))
    specs.append(c("randint.i8.m128_128.6", lambda a: ember.randint(-128, 128, (6,), generator=g(), dtype="int8", device=d(a)),
                   lambda np, a: _shaped(np, ref_randint(6, -128, 128), (6,)), "i8"))
    specs.append(c("random.f32.default.2x2", lambda a: ember.random((2, 2), generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, ref_uniform(4), (2, 2)), "f32", EXACT))
    specs.append(c("random.f32.uniform_m2_3.2x3", lambda a: ember.random((2, 3), ember.Uniform(-2.0, 3.0), generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, ref_uniform(6, -2.0, 3.0), (2, 3)), "f32", "composite"))
    specs.append(c("random.f32.normal_1_0.5.3x2", lambda a: ember.random((3, 2), ember.Normal(1.0, 0.5), generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, ref_normal(6, 1.0, 0.5), (3, 2)), "f32", "composite"))
    specs.append(c("random.f64.normal.odd7", lambda a: ember.random((7,), ember.Normal(), generator=g(), dtype="float64", device=d(a)),
                   lambda np, a: _shaped(np, ref_normal(7), (7,)), "f64", "composite"))
    specs.append(c("random.f32.bernoulli_0.3.2x5", lambda a: ember.random((2, 5), ember.Bernoulli(0.3), generator=g(), device=d(a)),
                   lambda np, a: _shaped(np, [1.0 if u < 0.3 else 0.0 for u in ref_uniform(10)], (2, 5)), "f32", EXACT))
    specs.append(c("random.f32.0x3", lambda a: ember.random((0, 3), ember.Normal(), generator=g(), device=d(a)),
                   lambda np, a: np.zeros((0, 3)), "f32", EXACT))

    # the default generator, seeded by ember.seed; two draws in a row continue the stream
    def seeded(a):
        ember.seed(SEED)
        first = ember.rand(3, device=d(a))
        second = ember.rand(2, device=d(a))
        return first, second

    def seeded_ref(np, a):
        u = ref_uniform(5)
        return np.array(u[:3]), np.array(u[3:])
    specs.append(c("rand.f32.seed_default_stream", seeded, seeded_ref, ("f32", "f32"), EXACT))

    # shape, dtype and range over a larger draw: a summary (min >= lo, max < hi, mean near the middle)
    def summary(a):
        t = ember.random((400,), ember.Uniform(-1.0, 1.0), generator=ember.Generator(7), device=d(a))
        inside = ((t >= -1.0) & (t < 1.0)).all()
        n = ember.randn(400, generator=ember.Generator(8), device=d(a))
        k = ember.randint(3, 6, (400,), generator=ember.Generator(9), device=d(a))
        krange = ((k >= 3) & (k < 6)).all()
        return inside, t.mean().abs() < 0.15, (n.mean().abs() < 0.2) & ((n.std() - 1.0).abs() < 0.2), krange

    specs.append(c("random.summary.ranges", summary, lambda np, a: (np.bool_(True),) * 4, ("b", "b", "b", "b")))
    return specs


SPECS = deterministic_cases() + random_cases()
CASES = kit.variants(SPECS)


def test_creation(device, case):
    kit.run(device, case)
