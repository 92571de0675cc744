"""Property tests (CPython only): random shapes and values, ember against numpy float64.

Seeded loops stand in for hypothesis: every failure message carries the seed and case number, so
``_case(seed, i)`` replays it. Elementwise float32 results must be within one float32 rounding of
the float64 answer; reductions and matmul within a float32 rounding per term of |terms|; movement
ops and integer arithmetic must match exactly.
"""
import random

import numpy as np

import ember

PARAMETERS = ("device",)

SEED = 20261129
F32_EPS = 2.0 ** -23


def _shape(rng, max_ndim=4, max_size=4, allow_zero=False):
    lo = 0 if allow_zero and rng.random() < 0.1 else 1
    return tuple(rng.randint(lo, max_size) for _ in range(rng.randint(0, max_ndim)))


def _partner(rng, shape):
    """A shape that broadcasts with ``shape``: leading dims dropped or added, some dims set to 1."""
    out = [1 if rng.random() < 0.3 else n for n in shape]
    drop = rng.randint(0, len(out))
    out = out[drop:]
    if drop == 0 and rng.random() < 0.3:
        out = [rng.randint(1, 3)] + out
    return tuple(out)


def _floats(rng, shape):
    return np.array(
        [rng.gauss(0.0, 1.0) * 10.0 ** rng.randint(-2, 2) for _ in range(int(np.prod(shape, dtype=np.int64)))],
        dtype=np.float32).reshape(shape)


def _ember(a, device):
    a = np.array(a, dtype=a.dtype.newbyteorder("<"), order="C")  # keeps 0-d arrays 0-d
    return ember.tensor(a.tobytes(), dtype=a.dtype.name, shape=a.shape, device=device)


def _values(t):
    return np.array(t.tolist(), dtype=np.float64).reshape(t.shape)


def _within(got, want, scale, ulps, what):
    err = np.abs(got - want)
    limit = ulps * F32_EPS * scale + 1e-37
    bad = err > limit
    assert not bad.any(), "%s: %d values off; worst error %r where the limit is %r" % (
        what, int(bad.sum()), float(err.max()), float(limit.flat[int(np.argmax(err - limit))]))


def test_broadcast_add_sub_mul_match_numpy(device):
    rng = random.Random(SEED)
    for i in range(400):
        sa = _shape(rng, allow_zero=True)
        sb = _partner(rng, sa) if rng.random() < 0.8 else _shape(rng)
        try:
            want_shape = np.broadcast_shapes(sa, sb)
        except ValueError:
            continue
        if rng.random() < 0.5:
            sa, sb = sb, sa
        a, b = _floats(rng, sa), _floats(rng, sb)
        ta, tb = _ember(a, device), _ember(b, device)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        for name, got, want in (("add", ta + tb, a64 + b64), ("sub", ta - tb, a64 - b64), ("mul", ta * tb, a64 * b64)):
            what = "case %d: %s of %s and %s" % (i, name, sa, sb)
            assert got.shape == tuple(want_shape), "%s: shape %s, numpy %s" % (what, got.shape, want_shape)
            assert got.dtype is ember.float32, what
            # one float32 rounding of the exact result: half an ulp, so 1 eps relative is generous
            _within(_values(got), want, np.abs(want), 1.0, what)


def test_scalar_operands_match_numpy(device):
    rng = random.Random(SEED + 1)
    for i in range(200):
        shape = _shape(rng)
        a = _floats(rng, shape)
        s = float(np.float32(rng.uniform(-5, 5)))
        t = _ember(a, device)
        a64 = a.astype(np.float64)
        for name, got, want in (("t + s", t + s, a64 + s), ("s - t", s - t, s - a64), ("t * s", t * s, a64 * s),
                                ("t / s", t / s, a64 / s)):
            _within(_values(got), want, np.abs(want), 1.0, "case %d: %s with shape %s" % (i, name, shape))


def test_integer_arithmetic_wraps_like_numpy(device):
    rng = random.Random(SEED + 2)
    for i in range(200):
        dt = rng.choice(["int8", "int32", "int64"])
        info = np.iinfo(dt)
        sa = _shape(rng)
        sb = _partner(rng, sa)
        a, b = (np.array([rng.randint(info.min, info.max) for _ in range(int(np.prod(s, dtype=np.int64)))],
                         dtype=dt).reshape(s) for s in (sa, sb))
        ta, tb = _ember(a, device), _ember(b, device)
        with np.errstate(over="ignore"):
            for name, got, want in (("add", ta + tb, a + b), ("sub", ta - tb, a - b), ("mul", ta * tb, a * b)):
                assert got.dtype.name == dt
                assert np.array_equal(np.array(got.tolist(), dtype=dt).reshape(got.shape), want), \
                    "case %d: %s %s %s %s" % (i, name, dt, sa, sb)


def _matmul_shapes(rng):
    m, k, n = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
    kind = rng.random()
    if kind < 0.15:
        return (k,), (k,)
    if kind < 0.3:
        return (k,), _batch(rng) + (k, n)
    if kind < 0.45:
        return _batch(rng) + (m, k), (k,)
    ba = _batch(rng)
    bb = _partner(rng, ba)
    if rng.random() < 0.5:
        ba, bb = bb, ba
    return ba + (m, k), bb + (k, n)


def _batch(rng):
    return tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2)))


def test_matmul_matches_numpy(device):
    rng = random.Random(SEED + 3)
    for i in range(300):
        sa, sb = _matmul_shapes(rng)
        a, b = _floats(rng, sa), _floats(rng, sb)
        got = ember.matmul(_ember(a, device), _ember(b, device))
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        scale = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        what = "case %d: %s @ %s" % (i, sa, sb)
        assert got.shape == want.shape, "%s: shape %s, numpy %s" % (what, got.shape, want.shape)
        k = sa[-1]
        _within(_values(got), want, scale, float(k + 1), what)


def test_sum_and_mean_match_numpy(device):
    rng = random.Random(SEED + 4)
    for i in range(300):
        shape = _shape(rng, allow_zero=True)
        a = _floats(rng, shape)
        nd = len(shape)
        if nd and rng.random() < 0.7:
            dims = tuple(sorted(rng.sample(range(nd), rng.randint(1, nd))))
            dim = dims[0] if len(dims) == 1 and rng.random() < 0.5 else dims
        else:
            dim = None
        keep = rng.random() < 0.5
        t = _ember(a, device)
        a64 = a.astype(np.float64)
        axis = dim if dim is None or type(dim) is int else tuple(dim)
        what = "case %d: sum of %s over %r keepdim=%s" % (i, shape, dim, keep)
        got = t.sum(dim, keepdim=keep)
        want = np.sum(a64, axis=axis, keepdims=keep)
        assert got.shape == np.shape(want), "%s: shape %s, numpy %s" % (what, got.shape, np.shape(want))
        count = max(a.size // max(np.size(want), 1), 1)
        _within(_values(got), want, np.sum(np.abs(a64), axis=axis, keepdims=keep), float(count + 1), what)
        if a.size and np.size(want) and all(n for n in shape):
            m = t.mean(dim, keepdim=keep)
            _within(_values(m), np.mean(a64, axis=axis, keepdims=keep),
                    np.mean(np.abs(a64), axis=axis, keepdims=keep), float(count + 2), what.replace("sum", "mean"))


def test_max_argmax_match_numpy(device):
    rng = random.Random(SEED + 5)
    for i in range(200):
        shape = _shape(rng)
        if not shape:
            continue
        a = _floats(rng, shape)
        d = rng.randrange(len(shape))
        t = _ember(a, device)
        values, indices = t.max(dim=d)
        assert np.array_equal(_values(values), np.max(a, axis=d).astype(np.float64)), "case %d" % i
        assert np.array_equal(np.array(indices.tolist()).reshape(indices.shape), np.argmax(a, axis=d)), "case %d" % i
        assert np.array_equal(_values(t.min(dim=d).values), np.min(a, axis=d).astype(np.float64)), "case %d" % i


def _random_factorization(rng, n, max_ndim=4):
    """A random shape with ``n`` elements (some -1 for the inferred size)."""
    dims = []
    rest = n
    for _ in range(rng.randint(0, max_ndim - 1)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = rng.choice(divisors)
        dims.append(d)
        rest //= d
    dims.append(rest)
    rng.shuffle(dims)
    if rng.random() < 0.3:
        dims[rng.randrange(len(dims))] = -1
    return tuple(dims)


def test_movement_chains_match_numpy_exactly(device):
    rng = random.Random(SEED + 6)
    for i in range(300):
        shape = _shape(rng, max_ndim=4, max_size=4)
        a = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.float32).reshape(shape)
        t = _ember(a, device)
        steps = []
        for _ in range(rng.randint(1, 6)):
            op = rng.choice(["permute", "reshape", "transpose", "slice", "expand", "unsqueeze", "flatten", "index"])
            nd = a.ndim
            if op == "permute":
                order = list(range(nd))
                rng.shuffle(order)
                a, t = np.transpose(a, order), t.permute(*order)
            elif op == "reshape":
                new = _random_factorization(rng, a.size) if a.size else (0,)
                a, t = a.reshape(new), t.reshape(*new)
            elif op == "transpose" and nd >= 2:
                d0, d1 = rng.randrange(nd), rng.randrange(nd)
                a, t = np.swapaxes(a, d0, d1), t.transpose(d0, d1)
            elif op == "slice" and nd:
                d = rng.randrange(nd)
                n = a.shape[d]
                start, stop, step = rng.randint(-n - 1, n), rng.randint(-n - 1, n + 1), rng.randint(1, 3)
                index = (slice(None),) * d + (slice(start, stop, step),)
                op = "slice %r" % (index,)
                a, t = a[index], t[index]
            elif op == "expand":
                new = tuple(rng.randint(1, 3) if s == 1 else s for s in a.shape)
                lead = tuple(rng.randint(1, 2) for _ in range(rng.randint(0, 1)))
                a, t = np.broadcast_to(a, lead + new), t.expand(*(lead + new))
            elif op == "unsqueeze":
                d = rng.randint(0, nd)
                a, t = np.expand_dims(a, d), t.unsqueeze(d)
            elif op == "flatten" and nd:
                s, e = sorted((rng.randrange(nd), rng.randrange(nd)))
                a = a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:]) if a.size else \
                    a.reshape(a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:])
                t = t.flatten(s, e)
            elif op == "index" and nd and a.shape[0]:
                k = rng.randrange(-a.shape[0], a.shape[0])
                op = "index %d" % k
                a, t = a[k], t[k]
            else:
                continue
            steps.append(op)
            what = "case %d: %s after %s" % (i, shape, " -> ".join(steps))
            assert t.shape == a.shape, "%s: shape %s, numpy %s" % (what, t.shape, a.shape)
            assert np.array_equal(_values(t), a.astype(np.float64)), what
        # and the bytes of the final view are numpy's row-major bytes
        assert t.to_bytes() == np.array(a, order="C").tobytes(), "case %d: to_bytes after %s" % (i, steps)


def test_chains_of_arithmetic_on_views(device):
    rng = random.Random(SEED + 7)
    for i in range(150):
        shape = (rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4))
        a = _floats(rng, shape)
        t = _ember(a, device)
        order = [0, 1, 2]
        rng.shuffle(order)
        pa, pt = np.transpose(a, order), t.permute(*order)
        b = _floats(rng, pa.shape[-1:])
        got = ((pt * _ember(b, device)).sum(-1) + pt[..., 0]).reshape(-1)
        p64 = pa.astype(np.float64)
        want = ((p64 * b.astype(np.float64)).sum(-1) + p64[..., 0]).reshape(-1)
        scale = (np.abs(p64) * np.abs(b.astype(np.float64))).sum(-1).reshape(-1) + np.abs(p64[..., 0]).reshape(-1)
        _within(_values(got), want, scale, float(pa.shape[-1] + 3), "case %d: %s permuted %s" % (i, shape, order))


def test_arange_matches_numpy(device):
    rng = random.Random(SEED + 8)
    for i in range(600):
        if rng.random() < 0.5:
            start, end, step = rng.randint(-10, 10), rng.randint(-10, 10), rng.choice([-3, -2, -1, 1, 2, 5])
        else:
            start = round(rng.uniform(-3, 3), rng.randint(0, 2))
            end = round(rng.uniform(-3, 3), rng.randint(0, 2))
            step = rng.choice([0.1, 0.2, 0.25, 0.3, 0.5, 0.7, -0.1, -0.25, -0.3, -0.7, 1.5])
        got = ember.arange(start, end, step, dtype=ember.float64, device=device).tolist()
        want = np.arange(start, end, step, dtype=np.float64)
        assert len(got) == want.size, "case %d: arange(%r, %r, %r) has %d values, numpy %d" % (
            i, start, end, step, len(got), want.size)
        assert np.allclose(got, want, rtol=0, atol=1e-12), "case %d: arange(%r, %r, %r)" % (i, start, end, step)
