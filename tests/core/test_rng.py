"""ember's random numbers: one xoshiro128++ stream that CPython and MicroPython produce bit for bit.

The constants below were printed by ember's Generator on CPython 3.11 (and the generator was checked
against an independent numpy implementation in tests/tools/test_rng_reference.py); MicroPython must
print the same: ints and uniforms exactly, normals within 1e-12 (its libm may differ in the last bit).
"""
import ember
import ember.nn.functional as F
from harness.check import assert_close, assert_equal, assert_true, raises

PARAMETERS = ("device",)

# Generator(seed): the first 8 next_u32() values
U32 = {
    0: [4226848253, 3853465007, 1657604656, 2135928087, 1643513283, 687183380, 2782657768, 2960659134],
    12345: [2198486559, 1170209040, 1342176618, 935490946, 2954942064, 2433834781, 3189384605, 3060619913],
}
# Generator(seed): the first 4 random() values (24-bit, so exact in float32 and float64)
RANDOM = {
    0: [0.9841397404670715, 0.8972046971321106, 0.38594114780426025, 0.49730950593948364],
    12345: [0.5118750333786011, 0.2724605202674866, 0.3124998211860657, 0.21781092882156372],
}
# Generator(seed): the first 4 normals (Box-Muller on pairs of 24-bit uniforms)
NORMALS = {
    0: [0.14279578600534956, -0.10762899727558711, -1.379708796695777, 0.02332602367863902],
    12345: [-0.16278114095910717, 1.1457973579971237, 0.3063772717715799, 1.4941336452582694],
}
# the published reference vector of xoshiro128plusplus.c (Blackman and Vigna) for the state {1, 2, 3, 4}
REFERENCE = [641, 1573767, 3222811527, 3517856514, 836907274, 4247214768, 3867114732, 1355841295,
             495546011, 621204420]


def test_known_answer_of_the_xoshiro128pp_core(device):
    g = ember.Generator(0)
    g.set_state([1, 2, 3, 4])
    assert_true([g.next_u32() for _ in range(10)] == REFERENCE, "the generator is not xoshiro128++")


def test_first_words_for_fixed_seeds(device):
    for seed in (0, 12345):
        g = ember.Generator(seed)
        got = [g.next_u32() for _ in range(8)]
        assert_true(got == U32[seed], "seed %d: %s" % (seed, got))


def test_first_uniforms_for_fixed_seeds(device):
    for seed in (0, 12345):
        g = ember.Generator(seed)
        got = [g.random() for _ in range(4)]
        assert_true(got == RANDOM[seed], "seed %d: %r" % (seed, got))
        # random() is the top 24 bits of next_u32()
        assert_true(got == [(w >> 8) * 2.0 ** -24 for w in U32[seed][:4]])
        assert_true(ember.Generator(seed).uniforms(4) == RANDOM[seed])


def test_first_normals_for_fixed_seeds(device):
    for seed in (0, 12345):
        assert_close(ember.Generator(seed).normals(4), NORMALS[seed], rtol=0.0, atol=1e-12)


def test_uniforms_with_bounds(device):
    got = ember.Generator(0).uniforms(3, -1.0, 1.0)
    assert_true(got == [-1.0 + 2.0 * r for r in RANDOM[0][:3]], "%r" % got)
    assert_close(ember.Generator(0).normals(2, 5.0, 0.5), [5.0 + 0.5 * v for v in NORMALS[0][:2]], rtol=0.0,
                 atol=1e-12)


def test_seed_makes_the_default_stream_reproducible(device):
    ember.seed(123)
    a = ember.rand(5, device=device).tolist() + ember.randn(3, device=device).tolist()
    ember.seed(123)
    b = ember.rand(5, device=device).tolist() + ember.randn(3, device=device).tolist()
    assert_true(a == b, "%r != %r" % (a, b))
    ember.seed(124)
    c = ember.rand(5, device=device).tolist()
    assert_true(c != a[:5], "seeds 123 and 124 gave the same draws")


def test_seed_is_ember_seed_of_the_default_generator(device):
    ember.seed(0)
    assert_equal(ember.rand(4, dtype=ember.float64, device=device).tolist(), RANDOM[0])
    ember.seed(12345)
    assert_close(ember.randn(4, dtype=ember.float64, device=device).tolist(), NORMALS[12345], rtol=0.0, atol=1e-12)


def test_generators_are_independent_streams(device):
    g1 = ember.Generator(0)
    g2 = ember.Generator(0)
    first = [g1.next_u32() for _ in range(4)]
    ember.seed(99)
    ember.rand(10, device=device)  # drawing from the default stream leaves g2 alone
    assert_true([g2.next_u32() for _ in range(4)] == first)
    a = ember.rand(3, generator=ember.Generator(7), device=device).tolist()
    b = ember.rand(3, generator=ember.Generator(7), device=device).tolist()
    assert_true(a == b)


def test_different_seeds_give_different_streams(device):
    firsts = [ember.Generator(s).next_u32() for s in range(64)]
    assert_true(len(set(firsts)) == 64, "two of 64 seeds start alike")
    big = ember.Generator(2 ** 40 + 3).next_u32()
    assert_true(big == ember.Generator(2 ** 40 + 3).next_u32())


def test_chunked_normals_equal_one_draw(device):
    # the spare Box-Muller value carries over between calls
    whole = ember.Generator(5).normals(7)
    g = ember.Generator(5)
    parts = g.normals(1) + g.normals(3) + g.normals(0) + g.normals(3)
    assert_true(parts == whole, "%r != %r" % (parts, whole))


def test_state_continues_the_stream(device):
    g = ember.Generator(42)
    g.normals(3)  # leaves a spare normal in the state
    state = g.get_state()
    ahead = [g.next_u32() for _ in range(5)], g.normals(3)
    g.set_state(state)
    again = [g.next_u32() for _ in range(5)], g.normals(3)
    assert_true(again == ahead, "set_state did not rewind: %r != %r" % (again, ahead))
    other = ember.Generator(0)
    other.set_state(state)
    assert_true(([other.next_u32() for _ in range(5)], other.normals(3)) == ahead, "state did not transfer")
    # the saved state is a copy: drawing more does not change it
    saved = list(state)
    g.next_u32()
    assert_true(state == saved)


def test_state_survives_a_json_round_trip(device):
    import json
    g = ember.Generator(3)
    g.normals(1)
    state = json.loads(json.dumps(g.get_state()))
    h = ember.Generator(0)
    h.set_state(state)
    assert_true(h.normals(4) == g.normals(4))


def test_randint_bounds(device):
    g = ember.Generator(1)
    for lo, hi in ((0, 1), (0, 2), (-3, 2), (10, 17), (0, 2 ** 32 - 1)):
        draws = [g.randint(lo, hi) for _ in range(300)]
        assert_true(min(draws) >= lo and max(draws) < hi, "randint(%d, %d) left its range" % (lo, hi))
    assert_true(set(g.randint(-3, 2) for _ in range(400)) == {-3, -2, -1, 0, 1}, "randint(-3, 2) misses a value")


def test_randint_beyond_32_bits(device):
    g = ember.Generator(1)
    for lo, hi in ((0, 2 ** 32), (-(2 ** 40), 2 ** 40), (5, 2 ** 70)):
        draws = [g.randint(lo, hi) for _ in range(300)]
        assert_true(min(draws) >= lo and max(draws) < hi, "randint(%d, %d) left its range" % (lo, hi))
        assert_true(max(draws) - min(draws) > (hi - lo) // 2, "randint(%d, %d) stays in a corner" % (lo, hi))


def test_randint_is_uniform_on_small_ranges(device):
    g = ember.Generator(2024)
    counts = [0] * 6
    for _ in range(6000):
        counts[g.randint(0, 6)] += 1
    # each count is binomial(6000, 1/6): mean 1000, sd 29; 160 is 5.5 sd
    assert_true(max(abs(c - 1000) for c in counts) < 160, "counts %s" % counts)


def test_randint_is_unbiased_when_the_range_is_not_a_power_of_two(device):
    # a span of 3 * 2**30 (rejection sampling) and of 3 * 2**62 (several words): in both, the lowest
    # third of the range must get a third of the draws; plain modulo would give it a half
    for span in (3 * 2 ** 30, 3 * 2 ** 62):
        g = ember.Generator(7)
        n = 3000
        low = sum(1 for _ in range(n) if g.randint(0, span) < span // 3)
        # binomial(3000, 1/3): sd 26, so a fair generator stays within 1000 +- 130; a biased one is near 1500
        assert_true(abs(low - 1000) < 130, "randint(0, %d): %d of %d draws in the lowest third" % (span, low, n))


def test_shuffle_is_a_permutation(device):
    g = ember.Generator(11)
    items = list(range(50))
    g.shuffle(items)
    assert_true(sorted(items) == list(range(50)))
    assert_true(items != list(range(50)), "shuffle left 50 items in order")
    again = list(range(50))
    ember.Generator(11).shuffle(again)
    assert_true(again == items, "shuffle is not reproducible")
    for n in (0, 1, 2):
        short = list(range(n))
        g.shuffle(short)
        assert_true(sorted(short) == list(range(n)))
    # every order of 3 items appears
    seen = set()
    for _ in range(200):
        s = [0, 1, 2]
        g.shuffle(s)
        seen.add(tuple(s))
    assert_true(len(seen) == 6, "only %d of 6 orders of 3 items" % len(seen))


def test_rand_and_randn_shapes_and_dtypes(device):
    ember.seed(0)
    for shape in ((), (0,), (3,), (2, 3), (2, 1, 2)):
        for fn in (ember.rand, ember.randn):
            t = fn(*shape, device=device)
            assert_true(t.shape == shape and t.dtype is ember.float32 and t.device == device,
                        "%s%s gave %s %s" % (fn.__name__, shape, t.shape, t.dtype.name))
            t2 = fn(shape, device=device)
            assert_true(t2.shape == shape)
    for dt in (ember.float16, ember.bfloat16, ember.float32, ember.float64):
        assert_true(ember.rand(2, dtype=dt, device=device).dtype is dt)
        assert_true(ember.randn(2, dtype=dt, device=device).dtype is dt)


def test_rand_stays_in_the_unit_interval(device):
    ember.seed(3)
    values = ember.rand(2000, device=device).tolist()
    assert_true(min(values) >= 0.0 and max(values) < 1.0)
    mean = sum(values) / len(values)
    assert_true(abs(mean - 0.5) < 0.03, "mean %r" % mean)  # sd of the mean is 0.0065
    # float16 rounding may not reach 1.0 either: rand draws in [0, 1)
    h = ember.rand(2000, dtype=ember.float16, device=device).tolist()
    assert_true(min(h) >= 0.0 and max(h) <= 1.0)


def test_randn_moments(device):
    ember.seed(4)
    v = ember.randn(4000, dtype=ember.float64, device=device).tolist()
    mean = sum(v) / len(v)
    var = sum((x - mean) ** 2 for x in v) / len(v)
    assert_true(abs(mean) < 0.07, "mean %r" % mean)  # sd of the mean is 0.016
    assert_true(abs(var - 1.0) < 0.1, "variance %r" % var)  # sd of the variance is 0.022


def test_rand_values_are_the_generator_values_rounded(device):
    # float32 rand is exact (24-bit draws); randn is the float64 normals rounded to float32
    u = ember.rand(4, generator=ember.Generator(0), device=device).tolist()
    assert_true(u == RANDOM[0], "%r" % u)
    n = ember.randn(4, generator=ember.Generator(12345), device=device)
    want = ember.tensor(ember.Generator(12345).normals(4), dtype=ember.float32, device=device)
    assert_true(n.tolist() == want.tolist())
    assert_close(n, NORMALS[12345], rtol=1e-7, atol=0.0)


def test_same_seed_gives_the_same_tensor_on_every_device(device):
    ref = ember.Cpu()
    ember.seed(77)
    a = ember.randn(3, 4, device=device).tolist()
    ember.seed(77)
    b = ember.randn(3, 4, device=ref).tolist()
    assert_true(a == b, "randn differs on %r" % (device,))
    ember.seed(77)
    c = ember.rand(5, dtype=ember.float64, device=device).tolist()
    assert_true(c == ember.Generator(77).uniforms(5))


# -- the random primitive: what each kind gives, on every device --------------------------------

def test_draw_is_the_host_definition_of_each_kind(device):
    u = ember.Generator(3).uniforms(9)
    assert_true(ember.Generator(3).draw("uniform", 9, (0.0, 1.0)) == u)
    assert_true(ember.Generator(3).draw("bernoulli", 9, (0.4,)) == [v < 0.4 for v in u])
    g = ember.Generator(3)
    assert_true(ember.Generator(3).draw("randint", 6, (-2, 5)) == [g.randint(-2, 5) for _ in range(6)])
    assert_true(ember.Generator(3).draw("normal", 5, (1.0, 2.0)) == ember.Generator(3).normals(5, 1.0, 2.0))
    assert_true(ember.rng.KINDS == ("uniform", "normal", "randint", "bernoulli"))
    with raises(ember.ArgumentError, "random: expected a kind"):
        ember.Generator(0).draw("gamma", 3, ())


def test_every_device_draws_the_generator_stream(device):
    # every registered device keeps the stream (Wgpu in its default random="stream" mode)
    for kind, params, dtype in (("uniform", (-1.0, 2.0), ember.float32), ("normal", (0.5, 3.0), ember.float64),
                                ("randint", (-4, 9), ember.int64), ("bernoulli", (0.3,), ember.bool_),
                                ("bernoulli", (0.7,), ember.float32), ("normal", (0.0, 1.0), ember.float32)):
        for n in (0, 1, 5):
            g, h = ember.Generator(11), ember.Generator(11)
            g.normals(1)  # a spare in the state
            h.normals(1)
            got = device.to_list(device.random(kind, (n,), dtype, g, params))
            want = ember.Cpu(kernels="python").from_list(h.draw(kind, n, params), (n,), dtype).data
            assert_true(got == list(want), "%s %s n=%d: %r != %r" % (kind, dtype.name, n, got, list(want)))
            assert_true(g.get_state() == h.get_state(), "%s n=%d: the generator state differs" % (kind, n))


def test_dropout_keeps_the_uniforms_at_or_above_p(device):
    x = ember.arange(1, 13, dtype=ember.float32, device=device)
    got = F.dropout(x, 0.25, generator=ember.Generator(5)).tolist()
    u = ember.Generator(5).uniforms(12)
    want = [(i + 1) / 0.75 if u[i] >= 0.25 else 0.0 for i in range(12)]
    assert_close(got, want, rtol=1e-6, atol=0.0)
    ints = F.dropout(ember.arange(1, 13, device=device), 0.25, generator=ember.Generator(5))
    assert_true(ints.dtype is ember.float32)
    assert_close(ints.tolist(), want, rtol=1e-6, atol=0.0)


def test_random_rejects_bad_arguments(device):
    with raises(ember.ShapeError, "rand: expected sizes >= 0"):
        ember.rand(2, -1, device=device)
    with raises(ember.ArgumentError, "dropout: p must be in [0, 1]"):
        F.dropout(ember.ones(3, device=device), 1.5)
    for p in (-0.1, 1.01, float("nan")):
        with raises(ember.ArgumentError, "Bernoulli: expected"):
            ember.Bernoulli(p)
    with raises(ember.ArgumentTypeError, "Bernoulli: expected an int or float p"):
        ember.Bernoulli("0.5")
    for lo, hi in ((1.0, 1.0), (2.0, 1.0)):
        with raises(ember.ArgumentError, "Uniform: expected low < high"):
            ember.Uniform(lo, hi)
    with raises(ember.ArgumentError, "Uniform: expected a finite high"):
        ember.Uniform(0.0, float("inf"))
    with raises(ember.ArgumentError, "Normal: expected std >= 0"):
        ember.Normal(0.0, -1.0)
    with raises(ember.ArgumentError, "Normal: expected a finite mean"):
        ember.Normal(float("nan"), 1.0)
    for lo, hi in ((5, 5), (5, 2), (0.5, 3)):
        with raises(ember.ArgumentError, "randint: expected int low < high"):
            ember.randint(lo, hi, (2,), device=device)
    for fn, op in ((ember.rand, "rand"), (ember.randn, "randn")):
        for dt in ("int32", "bool"):
            with raises(ember.DTypeError, "%s: expected a float dtype, found" % op):
                fn(3, dtype=dt, device=device)
    with raises(ember.DTypeError, "random: expected a float dtype, found int64"):
        ember.random((2,), ember.Normal(), dtype="int64", device=device)
    with raises(ember.ArgumentTypeError, "rand: expected an ember.Generator, found int"):
        ember.rand(2, generator=3, device=device)
    with raises(ember.ArgumentTypeError, "random: expected an ember.Generator, found str"):
        ember.random((2,), ember.Bernoulli(0.5), generator="g", device=device)
    with raises(ember.ArgumentTypeError, "randint: expected an ember.Generator"):
        ember.randint(0, 4, (2,), generator=[1, 2], device=device)
    with raises(ember.ArgumentTypeError, "dropout: expected an ember.Generator"):
        F.dropout(ember.ones(3, device=device), 0.5, generator=7)


def test_a_refused_draw_leaves_the_stream_alone(device):
    g = ember.Generator(4)
    before = g.get_state()
    with raises(ember.DTypeError, "rand"):
        ember.rand(5, dtype="int8", generator=g, device=device)
    assert_true(g.get_state() == before)
