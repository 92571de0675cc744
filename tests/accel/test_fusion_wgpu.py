"""The WGSL compiler of fused kernels (accel/fusion/compile_wgsl.py) against the same ops run
unfused through the Wgpu primitives: exact where the conformance suite says EXACT (+ - * /, compares,
casts, where, integer ops), else within its tolerance. Kernels are built by hand from the IR.

They run wherever a wgpu adapter is found (in CI: Mesa's lavapipe), at small sizes.
"""
import math
import random
import struct

import pytest

from ember import dtypes
from harness import backends

wgpu_dev = dict(backends.available()).get("wgpu")
pytestmark = pytest.mark.skipif(wgpu_dev is None, reason="no wgpu device: %s" % dict(backends.unavailable()).get("wgpu"))

from ember.accel.fusion.ir import Map, MatmulKernel, Reduce, RowKernel  # noqa: E402

TOL = {"float32": (1e-6, 1e-7), "float64": (1e-12, 1e-15)}
COMPOSITE = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)}


@pytest.fixture(scope="module")
def dev():
    return wgpu_dev


@pytest.fixture(scope="module")
def comp(dev):
    from ember.accel.fusion.compile_wgsl import WgslCompiler
    return WgslCompiler(dev)


def _up(dev, values, shape, dtype):
    return dev.from_list(list(values), tuple(shape), getattr(dtypes, dtype if dtype != "bool" else "bool_"))


def _rand(n, seed=0, lo=-3.0, hi=3.0):
    rnd = random.Random(seed)
    return [rnd.uniform(lo, hi) for _ in range(n)]


def _bits(values, dtype):
    if dtype == "float32":
        return [struct.pack("<f", v) for v in values]
    if dtype == "float64":
        return [struct.pack("<d", v) for v in values]
    return list(values)


def _exact(dev, got, want, dtype):
    a, b = dev.to_list(got), dev.to_list(want)
    assert len(a) == len(b)
    bad = [(i, x, y) for i, (x, y) in enumerate(zip(_bits(a, dtype), _bits(b, dtype))) if x != y
           and not (dtype.startswith("float") and math.isnan(struct.unpack("<f" if dtype == "float32" else "<d", x)[0])
                    and math.isnan(struct.unpack("<f" if dtype == "float32" else "<d", y)[0]))]
    assert not bad, "%d of %d values differ, first %r" % (len(bad), len(a), bad[:3])


def _close(values, want, tol):
    rtol, atol = tol
    assert len(values) == len(want)
    for i, (x, y) in enumerate(zip(values, want)):
        if isinstance(y, float) and (math.isnan(y) or math.isinf(y)):
            assert x == y or (math.isnan(x) and math.isnan(y)), (i, x, y)
            continue
        assert abs(x - y) <= atol + rtol * abs(y), (i, x, y)


def _flat(rank, inputs, nodes, outputs):
    return RowKernel(rank, None, inputs, nodes, [Map()], [(o, False) for o in outputs])


# -- flat kernels -------------------------------------------------------------------------------------

def test_a_float32_chain_with_a_broadcast_row_is_the_unfused_chain_bit_for_bit(dev, comp):
    x = _up(dev, _rand(6 * 50), (6, 50), "float32")
    b = _up(dev, _rand(50, 1), (50,), "float32")
    nodes = [("load", "float32", 0), ("load", "float32", 1), ("binary", "float32", "mul", 0, 1),
             ("const", "float32", 0.25), ("binary", "float32", "add", 2, 3),
             ("binary", "float32", "sub", 4, 0), ("const", "float32", 3.0), ("binary", "float32", "div", 5, 6),
             ("unary", "float32", "sqrt", 7), ("unary", "float32", "abs", 5), ("binary", "float32", "maximum", 8, 9)]
    k = _flat(2, ["float32", "float32"], nodes, [10, 7])
    assert comp.supports(k)
    y, z = comp.run(k, (6, 50), [(x, (50, 1), 0), (b, (0, 1), 0)])
    bb = dev.expand(dev.reshape(b, (1, 50)), (6, 50))
    t = dev.binary("sub", dev.binary("add", dev.binary("mul", x, bb), 0.25), x)
    q = dev.binary("div", t, 3.0)
    _exact(dev, y, dev.binary("maximum", dev.unary("sqrt", q), dev.unary("abs", t)), "float32")
    _exact(dev, z, q, "float32")
    assert y.shape == (6, 50) and y.strides is None


def test_gelu_from_primitives_is_one_kernel_within_the_composite_tolerance(dev, comp):
    n = 3000
    xs = _rand(n, 2, -6, 6) + [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30]
    x = _up(dev, xs, (len(xs),), "float32")
    nodes = [("load", "float32", 0), ("const", "float32", math.sqrt(2.0)), ("binary", "float32", "div", 0, 1),
             ("unary", "float32", "erf", 2), ("const", "float32", 1.0), ("binary", "float32", "add", 3, 4),
             ("binary", "float32", "mul", 0, 5), ("const", "float32", 2.0), ("binary", "float32", "div", 6, 7)]
    k = _flat(1, ["float32"], nodes, [8])
    before = dev.queue_stats()["dispatches"]
    [y] = comp.run(k, (len(xs),), [(x, (1,), 0)])
    assert dev.queue_stats()["dispatches"] == before + 1
    ref = dev.binary("div", dev.binary("mul", x, dev.binary("add", dev.unary("erf", dev.binary("div", x, math.sqrt(2.0))), 1.0)), 2.0)
    _close(dev.to_list(y), dev.to_list(ref), COMPOSITE["float32"])
    # without the float32 fast paths, the fused chain is the unfused one bit for bit
    from ember.accel.fusion.compile_wgsl import WgslCompiler
    [y2] = WgslCompiler(dev, fast=False).run(k, (len(xs),), [(x, (1,), 0)])
    _exact(dev, y2, ref, "float32")


def test_erf_in_float32_is_within_the_conformance_tolerance(dev, comp):
    xs = [i / 997.0 for i in range(-5000, 5000)] + [3.91, 3.93, 0.999999, 1.0, 1e-20, -1e-20]
    x = _up(dev, xs, (len(xs),), "float32")
    k = _flat(1, ["float32"], [("load", "float32", 0), ("unary", "float32", "erf", 0)], [1])
    [y] = comp.run(k, (len(xs),), [(x, (1,), 0)])
    _close(dev.to_list(y), [math.erf(v) for v in dev.to_list(x)], TOL["float32"])


@pytest.mark.parametrize("c", [math.sqrt(2.0), 3.0, 0.1, -7.5, 1e-30, 1e30])
def test_erf_of_a_quotient_by_a_constant_is_within_tolerance_and_the_quotient_stays_exact(dev, comp, c):
    # erf(x / c) may read x * (1 / c) (no division); a held x / c is still the exact quotient
    xs = [i / 97.0 for i in range(-600, 600)] + [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3e38, 1e-38]
    x = _up(dev, xs, (len(xs),), "float32")
    k = _flat(1, ["float32"], [("load", "float32", 0), ("const", "float32", c), ("binary", "float32", "div", 0, 1),
                               ("unary", "float32", "erf", 2)], [2, 3])
    [q, y] = comp.run(k, (len(xs),), [(x, (1,), 0)])
    ref_q = dev.binary("div", x, c)
    _exact(dev, q, ref_q, "float32")
    _close(dev.to_list(y), dev.to_list(dev.unary("erf", ref_q)), TOL["float32"])


def test_division_by_constants_matches_the_unfused_division(dev, comp):
    xs = _rand(4000, 3, -100, 100) + [0.0, -0.0, 1e-40, -3e-39, 1e38, float("inf"), float("nan")]
    x = _up(dev, xs, (len(xs),), "float32")
    for c in (math.sqrt(2.0), 2.0, 3.0, 0.1, 7.3, -1e-3):
        k = _flat(1, ["float32"], [("load", "float32", 0), ("const", "float32", c), ("binary", "float32", "div", 0, 1)], [2])
        [y] = comp.run(k, (len(xs),), [(x, (1,), 0)])
        _exact(dev, y, dev.binary("div", x, c), "float32")


def test_comparisons_where_casts_and_int_ops_match_the_primitives(dev, comp):
    n = 257
    xs = _rand(n, 4, -50, 50)
    ints = [random.Random(5).randint(-300, 300) for _ in range(n)]
    x = _up(dev, xs, (n,), "float32")
    i = _up(dev, ints, (n,), "int32")
    nodes = [("load", "float32", 0), ("load", "int32", 1),
             ("const", "float32", 0.0), ("binary", "bool", "gt", 0, 2),           # 3: x > 0
             ("cast", "int8", 0),                                                 # 4: int8(x)
             ("const", "int32", 7), ("binary", "int32", "floordiv", 1, 5),        # 6: i // 7
             ("binary", "int32", "mod", 1, 5),                                    # 7: i % 7
             ("cast", "int32", 4), ("binary", "int32", "mul", 8, 6),              # 9: int8(x) * (i // 7)
             ("where", "int32", 3, 9, 7),                                         # 10
             ("cast", "float32", 10), ("binary", "float32", "mul", 11, 0),        # 12
             ("binary", "int32", "xor", 1, 5), ("const", "int32", 2), ("binary", "int32", "rshift", 13, 14),
             ("cast", "bool", 15), ("unary", "bool", "logical_not", 16),          # 17
             ("cast", "int64", 1), ("const", "int64", 3), ("binary", "int64", "pow", 18, 19),   # 20
             ("cast", "int8", 20)]
    k = _flat(1, ["float32", "int32"], nodes, [12, 17, 20, 21, 4])
    assert comp.supports(k)
    outs = comp.run(k, (n,), [(x, (1,), 0), (i, (1,), 0)])
    c3 = dev.binary("gt", x, 0.0)
    c4 = dev.cast(x, dtypes.int8)
    c6, c7 = dev.binary("floordiv", i, 7), dev.binary("mod", i, 7)
    c9 = dev.binary("mul", dev.cast(c4, dtypes.int32), c6)
    c12 = dev.binary("mul", dev.cast(dev.where(c3, c9, c7), dtypes.float32), x)
    c17 = dev.unary("logical_not", dev.cast(dev.binary("rshift", dev.binary("xor", i, 7), 2), dtypes.bool_))
    c20 = dev.binary("pow", dev.cast(i, dtypes.int64), 3)
    _exact(dev, outs[0], c12, "float32")
    assert dev.to_list(outs[1]) == dev.to_list(c17)
    assert dev.to_list(outs[2]) == dev.to_list(c20)
    assert dev.to_list(outs[3]) == dev.to_list(dev.cast(c20, dtypes.int8))
    assert dev.to_list(outs[4]) == dev.to_list(c4)
    assert outs[1].dtype is dtypes.bool_ and outs[3].dtype is dtypes.int8


def test_strided_inputs_offsets_and_permutes_take_the_general_kernel(dev, comp):
    base = _up(dev, _rand(4 * 6 * 5, 6), (4, 6, 5), "float32")
    # x = base.permute(2, 0, 1)[1:, :, 2:]: shape (4, 4, 4), strides (1, 30, 5), offset 1 + 10
    x = (base, (1, 30, 5), 11)
    v = _up(dev, _rand(4, 7), (4,), "float32")
    nodes = [("load", "float32", 0), ("load", "float32", 1), ("binary", "float32", "sub", 0, 1),
             ("unary", "float32", "exp", 2)]
    k = _flat(3, ["float32", "float32"], nodes, [3])
    [y] = comp.run(k, (4, 4, 4), [x, (v, (0, 1, 0), 0)])
    view = dev.slice(dev.permute(base, (2, 0, 1)), ((1, 5, 1), (0, 4, 1), (2, 6, 1)))
    vb = dev.expand(dev.reshape(v, (1, 4, 1)), (4, 4, 4))
    _exact(dev, y, dev.unary("exp", dev.binary("sub", view, vb)), "float32")


def test_unaligned_and_odd_sizes_use_the_element_kernel_and_the_vec4_tail(dev, comp):
    data = _rand(1031, 8)
    a = _up(dev, data, (1031,), "float32")
    k = _flat(1, ["float32"], [("load", "float32", 0), ("const", "float32", 1.5), ("binary", "float32", "mul", 0, 1)], [2])
    for off, n in ((0, 1031), (1, 1030), (4, 1027), (0, 3), (0, 1)):
        [y] = comp.run(k, (n,), [(a, (1,), off)])
        assert dev.to_list(y) == [struct.unpack("<f", struct.pack("<f", v * 1.5))[0]
                                  for v in dev.to_list(a)[off:off + n]]


@pytest.mark.parametrize("n", [1000, 1003, 4097, 9001])
def test_large_transcendental_kernels_take_more_vec4s_per_thread_and_keep_the_tail(dev, comp, n, monkeypatch):
    from ember.accel.fusion import compile_wgsl
    monkeypatch.setattr(compile_wgsl, "HEAVY_MIN", 1000)  # what 1M floats choose, at a test's size
    xs = _rand(n, 5, -4, 4)
    x = _up(dev, xs, (n,), "float32")
    k = _flat(1, ["float32"], [("load", "float32", 0), ("unary", "float32", "exp", 0), ("const", "float32", 1.0),
                               ("binary", "float32", "add", 1, 2)], [3])
    assert comp._vec(k, n) == compile_wgsl.VEC_HEAVY
    [y] = comp.run(k, (n,), [(x, (1,), 0)])
    _exact(dev, y, dev.binary("add", dev.unary("exp", x), 1.0), "float32")


def test_more_workgroups_than_one_dimension_allows_use_a_2d_grid(dev, comp):
    rt = dev.rt
    old = rt.max_groups
    rt.max_groups = 3  # forces gx * gy > max_groups
    try:
        n = 256 * 2 * 7 + 5  # the vec4 kernel: 256 threads x 2 vec4s per workgroup
        x = _up(dev, _rand(n, 9), (n,), "float32")
        k = _flat(1, ["float32"], [("load", "float32", 0), ("unary", "float32", "neg", 0)], [1])
        [y] = comp.run(k, (n,), [(x, (1,), 0)])
        _exact(dev, y, dev.unary("neg", x), "float32")
        # the unaligned kernel, one element per thread
        [y] = comp.run(k, (n - 1,), [(x, (1,), 1)])
        assert dev.to_list(y) == [-v for v in dev.to_list(x)[1:]]
        # the (rows, cols) grid: rows over y and z; a transposed input, then every other element
        m = _up(dev, _rand(11 * 7, 34), (11, 7), "float32")
        [y] = comp.run(k, (7, 11), [(m, (1, 7), 0)])
        assert dev.to_list(y) == [-v for v in dev.to_list(dev.permute(m, (1, 0)))]
        [y] = comp.run(k, (38,), [(m, (2,), 1)])
        assert dev.to_list(y) == [-v for v in dev.to_list(m)[1::2]]
        # columns beyond the grid's x: the general strided kernel
        [y] = comp.run(k, (n // 2,), [(x, (2,), 0)])
        assert dev.to_list(y) == [-v for v in dev.to_list(x)[0:n - 1:2]]
    finally:
        rt.max_groups = old


def test_float64_and_int64_chains(dev, comp):
    if not (dev.rt.has_f64 and dev.rt.has_i64):
        pytest.skip("adapter lacks shader-f64 / shader-int64")
    x = _up(dev, _rand(100, 10), (100,), "float64")
    j = _up(dev, list(range(-50, 50)), (100,), "int64")
    nodes = [("load", "float64", 0), ("load", "int64", 1), ("cast", "float64", 1),
             ("binary", "float64", "mul", 0, 2), ("const", "float64", 0.1), ("binary", "float64", "add", 3, 4),
             ("unary", "float64", "tanh", 5)]
    k = _flat(1, ["float64", "int64"], nodes, [6, 5])
    y, z = comp.run(k, (100,), [(x, (1,), 0), (j, (1,), 0)])
    t = dev.binary("add", dev.binary("mul", x, dev.cast(j, dtypes.float64)), 0.1)
    _exact(dev, z, t, "float64")
    _exact(dev, y, dev.unary("tanh", t), "float64")


def test_pipelines_are_cached_across_sizes_and_source_is_the_wgsl(dev, comp):
    # a kernel no other test builds (its constant is its own), so that the count below does not
    # depend on what ran before (the conformance suite's neg builds the plain one)
    k = _flat(2, ["float32"], [("load", "float32", 0), ("const", "float32", 0.4375), ("binary", "float32", "mul", 0, 1),
                               ("unary", "float32", "neg", 2)], [3])
    x = _up(dev, _rand(40, 11), (8, 5), "float32")
    comp.run(k, (8, 5), [(x, (5, 1), 0)])
    before = dev.queue_stats()["pipelines"]
    y = _up(dev, _rand(12, 12), (4, 3), "float32")
    comp.run(k, (4, 3), [(y, (3, 1), 0)])
    comp.run(k, (3, 4), [(y, (1, 3), 0)])  # strided: a new specialisation
    comp.run(k, (2, 3), [(y, (1, 3), 0)])
    assert dev.queue_stats()["pipelines"] == before + 1
    src = comp.source(k)
    assert "@compute" in src and "fn f(" in src


def test_supports_refuses_what_it_cannot_compile(dev, comp):
    assert not comp.supports(_flat(1, ["float16"], [("load", "float16", 0), ("unary", "float16", "neg", 0)], [1]))
    many = ["float32"] * 40
    nodes = [("load", "float32", k) for k in range(40)]
    assert not comp.supports(_flat(4, many, nodes, [0]))


# -- row kernels -----------------------------------------------------------------------------------

def _softmax_kernel(rank, dim):
    nodes = [("load", "float32", 0), ("row", "float32", 0), ("binary", "float32", "sub", 0, 1),
             ("unary", "float32", "exp", 2), ("row", "float32", 1), ("binary", "float32", "div", 3, 4)]
    return RowKernel(rank, dim, ["float32"], nodes, [Reduce("max", 0, "float32"), Reduce("sum", 3, "float32"), Map()],
                     [(5, False)])


def _softmax_ref(dev, x, dim):
    m = dev.reduce("max", x, dim)
    e = dev.unary("exp", dev.binary("sub", x, dev.expand(m, x.shape)))
    s = dev.reduce("sum", e, dim)
    return dev.binary("div", e, dev.expand(s, x.shape))


def test_softmax_along_the_last_dim_is_one_kernel(dev, comp):
    # rows held in registers by 64 or 256 threads (1 to 8 elements each), and read per phase (2100)
    for shape in ((5, 37), (3, 200), (3, 700), (1, 1), (2, 2048), (2, 2100)):
        x = _up(dev, _rand(shape[0] * shape[1], 13, -20, 20), shape, "float32")
        k = _softmax_kernel(2, 1)
        [y] = comp.run(k, shape, [(x, (shape[1], 1), 0)])
        _close(dev.to_list(y), dev.to_list(_softmax_ref(dev, x, 1)), COMPOSITE["float32"])


def test_softmax_along_a_middle_dim_and_of_a_permuted_offset_view(dev, comp):
    x = _up(dev, _rand(3 * 9 * 4, 14, -5, 5), (3, 9, 4), "float32")
    k = _softmax_kernel(3, 1)
    [y] = comp.run(k, (3, 9, 4), [(x, (36, 4, 1), 0)])
    _close(dev.to_list(y), dev.to_list(_softmax_ref(dev, x, 1)), COMPOSITE["float32"])
    # rows of a transposed, offset view: base (10, 8), view = base[1:, :].T -> (8, 9)
    base = _up(dev, _rand(80, 15, -5, 5), (10, 8), "float32")
    k2 = _softmax_kernel(2, 1)
    [y] = comp.run(k2, (8, 9), [(base, (1, 8), 8)])
    view = dev.permute(dev.slice(base, ((1, 10, 1), (0, 8, 1))), (1, 0))
    _close(dev.to_list(y), dev.to_list(_softmax_ref(dev, view, 1)), COMPOSITE["float32"])
    # a 1-d softmax: one row
    v = _up(dev, _rand(300, 16), (300,), "float32")
    [y] = comp.run(_softmax_kernel(1, 0), (300,), [(v, (1,), 0)])
    _close(dev.to_list(y), dev.to_list(_softmax_ref(dev, v, 0)), COMPOSITE["float32"])


def test_layer_norm_with_weight_bias_and_per_row_mean_and_rstd(dev, comp):
    rows, d = 6, 96
    x = _up(dev, _rand(rows * d, 17), (rows, d), "float32")
    w = _up(dev, _rand(d, 18), (d,), "float32")
    b = _up(dev, _rand(d, 19), (d,), "float32")
    nodes = [("load", "float32", 0),                                         # 0 x
             ("row", "float32", 0), ("const", "float32", float(d)), ("binary", "float32", "div", 1, 2),  # 3 mean
             ("binary", "float32", "sub", 0, 3), ("binary", "float32", "mul", 4, 4),                    # 5 (x-m)^2
             ("row", "float32", 1), ("binary", "float32", "div", 6, 2),                                 # 7 var
             ("const", "float32", 1e-5), ("binary", "float32", "add", 7, 8), ("unary", "float32", "rsqrt", 9),  # 10
             ("binary", "float32", "mul", 4, 10), ("load", "float32", 1), ("binary", "float32", "mul", 11, 12),
             ("load", "float32", 2), ("binary", "float32", "add", 13, 14)]                               # 15
    k = RowKernel(2, 1, ["float32"] * 3, nodes,
                  [Reduce("sum", 0, "float32"), Reduce("sum", 5, "float32"), Map()],
                  [(15, False), (3, True), (10, True)])
    assert comp.supports(k)
    y, mean, rstd = comp.run(k, (rows, d), [(x, (d, 1), 0), (w, (0, 1), 0), (b, (0, 1), 0)])
    assert mean.shape == (rows, 1) and rstd.shape == (rows, 1)
    m = dev.binary("div", dev.reduce("sum", x, 1), float(d))
    c = dev.binary("sub", x, dev.expand(m, (rows, d)))
    v = dev.binary("div", dev.reduce("sum", dev.binary("mul", c, c), 1), float(d))
    r = dev.unary("rsqrt", dev.binary("add", v, 1e-5))
    wb, bb = (dev.expand(dev.reshape(t, (1, d)), (rows, d)) for t in (w, b))
    ref = dev.binary("add", dev.binary("mul", dev.binary("mul", c, dev.expand(r, (rows, d))), wb), bb)
    _close(dev.to_list(mean), dev.to_list(m), TOL["float32"])
    _close(dev.to_list(rstd), dev.to_list(r), COMPOSITE["float32"])
    _close(dev.to_list(y), dev.to_list(ref), COMPOSITE["float32"])


def test_row_reductions_of_ints_and_nan_propagating_max(dev, comp):
    ints = [random.Random(20).randint(-1000, 1000) for _ in range(4 * 300)]
    i = _up(dev, ints, (4, 300), "int32")
    nodes = [("load", "int32", 0), ("row", "int32", 0), ("row", "int32", 1), ("binary", "int32", "sub", 1, 2),
             ("cast", "int64", 0), ("row", "int64", 2)]
    k = RowKernel(2, 1, ["int32"], nodes, [Reduce("max", 0, "int32"), Reduce("min", 0, "int32"),
                                           Reduce("sum", 4, "int64")], [(3, True), (5, True)])
    span, total = comp.run(k, (4, 300), [(i, (300, 1), 0)])
    assert dev.to_list(span) == [max(ints[r * 300:(r + 1) * 300]) - min(ints[r * 300:(r + 1) * 300]) for r in range(4)]
    assert dev.to_list(total) == [sum(ints[r * 300:(r + 1) * 300]) for r in range(4)]
    xs = _rand(2 * 50, 21)
    xs[70] = float("nan")
    x = _up(dev, xs, (2, 50), "float32")
    k = RowKernel(2, 1, ["float32"], [("load", "float32", 0), ("row", "float32", 0)],
                  [Reduce("max", 0, "float32")], [(1, True)])
    [mx] = comp.run(k, (2, 50), [(x, (50, 1), 0)])
    got = dev.to_list(mx)
    assert got[0] == max(dev.to_list(x)[:50]) and math.isnan(got[1])


@pytest.mark.parametrize("n", [5, 700])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_row_max_and_min_keep_the_sign_of_the_first_zero_as_the_primitive_does(dev, comp, n, dtype):
    """0 and -0 are equal: which one a row's max or min gives is the first in the row (the pure
    Cpu's answer), so the workgroup's tree decides ties by position (found by
    tests/accel/test_fusion_fuzz.py: the tree met -0 at position 4 before 0 at position 2). 700
    spreads a row over the threads' strides. The primitive is compared up to the sign of zero,
    which WGSL does not promise: NVIDIA's compiler makes its compare-and-select a min, which
    takes -0 over 0."""
    rows = []
    for r in range(6):
        row = [3.0 + k for k in range(n)]  # every other value is larger (max rows: negated)
        first, later = (0.0, -0.0) if r % 2 else (-0.0, 0.0)
        row[r % 3] = first
        row[n - 1] = later
        rows.append([-v for v in row] if r >= 3 else row)
    flat = [v for row in rows for v in row]
    x = _up(dev, flat, (6, n), dtype)
    for op in ("min", "max"):
        k = RowKernel(2, 1, [dtype], [("load", dtype, 0), ("row", dtype, 0)], [Reduce(op, 0, dtype)], [(1, True)])
        [got] = comp.run(k, (6, n), [(x, (n, 1), 0)])
        want = dev.reduce(op, x, 1)
        assert [v + 0.0 for v in dev.to_list(got)] == [v + 0.0 for v in dev.to_list(want)]  # -0 + 0 is 0
        signs = [math.copysign(1, v) for v in dev.to_list(got)]
        zero_rows = range(3) if op == "min" else range(3, 6)
        assert [signs[r] for r in zero_rows] == [math.copysign(1, [v for v in rows[r] if v == 0][0]) for r in zero_rows]
    nan_first = list(flat)
    nan_first[1], nan_first[n - 2] = float("nan"), float("-nan")  # the first nan is the result
    y = _up(dev, nan_first, (6, n), dtype)
    k = RowKernel(2, 1, [dtype], [("load", dtype, 0), ("row", dtype, 0)], [Reduce("max", 0, dtype)], [(1, True)])
    [got] = comp.run(k, (6, n), [(y, (n, 1), 0)])
    assert math.isnan(dev.to_list(got)[0])


def test_many_rows_use_a_2d_grid(dev, comp):
    rt = dev.rt
    old = rt.max_groups
    rt.max_groups = 4
    try:
        x = _up(dev, _rand(23 * 10, 22), (23, 10), "float32")
        [y] = comp.run(_softmax_kernel(2, 1), (23, 10), [(x, (10, 1), 0)])
        _close(dev.to_list(y), dev.to_list(_softmax_ref(dev, x, 1)), COMPOSITE["float32"])
    finally:
        rt.max_groups = old


# -- matmul + epilogue -------------------------------------------------------------------------------

def _gelu_nodes(start, x):
    """GELU of node ``x`` written from primitives, as nodes numbered from ``start``."""
    s = start
    return [("const", "float32", math.sqrt(2.0)), ("binary", "float32", "div", x, s),
            ("unary", "float32", "erf", s + 1), ("const", "float32", 1.0), ("binary", "float32", "add", s + 2, s + 3),
            ("binary", "float32", "mul", x, s + 4), ("const", "float32", 2.0), ("binary", "float32", "div", s + 5, s + 6)]


def _gelu_ref(dev, t):
    return dev.binary("div", dev.binary("mul", t, dev.binary("add", dev.unary("erf", dev.binary("div", t, math.sqrt(2.0))), 1.0)), 2.0)


@pytest.mark.parametrize("shape", [(2, 64, 48, 32), (1, 5, 7, 3), (3, 40, 36, 44)])
def test_batched_matmul_with_bias_and_gelu_epilogue(dev, comp, shape):
    batch, m, n, kk = shape
    a = _up(dev, _rand(batch * m * kk, 23, -1, 1), (batch, m, kk), "float32")
    b = _up(dev, _rand(batch * kk * n, 24, -1, 1), (batch, kk, n), "float32")
    bias = _up(dev, _rand(n, 25), (n,), "float32")
    nodes = [("acc", "float32"), ("load", "float32", 2), ("binary", "float32", "add", 0, 1)] + _gelu_nodes(3, 2)
    kern = MatmulKernel(3, 0, 1, "float32", ["float32"] * 3, nodes, [(10, False), (2, False)])
    assert comp.supports(kern)
    y, pre = comp.run(kern, (batch, m, n, kk), [(a, (m * kk, kk, 1), 0), (b, (kk * n, n, 1), 0), (bias, (0, 0, 1), 0)])
    t = dev.binary("add", dev.matmul(a, b), dev.expand(dev.reshape(bias, (1, 1, n)), (batch, m, n)))
    _close(dev.to_list(pre), dev.to_list(t), (1e-5, 1e-5))
    _close(dev.to_list(y), dev.to_list(_gelu_ref(dev, t)), (1e-5, 1e-5))
    assert y.shape == (batch, m, n)


def test_matmul_epilogue_with_a_broadcast_batch_and_transposed_operand(dev, comp):
    m, n, kk = 32, 20, 24
    a = _up(dev, _rand(2 * m * kk, 26, -1, 1), (2, m, kk), "float32")
    bt = _up(dev, _rand(n * kk, 27, -1, 1), (n, kk), "float32")  # b = bt.T, shared by both batches
    nodes = [("acc", "float32"), ("const", "float32", 0.0), ("binary", "float32", "maximum", 0, 1)]
    kern = MatmulKernel(3, 0, 1, "float32", ["float32", "float32"], nodes, [(2, False)])
    [y] = comp.run(kern, (2, m, n, kk), [(a, (m * kk, kk, 1), 0), (bt, (0, 1, kk), 0)])
    b = dev.expand(dev.reshape(dev.permute(bt, (1, 0)), (1, kk, n)), (2, kk, n))
    _close(dev.to_list(y), dev.to_list(dev.binary("maximum", dev.matmul(a, b), 0.0)), (1e-5, 1e-5))


def test_the_tiled_kernel_without_epilogue_is_the_plain_matmul(dev, comp):
    m, n, kk = 64, 64, 64
    a = _up(dev, _rand(m * kk, 28, -1, 1), (m, kk), "float32")
    b = _up(dev, _rand(kk * n, 29, -1, 1), (kk, n), "float32")
    kern = MatmulKernel(2, 0, 1, "float32", ["float32", "float32"], [("acc", "float32")], [(0, False)])
    [y] = comp.run(kern, (m, n, kk), [(a, (kk, 1), 0), (b, (n, 1), 0)])
    _exact(dev, y, dev.matmul(a, b), "float32")


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_a_transposed_operand_is_read_in_place_by_the_tiles(dev, comp, which):
    # x @ W.T (a Linear's forward), g.T @ x (its weight gradient): the matmul primitive reads the
    # transposed operand in place with the tiled kernel; the fused product does the same, so the
    # bits agree, and neither copies it
    m, n, kk = 16, 64, 320
    at = _up(dev, _rand(m * kk, 40, -1, 1), (kk, m), "float32")
    bt = _up(dev, _rand(kk * n, 41, -1, 1), (n, kk), "float32")
    a_in = (at, (1, m), 0) if which in ("a", "both") else None
    b_in = (bt, (1, kk), 0) if which in ("b", "both") else None
    a = dev.permute(at, (1, 0)) if a_in else dev._contiguous(dev.permute(at, (1, 0)))
    b = dev.permute(bt, (1, 0)) if b_in else dev._contiguous(dev.permute(bt, (1, 0)))
    a_in = a_in or (a, (kk, 1), 0)
    b_in = b_in or (b, (n, 1), 0)
    nodes = [("acc", "float32"), ("const", "float32", 0.0), ("binary", "float32", "maximum", 0, 1)]
    kern = MatmulKernel(2, 0, 1, "float32", ["float32", "float32"], nodes, [(2, False)])
    def dispatched(inputs):
        dev.synchronize()
        count = dev.queue_stats()["dispatches"]
        [y] = comp.run(kern, (m, n, kk), inputs)
        return y, dev.queue_stats()["dispatches"] - count
    _, rows = dispatched([(dev._contiguous(a), (kk, 1), 0), (dev._contiguous(b), (n, 1), 0)])
    before = set(dev.rt._pipelines)
    y, count = dispatched([a_in, b_in])
    assert count == rows  # what the operands stored by rows take: no copy
    new = [k for k in set(dev.rt._pipelines) - before if type(k) is tuple]
    assert not any(k[:2] == ("fusion", kern.key) or "direct" in str(k) for k in new), new
    _exact(dev, y, dev.binary("maximum", dev.matmul(a, b), 0.0), "float32")


def test_a_fused_product_is_tuned_with_its_epilogue_in(dev, comp, autotune, monkeypatch):
    # each candidate tile is timed running the fused kernel itself (a tile can win the plain
    # product and lose once the epilogue's registers are taken); each epilogue is its own tuning,
    # made once, and the chosen tile's result is the primitives' bit for bit
    from ember.accel.wgpu import matmul_kernels as mk
    few = [v for v in mk.candidates(dev, dtypes.float32) if v.name in ("64x64x8_4x4", "32x32x8_4x4", "128x128x8_8x8")]
    monkeypatch.setattr(mk, "candidates", lambda dev, dtype: few)  # three of them: lavapipe compiles slowly
    m, n, kk = 48, 32, 24  # enough work for the tiles (mk.eligible)
    a = _up(dev, _rand(m * kk, 33, -1, 1), (m, kk), "float32")
    b = _up(dev, _rand(kk * n, 34, -1, 1), (kk, n), "float32")
    relu = [("acc", "float32"), ("const", "float32", 0.0), ("binary", "float32", "maximum", 0, 1)]
    neg = [("acc", "float32"), ("unary", "float32", "neg", 0)]
    want = dev.matmul(a, b)
    count = len(autotune.tunings)
    for nodes, ref in ((relu, dev.binary("maximum", want, 0.0)), (neg, dev.unary("neg", want))):
        kern = MatmulKernel(2, 0, 1, "float32", ["float32", "float32"], nodes, [(len(nodes) - 1, False)])
        for _ in range(2):
            [y] = comp.run(kern, (m, n, kk), [(a, (kk, 1), 0), (b, (n, 1), 0)])
            _exact(dev, y, ref, "float32")
    keys = [key for key, _ in autotune.tunings[count:]]
    assert len(keys) == 2 and keys[0] != keys[1] and all("|matmul+" in key for key in keys), keys
    assert autotune.cached(dev.rt.label, "matmul+", dtypes.float32, (m, n, kk)) in {"64x64x8_4x4", "32x32x8_4x4", "128x128x8_8x8"}
    names = {v.name for v in few}
    assert len(names) == 3
    assert all(set(times) == names and any(t is not None for t in times.values())
               for _, times in autotune.tunings[count:])


def test_split_k_runs_the_epilogue_in_its_finalize_step(dev, comp):
    m, n, kk = 32, 64, 2048  # few output tiles, long K: the product is split along K
    a = _up(dev, _rand(m * kk, 30, -1, 1), (m, kk), "float32")
    b = _up(dev, _rand(kk * n, 31, -1, 1), (kk, n), "float32")
    bias = _up(dev, _rand(n, 32), (n,), "float32")
    nodes = [("acc", "float32"), ("load", "float32", 2), ("binary", "float32", "add", 0, 1)]
    kern = MatmulKernel(2, 0, 1, "float32", ["float32"] * 3, nodes, [(2, False)])
    [y] = comp.run(kern, (m, n, kk), [(a, (kk, 1), 0), (b, (n, 1), 0), (bias, (0, 1), 0)])
    assert any(type(key) is tuple and key[0] == "finalize" and type(key[1]) is tuple and kern.key in key[1]
               for key in dev.rt._pipelines)
    t = dev.binary("add", dev.matmul(a, b), dev.expand(dev.reshape(bias, (1, n)), (m, n)))
    _close(dev.to_list(y), dev.to_list(t), (1e-5, 1e-5))


def test_inputs_sharing_a_page_with_the_outputs_bind_read_write(dev):
    from ember.accel import Wgpu
    from ember.accel.fusion.compile_wgsl import WgslCompiler
    paged = Wgpu(memory="pages")
    comp = WgslCompiler(paged)
    x = _up(paged, _rand(64, 33), (64,), "float32")
    k = _flat(1, ["float32"], [("load", "float32", 0), ("unary", "float32", "neg", 0)], [1])
    [y] = comp.run(k, (64,), [(x, (1,), 0)])
    assert y.block.buffer is x.block.buffer
    assert paged.to_list(y) == [-v for v in paged.to_list(x)]
