"""PyTorch's spellings (issue 22) checked against PyTorch itself: indexing with ints beside tensor
indices over many combinations, the pools' ceil_mode/count_include_pad/divisor_override/
return_indices (values, indices and gradients), and ShapeError caught as RuntimeError."""
import random

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff
from harness import backends

torch = pytest.importorskip("torch")

DEVICES = [(name, dev) for name, dev in backends.inner_for_autodiff()]


def _index_items(rng, shape):
    """A random index of ints, slices, None, int lists/tensors and masks that fits ``shape``."""
    items, dim = [], 0
    while dim < len(shape) and rng.random() < 0.85:
        n = shape[dim]
        kind = rng.choice(("int", "int", "slice", "slice", "tensor", "tensor2d", "none", "mask", "list"))
        if kind == "none":
            items.append(("none", None))
            continue
        if kind == "int":
            items.append(("int", rng.randrange(-n, n)))
        elif kind == "slice":
            start = rng.choice((None, rng.randrange(n)))
            items.append(("slice", (start, rng.choice((None, rng.randrange(n + 1))), rng.choice((None, 1, 2, 3)))))
        elif kind == "tensor":
            items.append(("tensor", [rng.randrange(-n, n) for _ in range(rng.randrange(1, 4))]))
        elif kind == "tensor2d":
            items.append(("tensor2d", [[rng.randrange(n)] for _ in range(2)]))
        elif kind == "list":
            items.append(("list", [rng.randrange(n) for _ in range(2)]))
        else:
            items.append(("mask", [rng.random() < 0.5 for _ in range(n)]))
        dim += 1
    return items


def _build(items, fw):
    out = []
    for kind, v in items:
        if kind in ("int", "none", "list"):
            out.append(v)
        elif kind == "slice":
            out.append(slice(*v))
        elif fw is torch:
            out.append(torch.tensor(v))
        else:
            out.append(ember.tensor(v))
    return tuple(out)


def test_indexing_matches_torch_over_many_combinations():
    rng = random.Random(22)
    shape = (3, 4, 5, 2, 3)
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    tx, ex = torch.tensor(x), ember.tensor(x.tolist())
    checked = 0
    for _ in range(1500):
        items = _index_items(rng, shape)
        try:
            want = tx[_build(items, torch)]
        except (IndexError, RuntimeError):
            continue  # shapes that do not broadcast
        got = ex[_build(items, ember)]
        assert tuple(want.shape) == got.shape, items
        assert want.tolist() == got.tolist(), items
        # writing through the same index (where no position repeats: then the last write wins)
        positions = torch.arange(tx.numel()).reshape(shape)[_build(items, torch)]
        if 0 < positions.numel() == positions.unique().numel():
            value = np.arange(want.numel(), dtype=np.float32).reshape(tuple(want.shape)) + 1000
            ty, ey = tx.clone(), ex.clone()
            ty[_build(items, torch)] = torch.tensor(value)
            ey[_build(items, ember)] = ember.tensor(value.tolist())
            assert ty.tolist() == ey.tolist(), items
        checked += 1
    assert checked > 700


def test_the_issue_index():
    x = np.random.default_rng(0).standard_normal((2, 3, 12, 4, 5)).astype(np.float32)
    d = [1, 3, 0]
    want = torch.tensor(x)[1, :, 3:11:2, torch.tensor(d), 0:2]
    got = ember.tensor(x.tolist())[1, :, 3:11:2, ember.tensor(d), 0:2]
    assert got.shape == tuple(want.shape) == (3, 4, 3, 2)
    np.testing.assert_array_equal(np.array(got.tolist(), dtype=np.float32), want.numpy())


POOLS = [(7, 7, 3, 2, 1, 1), (6, 5, 2, 2, 0, 1), (5, 7, 3, 2, 1, 2), (8, 9, 3, 3, 1, 1), (5, 6, (2, 3), (1, 2), (1, 0), 1)]


@pytest.mark.parametrize("name,inner", DEVICES, ids=[n for n, _ in DEVICES])
@pytest.mark.parametrize("geometry", POOLS, ids=[str(g) for g in POOLS])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool2d_matches_torch(name, inner, geometry, ceil_mode):
    h, w, k, s, p, d = geometry
    rng = np.random.default_rng(h * w)
    x = rng.standard_normal((2, 3, h, w)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    t = torch.tensor(x, requires_grad=True)
    tv, ti = torch.nn.functional.max_pool2d(t, k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    g = rng.standard_normal(tuple(tv.shape)).astype(np.float32)
    (tv * torch.tensor(g)).nansum().backward()
    dev = Autodiff(inner)
    e = ember.tensor(x.tolist(), device=dev).requires_grad_()
    ev, ei = F.max_pool2d(e, k, s, p, d, ceil_mode=ceil_mode, return_indices=True)
    assert ei.tolist() == ti.tolist()
    np.testing.assert_allclose(np.array(ev.tolist()), tv.detach().numpy(), equal_nan=True)
    keep = ~np.isnan(g * np.array(ev.tolist()))
    grads = (ev * ember.tensor(np.where(keep, g, 0).tolist(), device=dev)).where(
        ember.tensor(keep.tolist(), device=dev), 0.0).sum().backward()
    tg = torch.zeros_like(t)
    tg.view(2, 3, -1).scatter_add_(2, ti.view(2, 3, -1), torch.tensor(np.where(keep, g, 0)).view(2, 3, -1))
    np.testing.assert_allclose(np.array(e.grad(grads).tolist()), tg.numpy(), rtol=1e-6, atol=1e-6)
    xi = rng.integers(-50, 50, (2, 3, h, w))
    want = torch.nn.functional.max_pool2d(torch.tensor(xi, dtype=torch.float64), k, s, p, d, ceil_mode=ceil_mode)
    got = F.max_pool2d(ember.tensor(xi.tolist(), device=inner), k, s, p, d, ceil_mode=ceil_mode)
    assert got.dtype is ember.int64 and got.tolist() == want.long().tolist()


@pytest.mark.parametrize("name,inner", DEVICES, ids=[n for n, _ in DEVICES])
@pytest.mark.parametrize("geometry", [g for g in POOLS if g[5] == 1], ids=[str(g) for g in POOLS if g[5] == 1])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("divisor_override", [None, 5])
def test_avg_pool2d_matches_torch(name, inner, geometry, ceil_mode, count_include_pad, divisor_override):
    h, w, k, s, p, _ = geometry
    rng = np.random.default_rng(h + w)
    x = rng.standard_normal((2, 3, h, w)).astype(np.float32)
    t = torch.tensor(x, requires_grad=True)
    kw = dict(ceil_mode=ceil_mode, count_include_pad=count_include_pad, divisor_override=divisor_override)
    tv = torch.nn.functional.avg_pool2d(t, k, s, p, **kw)
    g = rng.standard_normal(tuple(tv.shape)).astype(np.float32)
    (tv * torch.tensor(g)).sum().backward()
    dev = Autodiff(inner)
    e = ember.tensor(x.tolist(), device=dev).requires_grad_()
    ev = F.avg_pool2d(e, k, s, p, **kw)
    grads = (ev * ember.tensor(g.tolist(), device=dev)).sum().backward()
    np.testing.assert_allclose(np.array(ev.tolist()), tv.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(e.grad(grads).tolist()), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_pool_modules_take_torchs_arguments():
    x = np.random.default_rng(3).standard_normal((3, 5, 5)).astype(np.float32)  # unbatched
    from ember.nn.pool import AvgPool2d, MaxPool2d
    tv, ti = torch.nn.MaxPool2d(2, return_indices=True, ceil_mode=True)(torch.tensor(x))
    ev, ei = MaxPool2d(2, return_indices=True, ceil_mode=True)(ember.tensor(x.tolist()))
    assert ei.tolist() == ti.tolist()
    np.testing.assert_allclose(np.array(ev.tolist()), tv.numpy())
    want = torch.nn.AvgPool2d(3, 2, 1, True, False, None)(torch.tensor(x))
    got = AvgPool2d(3, 2, 1, True, False, None)(ember.tensor(x.tolist()))
    np.testing.assert_allclose(np.array(got.tolist()), want.numpy(), rtol=1e-6)


def test_shape_errors_are_runtime_errors_as_in_torch():
    o = ember.ones
    bad = [lambda: o(2, 3) @ o(4, 5), lambda: o(2, 3).permute(0), lambda: o(2, 3).reshape(4),
           lambda: o(2, 3).gather(0, ember.zeros(2, dtype=ember.int64)),
           lambda: o(2, 3).scatter(0, ember.zeros(2, dtype=ember.int64), o(2)),
           lambda: o(2, 3).roll((1, 2), (0,)), lambda: F.conv2d(o(1, 3, 4, 4), o(2, 2, 3, 3)),
           lambda: F.cross_entropy(o(2, 3), ember.zeros(3, dtype=ember.int64))]
    for fn in bad:
        with pytest.raises(RuntimeError):
            fn()


def test_reduction_spellings_match_torch():
    x = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    tx, ex = torch.tensor(x), ember.tensor(x.tolist())
    pairs = [
        (lambda t: t.sum(axis=1), None), (lambda t: t.mean(axis=(0, 2)), None), (lambda t: t.var(axis=2), None),
        (lambda t: t.std(axis=[0, 1]), None), (lambda t: t.logsumexp(axis=1), None),
        (lambda t: t.max(axis=1).values, None), (lambda t: t.argmin(axis=2), None),
        (lambda t: t.cumsum(axis=1), None), (lambda t: t.sort(axis=0, stable=True).indices, None),
        (lambda t: t.argsort(dim=2, descending=True, stable=True), None), (lambda t: t.prod(axis=0), None),
    ]
    for fn, _ in pairs:
        np.testing.assert_allclose(np.array(fn(ex).tolist()), fn(tx).numpy(), rtol=1e-5, atol=1e-6)
    ti = torch.tensor([[7, -7, 3], [-8, 9, 1]])
    ei = ember.tensor(ti.tolist())
    for mode in ("trunc", "floor"):
        assert ei.div(ember.tensor([[2, 2, -2], [3, -4, 5]]), rounding_mode=mode).tolist() == \
            ti.div(torch.tensor([[2, 2, -2], [3, -4, 5]]), rounding_mode=mode).tolist()
        assert ei.div(-3, rounding_mode=mode).tolist() == ti.div(-3, rounding_mode=mode).tolist()
    assert ei.to(ember.int8).sum(dtype=ember.int32).dtype is ember.int32
