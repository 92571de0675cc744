"""Property tests (hypothesis): broadcasting, movement round trips, slicing, reductions, promotion.

Each property draws shapes and values, runs ember on every available backend and compares with
numpy (values) or torch (dtype promotion), so a whole family of cases stands behind each test.
"""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import ember
from harness import backends

DEVICES = [d for _, d in backends.available()]
IDS = [n for n, _ in backends.available()]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

dims = st.integers(min_value=0, max_value=4)
shapes = st.lists(st.integers(min_value=1, max_value=4), min_size=0, max_size=4).map(tuple)


@st.composite
def broadcastable(draw):
    """Two shapes that broadcast: each dim of the shorter one is equal, 1, or absent."""
    out = draw(st.lists(st.integers(min_value=1, max_value=4), min_size=0, max_size=4))
    a = [draw(st.sampled_from([n, 1])) for n in out]
    b = [draw(st.sampled_from([n, 1])) for n in out]
    cut = draw(st.integers(min_value=0, max_value=len(out)))
    return tuple(a[cut:]), tuple(b)


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(np.float32)


def _t(a, device):
    return ember.tensor(a.tolist() if a.ndim else float(a), dtype=ember.float32, device=device)


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
@SETTINGS
@given(pair=broadcastable(), seed=st.integers(0, 2 ** 16), op=st.sampled_from(["add", "sub", "mul", "maximum"]))
def test_broadcasting_matches_numpy(device, pair, seed, op):
    a, b = _values(pair[0], seed), _values(pair[1], seed + 1)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum}[op]
    got = getattr(_t(a, device), op)(_t(b, device))
    want = fn(a, b)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.array(got.tolist(), dtype=np.float32), want)


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2 ** 16), data=st.data())
def test_permute_and_reshape_round_trips(device, shape, seed, data):
    a = _values(shape, seed)
    t = _t(a, device)
    order = data.draw(st.permutations(range(len(shape))))
    inverse = [order.index(i) for i in range(len(shape))]
    back = t.permute(*order).permute(*inverse) if shape else t
    assert back.tolist() == t.tolist()
    flat = t.permute(*order).reshape(-1) if shape else t.reshape(-1)
    np.testing.assert_array_equal(np.array(flat.tolist(), dtype=np.float32),
                                  np.transpose(a, order).reshape(-1) if shape else a.reshape(-1))


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
@SETTINGS
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), seed=st.integers(0, 2 ** 16),
       data=st.data())
def test_slicing_matches_numpy(device, shape, seed, data):
    a = _values(shape, seed)
    index = []
    for n in shape:
        start = data.draw(st.integers(-n - 1, n + 1) | st.none())
        stop = data.draw(st.integers(-n - 1, n + 1) | st.none())
        step = data.draw(st.integers(1, 3) | st.none())
        index.append(slice(start, stop, step))
    got = _t(a, device)[tuple(index)]
    want = a[tuple(index)]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.array(got.tolist(), dtype=np.float32).reshape(want.shape), want)


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), seed=st.integers(0, 2 ** 16),
       op=st.sampled_from(["sum", "mean", "max", "min", "prod"]), keepdim=st.booleans(), data=st.data())
def test_reductions_match_numpy(device, shape, seed, op, keepdim, data):
    a = _values(shape, seed)
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    t = _t(a, device)
    if op in ("max", "min") and len(dims) > 1:
        dims = dims[:1]
    got = getattr(t, op)(dims[0] if op in ("max", "min") else dims, keepdim=keepdim)
    if op in ("max", "min"):
        got = got.values
    want = getattr(np, {"max": "amax", "min": "amin"}.get(op, op))(a.astype(np.float64), axis=dims, keepdims=keepdim)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.array(got.tolist(), dtype=np.float64).reshape(want.shape), want,
                               rtol=1e-5, atol=1e-5)


DTYPES = [("bool", ember.bool_, torch.bool), ("int8", ember.int8, torch.int8), ("int32", ember.int32, torch.int32),
          ("int64", ember.int64, torch.int64), ("float16", ember.float16, torch.float16),
          ("bfloat16", ember.bfloat16, torch.bfloat16), ("float32", ember.float32, torch.float32),
          ("float64", ember.float64, torch.float64)]


@SETTINGS
@given(a=st.sampled_from(DTYPES), b=st.sampled_from(DTYPES), op=st.sampled_from(["mul", "maximum", "eq"]))
def test_tensor_promotion_matches_torch(a, b, op):
    x = ember.ones(2, dtype=a[1]) if a[1] is not ember.bool_ else ember.tensor([True, False])
    y = ember.ones(2, dtype=b[1]) if b[1] is not ember.bool_ else ember.tensor([True, True])
    got = getattr(x, op)(y).dtype
    tx = torch.ones(2, dtype=a[2])
    ty = torch.ones(2, dtype=b[2])
    want = getattr(torch, op)(tx, ty).dtype
    if op == "mul" and a[1] is ember.bool_ and b[1] is ember.bool_:
        assert got is ember.int64  # ember's documented rule: arithmetic counts bools as int64
        return
    assert got.name == str(want).replace("torch.", ""), (a[0], b[0], op, got, want)


@SETTINGS
@given(a=st.sampled_from(DTYPES), scalar=st.sampled_from([True, 3, 2.5]))
def test_scalar_promotion_matches_torch(a, scalar):
    x = ember.ones(2, dtype=a[1])
    got = (x * scalar).dtype
    want = (torch.ones(2, dtype=a[2]) * scalar).dtype
    if a[1] is ember.bool_ and type(scalar) is bool:
        assert got is ember.int64  # bool * bool: ember counts them as int64, torch keeps bool
        return
    assert got.name == str(want).replace("torch.", ""), (a[0], scalar, got, want)
