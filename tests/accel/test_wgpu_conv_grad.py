"""Wgpu's conv gradients (implicit GEMMs, accel/wgpu/conv_grad.py), its reductions over several
dims in one kernel (accel/wgpu/reduce_dims.py) and its pool gradients where the windows tile the
input (accel/wgpu/pool_grad.py) against the composites they replace and numpy.

The gradients accumulate in f32 through the tiled kernels, so they match the composite within
the conv tolerance; max and min over several dims match exactly, sums within the conformance
suite's sum tolerance. They run wherever an adapter is found (in CI: Mesa's lavapipe).
"""
import math
import random

import pytest

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff
from ember.accel.autodiff import rules
from ember.composite import COMPOSITES
from harness import backends

wgpu_dev = dict(backends.available()).get("wgpu")
pytestmark = pytest.mark.skipif(wgpu_dev is None, reason="no wgpu device: %s" % dict(backends.unavailable()).get("wgpu"))

np = pytest.importorskip("numpy")
PURE = ember.Cpu(kernels="python")


@pytest.fixture
def dev():
    return wgpu_dev


def _rand(shape, dtype, device, seed):
    rng = random.Random(seed)
    return ember.tensor([rng.uniform(-1, 1) for _ in range(math.prod(shape))], dtype=dtype,
                        device=device).reshape(shape)


def _dispatches(dev, fn):
    dev.synchronize()
    before = dev.queue_stats()["dispatches"]
    out = fn()
    return out, dev.queue_stats()["dispatches"] - before


def _kernels(dev, fn):
    """``fn()`` and the pipeline keys of the kernels it dispatched."""
    rt = dev.rt
    dev.synchronize()
    seen = []
    dispatch = rt.dispatch

    def spy(entry, *args):
        seen.append(entry)
        return dispatch(entry, *args)
    rt.dispatch = spy
    try:
        out = fn()
        dev.synchronize()
    finally:
        del rt.dispatch
    return out, [next((k for k, e in rt._pipelines.items() if e is entry), ("?",)) for entry in seen]


def _names(dev, fn):
    """``fn()`` and the kernels it dispatched (their pipeline keys' first word)."""
    out, keys = _kernels(dev, fn)
    return out, [k[0] for k in keys]


# (x shape, w shape, stride, padding pairs, dilation, groups)
CASES = [((4, 3, 12, 11), (6, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
         ((3, 4, 9, 10), (6, 2, 3, 3), (2, 1), ((1, 2), (1, 0)), (1, 2), 2),
         ((2, 6, 8, 8), (4, 6, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1),
         ((5, 4, 13), (8, 2, 3), (2,), ((1, 0),), (2,), 2),
         ((17, 6, 14, 14), (16, 6, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
         ((2, 3, 7, 7), (3, 1, 3, 3), (3, 2), ((0, 1), (2, 0)), (2, 1), 3),
         ((2, 2, 4, 4), (3, 2, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1)]


def _out_shape(xs, ws, stride, padding, dilation):
    n = len(xs) - 2
    return (xs[0], ws[0]) + tuple((xs[2 + i] + padding[i][0] + padding[i][1] - dilation[i] * (ws[2 + i] - 1) - 1)
                                  // stride[i] + 1 for i in range(n))


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.bfloat16], ids=lambda d: d.name)
def test_conv_gradients_equal_the_composites(dev, case, dtype):
    xs, ws, stride, padding, dilation, groups = case
    gs = _out_shape(xs, ws, stride, padding, dilation)
    x, w, g = _rand(xs, dtype, dev, 1), _rand(ws, dtype, dev, 2), _rand(gs, dtype, dev, 3)
    args = (stride, padding, dilation, groups)
    (gx, gw), names = _names(dev, lambda: (rules.conv_input_grad(g, w, xs, *args),
                                           rules.conv_weight_grad(x, g, ws, *args)))
    assert set(names) <= {"conv_dx", "conv_dw", "finalize", "copy"}, names  # no pads, no concatenations
    assert "conv_dx" in names and "conv_dw" in names
    assert (gx.shape, gx.dtype, gw.shape, gw.dtype) == (xs, dtype, ws, dtype)
    cpu = [t.to(PURE).to(ember.float64) for t in (x, w, g)]
    want_x = COMPOSITES["conv_input_grad"](cpu[2], cpu[1], xs, *args)
    want_w = COMPOSITES["conv_weight_grad"](cpu[0], cpu[2], ws, *args)
    tol = 1e-5 if dtype is ember.float32 else 2e-2
    for got, want in ((gx, want_x), (gw, want_w)):
        got, want = np.array(got.to(ember.float64).tolist()), np.array(want.tolist())
        assert np.abs(got - want).max() <= tol * (1 + np.abs(want).max())


def test_conv_gradients_read_strided_views(dev):
    """The output's gradient as a transposed view and the input as a slice: read in place."""
    x = _rand((3, 4, 10, 9), ember.float32, dev, 4)[:, 1:]
    w = _rand((5, 3, 3, 3), ember.float32, dev, 5)
    g = _rand((3, 5, 7, 8), ember.float32, dev, 6).transpose(2, 3)
    args = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    assert g.shape == (3, 5, 8, 7)
    gx = rules.conv_input_grad(g, w, x.shape, *args)
    gw = rules.conv_weight_grad(x, g, w.shape, *args)
    cx, cw, cg = (t.to(PURE) for t in (x, w, g))
    for got, want in ((gx, COMPOSITES["conv_input_grad"](cg, cw, x.shape, *args)),
                      (gw, COMPOSITES["conv_weight_grad"](cx, cg, w.shape, *args))):
        assert np.abs(np.array(got.tolist()) - np.array(want.tolist())).max() <= 1e-4


def test_conv_gradients_of_an_empty_batch_are_zeros(dev):
    x = ember.zeros(0, 2, 5, 5, device=dev)
    w = _rand((3, 2, 3, 3), ember.float32, dev, 7)
    g = ember.zeros(0, 3, 3, 3, device=dev)
    args = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    assert rules.conv_input_grad(g, w, x.shape, *args).shape == (0, 2, 5, 5)
    assert rules.conv_weight_grad(x, g, w.shape, *args).tolist() == ember.zeros(3, 2, 3, 3).tolist()


def test_float64_convolutions_keep_the_composite(dev):
    """float64 has no tiled kernel: the composite's exact path."""
    x, w = _rand((2, 2, 5, 5), ember.float64, dev, 8), _rand((3, 2, 3, 3), ember.float64, dev, 9)
    g = _rand((2, 3, 3, 3), ember.float64, dev, 10)
    args = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    _, names = _names(dev, lambda: rules.conv_input_grad(g, w, x.shape, *args).tolist())
    assert "conv_dx" not in names


def test_a_training_step_through_autodiff_matches_the_cpu(dev):
    """conv2d's backward on Autodiff(Wgpu()) takes the GEMMs and gives the Cpu's gradients."""
    out = {}
    for name, inner in (("wgpu", dev), ("cpu", PURE)):
        ad = Autodiff(inner)
        x = _rand((4, 3, 9, 9), ember.float32, ad, 11).require_grad()
        w = _rand((6, 3, 3, 3), ember.float32, ad, 12).require_grad()
        b = _rand((6,), ember.float32, ad, 13).require_grad()
        y = F.conv2d(x, w, b, stride=2, padding=1)
        grads = (y * y).sum().backward()
        out[name] = [np.array(grads.get(t).tolist()) for t in (x, w, b)]
    for got, want in zip(out["wgpu"], out["cpu"]):
        assert np.abs(got - want).max() <= 1e-4 * (1 + np.abs(want).max())


def test_conv_gradients_under_fusion_run_the_gemms(dev):
    from ember.accel.fusion import Fusion
    fd = Fusion(dev)
    x, w, g = _rand((4, 3, 9, 9), ember.float32, fd, 14), _rand((6, 3, 3, 3), ember.float32, fd, 15), \
        _rand((4, 6, 7, 7), ember.float32, fd, 16)
    args = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    (gx, gw), names = _names(dev, lambda: [t.tolist() for t in (rules.conv_input_grad(g, w, x.shape, *args),
                                                                rules.conv_weight_grad(x, g, w.shape, *args))])
    assert "conv_dx" in names and "conv_dw" in names
    want = COMPOSITES["conv_weight_grad"](x.to(PURE), g.to(PURE), w.shape, *args)
    assert np.abs(np.array(gw) - np.array(want.tolist())).max() <= 1e-4


# -- several dims in one kernel ---------------------------------------------------------------------

@pytest.mark.parametrize("shape,dims", [((16, 6, 12, 12), (0, 2, 3)), ((3, 4, 5), (0, 2)), ((7, 9), (0, 1)),
                                        ((2, 3, 4, 5, 6), (0, 2, 4)), ((5, 600, 3), (0, 1)), ((4, 1, 5), (0, 1))])
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=lambda d: d.name)
def test_reductions_over_several_dims_take_one_kernel(dev, shape, dims, op, dtype):
    rng = np.random.default_rng(len(shape))
    a = rng.uniform(0.9, 1.1, shape) if op == "prod" else rng.standard_normal(shape)
    t = ember.tensor(a.tolist(), dtype=dtype, device=dev)
    if op in ("max", "min"):  # over every dim (a max over a tuple of dims has no spelling)
        dims = tuple(range(len(shape)))
    got, n = _dispatches(dev, lambda: (getattr(t, op)() if op in ("max", "min") else getattr(t, op)(dims)).tolist())
    assert n == 1
    exact = np.array(t.to(PURE).to(ember.float64).tolist())
    ref = getattr(np, op)(exact, dims)
    if op in ("max", "min"):
        assert got == ref.item()
    else:
        assert np.allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_reductions_over_several_dims_of_views_nans_and_empties(dev):
    a = np.arange(120.0).reshape(2, 3, 4, 5)
    a[1, 2, 0, 3] = np.nan
    t = ember.tensor(a.tolist(), device=dev)
    v = t.permute(3, 0, 2, 1)  # a strided view: nothing merges
    got = np.array(v.sum((1, 3)).tolist())
    assert np.allclose(got, a.transpose(3, 0, 2, 1).sum((1, 3)), equal_nan=True)
    assert math.isnan(v.max().item()) and v[:, 0].min().item() == 0.0
    # four runs of reduced dims: beyond one kernel, the composite's one-dim reductions
    b = np.random.default_rng(3).standard_normal((2, 2, 2, 2, 2, 2, 2))
    tb = ember.tensor(b.tolist(), device=dev)
    assert np.allclose(tb.sum((0, 2, 4, 6)).tolist(), b.sum((0, 2, 4, 6)), rtol=1e-5)
    assert ember.zeros(2, 0, 3, device=dev).sum((0, 1)).tolist() == [0.0, 0.0, 0.0]
    assert ember.ones(2, 0, 3, device=dev).prod((0, 1)).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ember.errors.ShapeError):
        ember.zeros(2, 0, 3, device=dev).max()
    bools = ember.tensor([[[True, False], [False, False]], [[False, False], [False, True]]], device=dev)
    assert bools.any((0, 2)).tolist() == [True, True] and bools.all((1, 2)).tolist() == [False, False]


def test_a_bias_gradient_under_fusion_is_one_reduction(dev):
    """The sum over N, H and W of a computed gradient: the inner device's one kernel."""
    from ember.accel.fusion import Fusion
    fd = Fusion(dev)
    g = _rand((8, 6, 5, 5), ember.float32, fd, 17)
    g.tolist()
    got, names = _names(dev, lambda: g.sum((0, 2, 3)).tolist())
    assert names == ["reduce_dims"]
    assert np.allclose(got, np.array(g.tolist()).sum((0, 2, 3)), rtol=1e-5, atol=1e-5)


def test_conv_gradients_split_along_k_sooner_than_products():
    from ember.accel.wgpu import conv_grad, matmul_kernels as mk
    v = mk._BY_NAME["32x32x8_4x4"]
    rule = (conv_grad.SPLIT_FEW, conv_grad.SPLIT_AIM, conv_grad.SPLIT_MOST)
    # LeNet-5's second conv, input gradient at batch 64: M = 6 channels, N = 64 * 14 * 14, K = 16 * 25
    assert mk.split_k(v, 6, 12544, 400, 1) == (1, 400)
    ks, chunk = mk.split_k(v, 6, 12544, 400, 1, rule)
    assert 1 < ks and (ks - 1) * chunk < 400 <= ks * chunk
    # its first conv's weight gradient: K = 64 * 28 * 28 in at most SPLIT_MOST slices
    ks, chunk = mk.split_k(v, 6, 25, 64 * 28 * 28, 1, rule)
    assert mk.WIDE_SLICES <= ks <= conv_grad.SPLIT_MOST and chunk % v.bk == 0


def test_many_slices_of_few_outputs_are_added_by_a_workgroup_each(dev):
    """A weight gradient over a long K: split into many slices, finalized wide, the composite's values."""
    x, g = _rand((40, 2, 16, 16), ember.float32, dev, 18), _rand((40, 3, 14, 14), ember.float32, dev, 19)
    args = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    gw, keys = _kernels(dev, lambda: rules.conv_weight_grad(x, g, (3, 2, 3, 3), *args).tolist())
    assert [k[0] for k in keys] == ["conv_dw", "finalize"] and keys[1][-1] == "wide", keys
    want = COMPOSITES["conv_weight_grad"](x.to(PURE), g.to(PURE), (3, 2, 3, 3), *args)
    assert np.abs(np.array(gw) - np.array(want.tolist())).max() <= 1e-4 * (1 + np.abs(np.array(want.tolist())).max())


# x shape, kernel, stride: windows that tile the input (odd sizes leave a row or column outside)
TILED_POOLS = [((4, 3, 8, 8), (2, 2), (2, 2)), ((2, 3, 7, 9), (2, 2), (2, 2)), ((2, 2, 9, 9), (3, 3), (3, 3)),
               ((3, 2, 1, 10), (1, 2), (1, 2)), ((2, 2, 6, 8), (3, 2), (3, 2))]


@pytest.mark.parametrize("case", TILED_POOLS, ids=[str(i) for i in range(len(TILED_POOLS))])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=lambda d: d.name)
def test_pool_gradients_of_tiling_windows_equal_the_composite_exactly(dev, case, op, dtype):
    """Ties (the first max wins) and NaN (the first NaN wins) included; one kernel, the tiled one."""
    if dtype is ember.float64 and not dev.rt.has_f64:
        pytest.skip("no shader-f64")
    shape, k, st = case
    rng = random.Random(5)
    vals = [rng.choice([1.0, 2.0, float("nan"), rng.uniform(-1, 1)]) for _ in range(math.prod(shape))]
    nopad = ((0, 0), (0, 0))
    gshape = PURE.pool(op, PURE.from_list(vals, shape, dtype), k, st, nopad, (1, 1)).shape
    gv = [rng.uniform(-1, 1) for _ in range(math.prod(gshape))]

    def both(device):
        x = ember.tensor(vals, dtype=dtype, device=device).reshape(shape)
        g = ember.tensor(gv, dtype=dtype, device=device).reshape(gshape)
        return x, g
    x, g = both(dev)
    got, keys = _kernels(dev, lambda: rules.pool_input_grad(g, x, op, k, st, nopad, (1, 1)))
    assert keys == [("pool_grad", op, dtype.name, "f64" if dev.rt.has_f64 else "f32", "tiled")]
    px, pg = both(PURE)
    want = COMPOSITES["pool_input_grad"](pg, px, op, k, st, nopad, (1, 1))
    assert repr(got.tolist()) == repr(want.tolist())


def test_overlapping_or_padded_pool_windows_take_the_general_kernel(dev):
    x = _rand((2, 2, 8, 8), ember.float32, dev, 6)
    for k, st, pad, out in (((2, 2), (1, 1), ((0, 0), (0, 0)), 7), ((2, 2), (2, 2), ((1, 1), (1, 1)), 5)):
        g = _rand((2, 2, out, out), ember.float32, dev, 7)
        _, keys = _kernels(dev, lambda: rules.pool_input_grad(g, x, "max", k, st, pad, (1, 1)))
        assert [key[-1] for key in keys] == ["f64" if dev.rt.has_f64 else "f32"]
