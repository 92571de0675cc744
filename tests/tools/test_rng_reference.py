"""ember's Generator against an independent implementation of the same algorithms (CPython only).

The reference below is written from the algorithms' definitions (xoshiro128++ by Blackman and
Vigna; SplitMix32-style seeding as ember documents it; Box-Muller) in numpy uint32 arithmetic, so
a slip in either implementation shows as a mismatch over thousands of draws.
"""
import math

import numpy as np

import ember

PARAMETERS = ("device",)

U32 = np.uint32


def _rotl(x, k):
    return U32((int(x) << k | int(x) >> (32 - k)) & 0xFFFFFFFF)


class Reference:
    def __init__(self, seed):
        x = U32((seed ^ (seed >> 32)) & 0xFFFFFFFF)
        self.s = []
        with np.errstate(over="ignore"):
            for _ in range(4):
                x = U32(x + U32(0x9E3779B9))
                z = x
                z = U32((z ^ (z >> U32(16))) * U32(0x85EBCA6B))
                z = U32((z ^ (z >> U32(13))) * U32(0xC2B2AE35))
                self.s.append(U32(z ^ (z >> U32(16))))

    def next_u32(self):
        s0, s1, s2, s3 = self.s
        with np.errstate(over="ignore"):
            result = U32(_rotl(U32(s0 + s3), 7) + s0)
        t = U32(s1 << U32(9))
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = _rotl(s3, 11)
        self.s = [s0, s1, s2, s3]
        return int(result)


def test_stream_matches_the_reference(device):
    for seed in (0, 1, 12345, 2 ** 31 + 7, 2 ** 40 + 3):
        g, r = ember.Generator(seed), Reference(seed)
        got = [g.next_u32() for _ in range(2000)]
        want = [r.next_u32() for _ in range(2000)]
        assert got == want, "seed %d: first difference at draw %d" % (
            seed, next(i for i, (a, b) in enumerate(zip(got, want)) if a != b))


def test_uniforms_are_the_top_24_bits(device):
    g, r = ember.Generator(99), Reference(99)
    got = g.uniforms(1000)
    want = [(r.next_u32() >> 8) / 2.0 ** 24 for _ in range(1000)]
    assert got == want


def test_normals_are_box_muller_pairs(device):
    g, r = ember.Generator(5), Reference(5)
    got = g.normals(1000)
    want = []
    while len(want) < 1000:
        u1 = ((r.next_u32() >> 8) + 1) / 2.0 ** 24
        u2 = (r.next_u32() >> 8) / 2.0 ** 24
        radius = math.sqrt(-2.0 * math.log(u1))
        want += [radius * math.cos(2 * math.pi * u2), radius * math.sin(2 * math.pi * u2)]
    assert np.allclose(got, want[:1000], rtol=0, atol=1e-12)
    # and they look normal: mean, variance and the share within one sd
    big = np.array(ember.Generator(6).normals(100_000))
    assert abs(big.mean()) < 0.02 and abs(big.var() - 1) < 0.02
    assert abs(np.mean(np.abs(big) < 1) - 0.6827) < 0.01


def test_randint_frequencies_are_flat(device):
    g = ember.Generator(8)
    for span in (3, 10, 1000, 3 * 2 ** 30, 3 * 2 ** 62, 2 ** 64 + 1):
        bins = min(span, 10)
        # the share of draws in each of `bins` equal parts of the range: 1/bins each, sd <= 0.0028
        which = np.array([g.randint(0, span) * bins // span for _ in range(30_000)])
        shares = np.bincount(which, minlength=bins) / len(which)
        assert np.abs(shares - 1 / bins).max() < 0.012, "randint(0, %d): shares %s" % (span, np.round(shares, 3))


def test_rand_tensor_is_the_stream(device):
    g = ember.Generator(21)
    t = ember.rand(4, 5, generator=g, device=device, dtype=ember.float64)
    r = Reference(21)
    want = np.array([(r.next_u32() >> 8) / 2.0 ** 24 for _ in range(20)]).reshape(4, 5)
    assert np.array_equal(np.array(t.tolist()), want)
