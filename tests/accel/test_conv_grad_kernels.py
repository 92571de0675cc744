"""The C Cpu's direct conv and pool gradients and its reductions over several dims, against the
composites they replace (``conv_input_grad``, ``conv_weight_grad``, ``pool_input_grad``,
``reduce_dims``: their bodies are the previous path) and the pure-Python Cpu.

Conv gradients accumulate in the input dtype through the GEMM, so they match within the conv
tolerance; pool gradients match exactly (the same window order, the same sums); max/min over
several dims exactly, sums within the conformance suite's sum tolerance.
"""
import math
import random

import pytest

import ember
import ember.nn.functional as F
from ember import composite
from ember.accel.autodiff import Autodiff
from ember.accel.autodiff import rules
from ember.backends.cpu import ckernels
from ember.reduction import reduce_dims
from harness.check import assert_close

pytestmark = pytest.mark.skipif(not ckernels.available(), reason="the C kernels are not built")

PURE = ember.Cpu(kernels="python")
C = ember.Cpu(kernels="c") if ckernels.available() else None
BODY = composite.COMPOSITES
NAN = float("nan")
SUM_TOL = (1e-5, 1e-5)  # tests/conformance/test_conformance_reduce.py: sums over several dims


def _rand(shape, dtype, device, seed, ties=False):
    rng = random.Random(seed)
    vals = [rng.uniform(-1, 1) for _ in range(math.prod(shape))]
    if ties:  # a few distinct values, so windows hold equal maxima
        vals = [round(v * 2) / 2 for v in vals]
    return ember.tensor(vals, dtype=dtype, device=device).reshape(shape)


@pytest.fixture(params=ckernels.ISA_NAMES)
def isa(request):
    """Each instruction set the CPU has, in turn (the vector paths differ in width)."""
    if ckernels.ISA_NAMES.index(request.param) > ckernels.native()[0].emb_best_isa():
        pytest.skip("this CPU lacks " + request.param)
    first = ckernels.set_isa(request.param)
    yield request.param
    ckernels.set_isa(first)


def _same(a, b):
    """Equal shapes and values, nan matching nan."""
    assert a.shape == b.shape
    for u, v in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()):
        assert u == v or (u != u and v != v), (u, v)


# x shape, w shape, stride, padding ((before, after) per dim), dilation, groups
CONV_CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), ((1, 0), (2, 1)), (1, 2), 2),
    ((1, 6, 11, 10), (6, 1, 3, 3), (2, 3), ((0, 0), (1, 1)), (2, 1), 6),
    ((3, 2, 5, 13), (2, 2, 1, 4), (1, 2), ((0, 0), (3, 3)), (1, 3), 1),
    ((1, 1, 4, 4), (1, 1, 4, 4), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 1, 28, 28), (6, 1, 5, 5), (1, 1), ((2, 2), (2, 2)), (1, 1), 1),  # LeNet's first conv
    ((4, 6, 14, 14), (16, 6, 5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),  # and its second
    ((3, 2, 10), (4, 2, 3), (2,), ((1, 2),), (2,), 1),  # 1-D
    ((1, 4, 9), (2, 2, 2), (3,), ((0, 1),), (1,), 2),
]
TOL = {ember.float32: (2e-5, 2e-5), ember.float64: (1e-12, 1e-12)}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CONV_CASES, ids=[str(c[0]) + str(c[2]) for c in CONV_CASES])
def test_conv_gradients_match_the_composites(case, dtype):
    xs, ws, st, pad, dil, groups = case
    x, w = _rand(xs, dtype, C, 1), _rand(ws, dtype, C, 2)
    out_shape = C.conv(x._data, w._data, st, pad, dil, groups).shape
    g = _rand(out_shape, dtype, C, 3)
    gx = rules.conv_input_grad(g, w, xs, st, pad, dil, groups)
    gw = rules.conv_weight_grad(x, g, ws, st, pad, dil, groups)
    rtol, atol = TOL[dtype]
    # the previous path on the C Cpu, and the pure Cpu's (the reference)
    pure = [t.to(PURE) for t in (x, w, g)]
    for dev_args in ((x, w, g), pure):
        px, pw, pg = dev_args
        assert_close(gx, BODY["conv_input_grad"](pg, pw, xs, st, pad, dil, groups), rtol, atol)
        assert_close(gw, BODY["conv_weight_grad"](px, pg, ws, st, pad, dil, groups), rtol, atol)
    assert gx.dtype is dtype and gw.dtype is dtype and gx.shape == xs and gw.shape == ws


def test_conv_gradients_batch_one_and_threads():
    """Batch 1 and a batch split over threads (the weight gradient's partial sums) agree."""
    xs, ws = (12, 8, 30, 30), (16, 8, 3, 3)  # enough work for 3 threads
    x, w = _rand(xs, ember.float64, C, 4), _rand(ws, ember.float64, C, 5)
    g = _rand((12, 16, 28, 28), ember.float64, C, 6)
    args = ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    before = ckernels.set_num_threads(1)
    try:
        one = [rules.conv_weight_grad(x, g, ws, *args), rules.conv_input_grad(g, w, xs, *args)]
        ckernels.set_num_threads(3)
        many = [rules.conv_weight_grad(x, g, ws, *args), rules.conv_input_grad(g, w, xs, *args)]
    finally:
        ckernels.set_num_threads(before)
    for a, b in zip(one, many):
        assert_close(a, b, 1e-12, 1e-12)
    first = rules.conv_input_grad(g.narrow(0, 0, 1), w, (1,) + xs[1:], *args)
    assert_close(first, one[1].narrow(0, 0, 1), 1e-12, 1e-12)
    assert_close(one[0], BODY["conv_weight_grad"](x, g, ws, *args), 1e-12, 1e-12)


# batches of 16 images or more take the batch-in-lanes kernels (ext_c/k_conv_lanes.c): a batch that is
# no multiple of the vector, strides (the forward and input gradient per position; the weight gradient
# keeps the per-image path), dilation, groups, uneven padding, 1-D
LANES_CASES = [
    ((16, 2, 6, 5), (3, 2, 3, 2), (1, 1), ((1, 0), (2, 1)), (1, 1), 1),
    ((17, 4, 7, 6), (6, 2, 3, 3), (1, 1), ((1, 1), (1, 1)), (2, 1), 2),
    ((19, 3, 8, 7), (2, 3, 2, 3), (2, 3), ((0, 1), (1, 1)), (1, 2), 1),
    ((21, 2, 9), (4, 2, 3), (1,), ((2, 0),), (2,), 1),
    ((16, 2, 5, 6), (13, 2, 2, 3), (1, 1), ((0, 1), (1, 0)), (1, 1), 1),  # 13 = 6 + 6 + 1 output rows
]


def _conv(dev, x, w, *args):
    """The conv primitive on ``dev`` (its padding a (before, after) pair per dim), as a tensor."""
    y = dev.conv(x._data, w._data, *args)
    return ember.Tensor(y, y.shape, x.dtype, dev)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", LANES_CASES, ids=[str(c[0]) + str(c[2]) for c in LANES_CASES])
def test_conv_batch_in_lanes_matches_the_pure_cpu(case, dtype, isa):
    xs, ws, st, pad, dil, groups = case
    x, w = _rand(xs, dtype, C, 21), _rand(ws, dtype, C, 22)
    y = _conv(C, x, w, st, pad, dil, groups)
    g = _rand(y.shape, dtype, C, 23)
    px, pw, pg = (t.to(PURE) for t in (x, w, g))
    rtol, atol = TOL[dtype]
    assert_close(y, _conv(PURE, px, pw, st, pad, dil, groups), rtol, atol)
    assert_close(rules.conv_input_grad(g, w, xs, st, pad, dil, groups),
                 BODY["conv_input_grad"](pg, pw, xs, st, pad, dil, groups), rtol, atol)
    assert_close(rules.conv_weight_grad(x, g, ws, st, pad, dil, groups),
                 BODY["conv_weight_grad"](px, pg, ws, st, pad, dil, groups), rtol, atol)


def test_conv2d_with_bias_batch_in_lanes(isa):
    """ember.nn's fused float32 conv2d (bias added as the layout is put back) on 18 images."""
    x, w, b = _rand((18, 3, 9, 8), ember.float32, C, 27), _rand((5, 3, 3, 3), ember.float32, C, 28), \
        _rand((5,), ember.float32, C, 29)
    for args in (((1, 1), (1, 2), (1, 1)), ((2, 1), (0, 1), (1, 2))):
        want = F.conv2d(x.to(PURE), w.to(PURE), b.to(PURE), *args)
        assert_close(F.conv2d(x, w, b, *args), want, *TOL[ember.float32])


def _within_sum_rounding(actual, expected, abs_sum, factor=16):
    def flat(v):
        return [u for x in v for u in flat(x)] if type(v) is list else [v]
    for i, (a, e, m) in enumerate(zip(flat(actual.tolist()), flat(expected.tolist()), flat(abs_sum.tolist()))):
        assert abs(a - e) <= 1e-5 + factor * 2.0 ** -24 * m, (i, a, e, m)


def test_conv_batch_in_lanes_equals_image_by_image():
    """A batch that splits into two groups of images (too large for one group's workspace) on one
    thread, and into one group per thread on two, against the same images one at a time (the
    per-image kernels)."""
    xs, ws = (37, 4, 36, 36), (5, 4, 3, 3)
    x, w = _rand(xs, ember.float32, C, 24), _rand(ws, ember.float32, C, 25)
    args = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    g = _rand((37, 5, 36, 36), ember.float32, C, 26)
    one = [(x.narrow(0, b, 1), g.narrow(0, b, 1)) for b in range(37)]
    want_y = ember.cat([_conv(C, xb, w, *args) for xb, _ in one], 0)
    want_gx = ember.cat([rules.conv_input_grad(gb, w, (1,) + xs[1:], *args) for _, gb in one], 0)
    want_gw = rules.conv_weight_grad(one[0][0], one[0][1], ws, *args)
    for xb, gb in one[1:]:
        want_gw = want_gw + rules.conv_weight_grad(xb, gb, ws, *args)
    bound_gw = rules.conv_weight_grad(x.abs(), g.abs(), ws, *args)
    before = ckernels.set_num_threads(1)
    try:
        for threads in (1, 2):
            ckernels.set_num_threads(threads)
            assert_close(_conv(C, x, w, *args), want_y, 2e-5, 2e-5)
            assert_close(rules.conv_input_grad(g, w, xs, *args), want_gx, 2e-5, 2e-5)
            # a sum over 37*36*36 products in another order (8 lanes with AVX2, 16 with AVX-512):
            # within a float32 sum's rounding, 2^-24 times a small factor times the sum of
            # |products| (a 1e-4 bound alone failed a cancelling output on an AVX2 host)
            _within_sum_rounding(rules.conv_weight_grad(x, g, ws, *args), want_gw, bound_gw)
    finally:
        ckernels.set_num_threads(before)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
def test_training_step_gradients_match_the_pure_cpu(dtype):
    """conv2d (bias, stride 2, padding, dilation, groups) + max/avg pool + a bias sum, through
    Autodiff: the C Cpu's gradients equal the pure Cpu's."""
    def grads(dev):
        ad = Autodiff(dev)
        x = _rand((2, 4, 11, 10), dtype, dev, 7).to(ad).requires_grad_()
        w = _rand((6, 2, 3, 3), dtype, dev, 8).to(ad).requires_grad_()
        b = _rand((6,), dtype, dev, 9).to(ad).requires_grad_()
        y = F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
        y = F.max_pool2d(y, 2, stride=1) + F.avg_pool2d(y, 2, stride=1, padding=1).narrow(2, 0, 5).narrow(3, 0, 9)
        loss = (y * y).sum()
        gs = loss.backward()
        return [t.grad(gs) for t in (x, w, b)]
    rtol, atol = TOL[dtype]
    for got, want in zip(grads(C), grads(PURE)):
        assert_close(got, want, rtol, atol)


# x shape, kernel, stride, padding, dilation (avg pools take dilation 1)
POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((2, 2, 7, 9), (3, 3), (2, 1), ((1, 1), (1, 1)), (1, 1)),
    ((1, 2, 9, 9), (3, 2), (1, 2), ((1, 1), (0, 0)), (2, 3)),
    ((1, 1, 5, 5), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ((3, 2, 11), (3,), (2,), ((1, 1),), (2,)),
]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=[str(c[0]) + str(c[1]) for c in POOL_CASES])
def test_pool_gradient_equals_the_composite_exactly(case, op, dtype):
    """Ties (which of equal maxima gets the gradient) and sums come out as the composite's."""
    xs, k, st, pad, dil = case
    if op == "avg":
        dil = (1,) * len(k)
    x = _rand(xs, dtype, C, 10, ties=True)
    g = _rand(C.pool(op, x._data, k, st, pad, dil).shape, dtype, C, 11)
    got = rules.pool_input_grad(g, x, op, k, st, pad, dil)
    _same(got, BODY["pool_input_grad"](g, x, op, k, st, pad, dil))
    _same(got, BODY["pool_input_grad"](g.to(PURE), x.to(PURE), op, k, st, pad, dil))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("ow", [3, 4, 5, 7, 8, 14, 16, 17, 33])
def test_max_pool_2x2_gradient_by_vector_equals_the_composite(ow, dtype, isa):
    """The 2x2 max pool's gradient (float32 by vectors of 16, 8 or 4 windows, a row's last vector
    overlapping): rows of every width, an odd row and column left over, ties, nans and -0.0."""
    for h, w in ((4, 2 * ow), (5, 2 * ow + 1)):
        x = _rand((2, 3, h, w), dtype, C, 30 + ow, ties=True)
        flat = x.reshape(-1).tolist()
        for at in range(0, len(flat), 7):  # nans in some windows, two in some
            flat[at] = NAN
        flat[1] = -0.0
        x = ember.tensor(flat, dtype=dtype, device=C).reshape(x.shape)
        g = _rand((2, 3, h // 2, ow), dtype, C, 40 + ow)
        g = ember.where(ember.arange(g.numel(), device=C).reshape(g.shape) % 5 == 0, -0.0, g)
        args = ("max", (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
        got = rules.pool_input_grad(g, x, *args)
        want = BODY["pool_input_grad"](g.to(PURE), x.to(PURE), *args)
        _same(got, want)
        signs = [math.copysign(1, v) for v in got.reshape(-1).tolist()]
        assert signs == [math.copysign(1, v) for v in want.reshape(-1).tolist()]


def test_max_pool_gradient_picks_the_first_of_ties_and_the_first_nan():
    x = ember.tensor([[[[1.0, 3.0, 3.0, NAN], [3.0, 2.0, NAN, 5.0]]]], device=C)
    g = ember.tensor([[[[10.0, 20.0]]]], device=C)
    got = rules.pool_input_grad(g, x, "max", (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
    assert got.tolist() == [[[[0.0, 10.0, 0.0, 20.0], [0.0, 0.0, 0.0, 0.0]]]]
    _same(got, BODY["pool_input_grad"](g.to(PURE), x.to(PURE), "max", (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)))


def test_max_pool_gradient_dropped_where_a_pad_wins():
    """Windows of -inf values whose first element is a pad (-inf too): the pad takes the gradient,
    which is dropped; only the window whose max is the 1.0 passes its gradient on."""
    x = ember.tensor([[[[-math.inf, -math.inf], [-math.inf, 1.0]]]], device=C)
    g = ember.ones(1, 1, 2, 2, device=C)
    got = rules.pool_input_grad(g, x, "max", (2, 2), (1, 1), ((1, 0), (1, 0)), (1, 1))
    _same(got, BODY["pool_input_grad"](g.to(PURE), x.to(PURE), "max", (2, 2), (1, 1), ((1, 0), (1, 0)), (1, 1)))
    assert got.tolist() == [[[[0.0, 0.0], [0.0, 1.0]]]]


REDUCE_SHAPES = [((4, 5, 6, 7), (0, 2, 3)), ((4, 5, 6, 7), (0, 1)), ((4, 5, 6, 7), (1, 3)),
                 ((3, 1, 4, 1, 5), (1, 2, 4)), ((2, 3, 4), (0, 1, 2)), ((6, 1, 9), (0, 2)),
                 ((0, 3, 4), (0, 2)), ((64, 6, 28, 28), (0, 2, 3))]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("case", REDUCE_SHAPES, ids=[str(c) for c in REDUCE_SHAPES])
def test_reduce_over_several_dims(case, op, dtype):
    shape, dims = case
    if op != "sum" and 0 in shape:
        return  # the frontend rejects an empty max/min
    x = _rand(shape, dtype, C, 12)
    got = x.sum(dims, keepdim=True) if op == "sum" else reduce_dims(x, op, dims)
    want = BODY["reduce_dims"](x.to(PURE), op, dims)
    if op == "sum":
        assert_close(got, want, *SUM_TOL)
    else:
        _same(got, want)
    assert got.dtype is dtype


def test_reduce_over_several_dims_nan_and_views():
    x = _rand((3, 4, 5), ember.float32, C, 13)
    x = ember.where(ember.arange(60, device=C).reshape(3, 4, 5) == 17, NAN, x)
    _same(reduce_dims(x, "max", (0, 2)), BODY["reduce_dims"](x.to(PURE), "max", (0, 2)))
    v = x.permute(2, 0, 1)[:, ::2]  # strided: the kernel reads a contiguous copy
    assert_close(v.sum((0, 2)), BODY["reduce_dims"](v.to(PURE), "sum", (0, 2)).reshape(2), *SUM_TOL)
    assert math.isnan(x.min().item())
    _same(x.narrow(0, 0, 1).max(), x.to(PURE).narrow(0, 0, 1).max())


def test_other_dtypes_and_devices_keep_the_per_dim_path():
    i = ember.arange(24, device=C).reshape(2, 3, 4)
    assert i.sum((0, 2)).tolist() == [60, 92, 124]
    assert C.reduce_dims("sum", i._data, (0, 2)) is None
    assert C.reduce_dims("prod", _rand((2, 3), ember.float32, C, 1)._data, (0, 1)) is None
    # the pure Cpu resolves no replacement: the composites' bodies run there
    assert composite.resolve(type(PURE), "reduce_dims")[0] is None
    assert composite.resolve(type(PURE), "conv_input_grad")[0] is None
    assert composite.resolve(type(C), "conv_input_grad")[0] is not None


def test_bad_input_still_reports_as_before():
    ad = Autodiff(C)
    x = _rand((1, 2, 5, 5), ember.float32, C, 1).to(ad).requires_grad_()
    w = _rand((3, 2, 3, 3), ember.float32, C, 2).to(ad).requires_grad_()
    with pytest.raises(ember.ShapeError, match="conv2d: weight expects 4 input channels"):
        F.conv2d(x, _rand((4, 2, 3, 3), ember.float32, C, 2).to(ad), groups=2)
    with pytest.raises(ember.ArgumentError, match="max_pool2d: padding must be between"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ember.IndexOutOfRange, match="sum: dim 7 is out of range"):
        x.sum((0, 7))
    F.conv2d(x, w).sum().backward()  # the valid call still runs


# -- Wgpu's pool gradient kernel (lavapipe in CI) ------------------------------------------------------

def _wgpu():
    try:
        from ember.accel import Wgpu
        return Wgpu()
    except (ImportError, RuntimeError) as e:
        pytest.skip("no Wgpu device: %s" % e)


@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES, ids=[str(c[0]) + str(c[1]) for c in POOL_CASES])
def test_wgpu_pool_gradient_equals_the_reference(case, op):
    gpu = _wgpu()
    xs, k, st, pad, dil = case
    if op == "avg":
        dil = (1,) * len(k)
    dts = [ember.float32] + ([ember.float64] if gpu.rt.has_f64 else [])
    for dtype in dts:
        x = _rand(xs, dtype, PURE, 14, ties=True)
        g = _rand(PURE.pool(op, x._data, k, st, pad, dil).shape, dtype, PURE, 15)
        assert composite.resolve(type(gpu), "pool_input_grad")[0] is not None
        got = rules.pool_input_grad(g.to(gpu), x.to(gpu), op, k, st, pad, dil)
        _same(got.to(PURE), BODY["pool_input_grad"](g, x, op, k, st, pad, dil))


def test_wgpu_pool_gradient_nan_pads_and_views():
    gpu = _wgpu()
    x = ember.tensor([[[[1.0, 3.0, 3.0, NAN], [3.0, 2.0, NAN, 5.0]]]])
    g = ember.tensor([[[[10.0, 20.0]]]])
    args = ("max", (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
    got = rules.pool_input_grad(g.to(gpu), x.to(gpu), *args)
    assert got.tolist() == [[[[0.0, 10.0, 0.0, 20.0], [0.0, 0.0, 0.0, 0.0]]]]
    x = ember.tensor([[[[-math.inf, -math.inf], [-math.inf, 1.0]]]])
    got = rules.pool_input_grad(ember.ones(1, 1, 2, 2, device=gpu), x.to(gpu), "max", (2, 2), (1, 1),
                                ((1, 0), (1, 0)), (1, 1))
    assert got.tolist() == [[[[0.0, 0.0], [0.0, 1.0]]]]
    # strided operands: a permuted input and an expanded gradient
    xp = _rand((6, 6, 2, 1), ember.float32, PURE, 16).permute(3, 2, 0, 1)
    gp = ember.tensor([[[[1.0, 2.0, 3.0]]]]).expand(1, 2, 3, 3)
    args = ("max", (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
    _same(rules.pool_input_grad(gp.to(gpu), xp.to(gpu), *args).to(PURE), BODY["pool_input_grad"](gp, xp, *args))
