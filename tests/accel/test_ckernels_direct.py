"""The C kernels' paths without packing or general loops: the GEMM's register tiles read straight from
A and B (few rows of A, or a short K, with B's rows contiguous) and the 2x2 max pool (stride 2, no
padding) forward and gradient.

The GEMM tiles sum each element over K in order, as the path they replace did, so a row computed
in a block of rows, or a column in a wide tile, has the bits it has computed alone; all match the
pure-Python Cpu within the matmul tolerance. The pools match the pure Cpu exactly. Bool results
keep the bytes C wrote (``cstorage.Bools``), which the next kernel reads and none writes.
"""
import math
import random

import pytest

import ember
import ember.nn.functional as F
from ember import composite
from ember.accel.autodiff import rules
from ember.backends.cpu import ckernels
from harness.check import assert_close

if not ckernels.available():
    pytest.fail("the C kernels are not built: python ext_c/build_ckernels.py", pytrace=False)

PURE = ember.Cpu(kernels="python")
C = ember.Cpu(kernels="c")
NAN = float("nan")


def _rand(shape, dtype, device, seed):
    rng = random.Random(seed)
    vals = [rng.uniform(-1, 1) for _ in range(math.prod(shape))]
    return ember.tensor(vals, dtype=dtype, device=device).reshape(shape)


# m (rows of A), n (columns of B: whole tiles, a vector, a half, a quarter, a scalar tail), k
GEMM_SHAPES = [(1, 5, 3), (3, 45, 25), (6, 892, 25), (9, 100, 16), (16, 136, 150), (17, 61, 64),
               (40, 77, 64), (150, 100, 16), (150, 16, 100), (5, 31, 300),
               (24, 40, 100)]  # the last one packed: its rows alone are not, and sum the same


@pytest.mark.parametrize("dtype", (ember.float32, ember.float64))
@pytest.mark.parametrize("m,n,k", GEMM_SHAPES)
def test_direct_gemm_matches_the_pure_cpu(m, n, k, dtype):
    a, b = _rand((m, k), dtype, C, m * 7 + k), _rand((k, n), dtype, C, n * 13 + k)
    tol = 3e-6 if dtype is ember.float32 else 1e-14
    got = a @ b
    want = a.to(PURE) @ b.to(PURE)
    bound = (a.to(PURE).abs() @ b.to(PURE).abs()).tolist()
    for gr, wr, br in zip(got.tolist(), want.tolist(), bound):
        for g, w, bd in zip(gr, wr, br):
            assert abs(g - w) <= tol * bd + tol, (m, n, k, g, w)


@pytest.mark.parametrize("m,n,k", GEMM_SHAPES)
def test_direct_gemm_rows_and_columns_have_the_bits_they_have_alone(m, n, k):
    a, b = _rand((m, k), ember.float32, C, m + k), _rand((k, n), ember.float32, C, n + 3 * k)
    full = (a @ b).tolist()
    for i in sorted({0, m // 2, m - 1}):
        assert (a[i:i + 1] @ b).tolist()[0] == full[i], ("row", i)
    for j0, j1 in ((0, min(n, 3)), (n - min(n, 2), n)):  # columns through the scalar tail, a strided B
        part = (a @ b[:, j0:j1]).tolist()
        assert part == [row[j0:j1] for row in full], ("columns", j0, j1)


# (m, n, k), m at least a register tile's rows: B with contiguous columns (x @ w.T) is packed by
# transposing blocks in registers (K blocks with a tail, a last panel narrower than a tile); a
# transposed A (dh.T @ x) is packed into the tiles' row panels first
LAYOUT_SHAPES = [(64, 128, 784), (24, 40, 100), (33, 70, 300), (9, 17, 45), (128, 100, 64), (40, 77, 64),
                 (16, 800, 20)]


@pytest.mark.parametrize("isa", ckernels.ISA_NAMES)
@pytest.mark.parametrize("dtype", (ember.float32, ember.float64))
@pytest.mark.parametrize("m,n,k", LAYOUT_SHAPES)
def test_gemm_operand_layouts_sum_alike(m, n, k, dtype, isa):
    """Packing only moves values: A or B stored transposed gives the bits of the contiguous product,
    on each instruction set (their tiles and transposes differ in width)."""
    if ckernels.ISA_NAMES.index(isa) > ckernels.native()[0].emb_best_isa():
        pytest.skip("this CPU lacks " + isa)
    first = ckernels.set_isa(isa)
    try:
        _layouts_sum_alike(m, n, k, dtype)
    finally:
        ckernels.set_isa(first)


def _layouts_sum_alike(m, n, k, dtype):
    at, bt = _rand((k, m), dtype, C, m + 5 * k).T, _rand((n, k), dtype, C, n + 11 * k).T
    assert at._data.strides == (1, m) and bt._data.strides == (1, k)  # views: the kernels read them so
    a, b = (ember.tensor(t.tolist(), dtype=dtype, device=C) for t in (at, bt))  # the same values, rows contiguous
    assert a._data.strides is None and b._data.strides is None
    want = (a @ b).tolist()
    for x, y, what in ((a, bt, "B transposed"), (at, b, "A transposed"), (at, bt, "both")):
        assert (x @ y).tolist() == want, what
    tol = 3e-6 if dtype is ember.float32 else 1e-14
    pure = (a.to(PURE) @ b.to(PURE)).tolist()
    bound = (a.to(PURE).abs() @ b.to(PURE).abs()).tolist()
    for gr, wr, br in zip(want, pure, bound):
        for g, w, bd in zip(gr, wr, br):
            assert abs(g - w) <= tol * bd + tol, (m, n, k, g, w)


@pytest.mark.parametrize("batch", (1, 6, 16, 40))
def test_linear_with_bias_on_the_direct_path(batch):
    """A bias is C's start: below 8 rows the products are added to it in order, from 8 rows their
    sum is (as the packed path adds it)."""
    x, w, bias = _rand((batch, 50), ember.float32, C, 1), _rand((20, 50), ember.float32, C, 2), \
        _rand((20,), ember.float32, C, 3)
    assert_close(F.linear(x, w, bias), F.linear(x.to(PURE), w.to(PURE), bias.to(PURE)), rtol=1e-5, atol=1e-5)


def test_lenet_convs_on_the_direct_path():
    for xs, ws, pad in (((3, 1, 28, 28), (6, 1, 5, 5), 2), ((3, 6, 14, 14), (16, 6, 5, 5), 0)):
        x, w, bias = _rand(xs, ember.float32, C, 4), _rand(ws, ember.float32, C, 5), \
            _rand((ws[0],), ember.float32, C, 6)
        got = F.conv2d(x, w, bias, padding=pad)
        assert_close(got, F.conv2d(x.to(PURE), w.to(PURE), bias.to(PURE), padding=pad), rtol=2e-5, atol=2e-5)


# 2x2 max pool, stride 2: even and odd sizes (the last row or column in no window)
POOL_SHAPES = [(2, 3, 8, 8), (1, 2, 7, 9), (2, 1, 28, 28), (1, 1, 3, 2)]


def _pool_input(shape, dtype, seed):
    rng = random.Random(seed)
    vals = [round(rng.uniform(-2, 2) * 2) / 2 for _ in range(math.prod(shape))]  # ties
    for q in range(0, len(vals), 11):
        vals[q] = NAN
    for q in range(3, len(vals), 13):
        vals[q] = -0.0 if q % 2 else 0.0
    return ember.tensor(vals, dtype=dtype, device=C).reshape(shape)


def _same(a, b):
    assert a.shape == b.shape
    for u, v in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()):
        assert (u == v and math.copysign(1, u) == math.copysign(1, v)) or (u != u and v != v), (u, v)


@pytest.mark.parametrize("dtype", (ember.float32, ember.float64))
@pytest.mark.parametrize("shape", POOL_SHAPES)
def test_max_pool_2x2_forward_and_gradient_equal_the_pure_cpu(shape, dtype):
    x = _pool_input(shape, dtype, sum(shape))
    y = F.max_pool2d(x, 2)
    _same(y, F.max_pool2d(x.to(PURE), 2))
    g = _rand(y.shape, dtype, C, 9)
    flat = g.reshape(-1).tolist()
    flat[1::5] = [-0.0] * len(flat[1::5])  # a -0 gradient lands as 0 + -0 = +0
    g = ember.tensor(flat, dtype=dtype, device=C).reshape(y.shape)
    args = ("max", (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
    got = rules.pool_input_grad(g, x, *args)
    _same(got, composite.COMPOSITES["pool_input_grad"](g.to(PURE), x.to(PURE), *args))


def test_max_pool_2x2_picks_the_first_max_and_the_first_nan():
    x = ember.tensor([[[[1.0, 2.0, NAN, 0.0], [2.0, 1.0, 5.0, NAN]]]], device=C)
    g = ember.tensor([[[[10.0, 20.0]]]], device=C)
    got = rules.pool_input_grad(g, x, "max", (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1))
    assert got.tolist() == [[[[0.0, 10.0, 20.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]]
    y = F.max_pool2d(x, 2).tolist()[0][0][0]
    assert y[0] == 2.0 and y[1] != y[1]


# -- bool results keep the bytes C wrote (cstorage.Bools): kernels read them, none writes them

def test_bool_results_are_lists_that_keep_their_bytes():
    from ember.backends.cpu.cstorage import Bools, native
    a = ember.tensor([1.0, -2.0, 3.0, 0.0], device=C)
    mask = a > 0
    assert type(mask._data.data) is Bools and mask._data.data == [True, False, True, False]
    assert list(native(mask._data)) == [1, 0, 1, 0]
    assert (mask.float()).tolist() == [1.0, 0.0, 1.0, 0.0]
    assert a.where(mask, 0.0).tolist() == [1.0, 0.0, 3.0, 0.0]


def test_writes_into_a_copy_of_a_bool_result_leave_it_unchanged():
    mask = ember.tensor([1.0, -2.0, 3.0, 0.0], device=C) > 0
    hit = mask.scatter(0, ember.tensor([1, 3], device=C), ember.tensor([True, True], device=C))
    assert hit.tolist() == [True, True, True, True]
    cut = mask.clone()
    cut[0:2] = False
    assert cut.tolist() == [False, False, True, False]
    assert mask.tolist() == [True, False, True, False]
    assert (mask.float()).tolist() == [1.0, 0.0, 1.0, 0.0]
