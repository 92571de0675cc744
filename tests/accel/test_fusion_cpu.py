"""The Cpu fusion compilers (``Interpreter``, ``CCompiler``) against the unfused pure Cpu.

Each case builds a kernel by hand (fusion_kit.Graph), runs it through every compiler and compares
each output with the same node list run op by op through ``Cpu(kernels="python")`` primitives:
bit for bit (nan matches nan, the sign of zero counts) for chains of + - * /, sqrt, compares, casts,
where and integer ops, and within the conformance suite's float32 tolerance where a transcendental
op (exp, erf, ...) may come from a fast approximation.
"""
import os
import random
import tempfile

import pytest

from ember.accel.fusion import ir
from ember.accel.fusion.interpret import Interpreter
from ember.errors import ArgumentError, DTypeError, ShapeError

from fusion_kit import Graph, K, array, assert_same, item, reference

NAN, INF = float("nan"), float("inf")
TRANSCENDENTAL = (1e-6, 1e-7)  # conformance_kit.TOLERANCE["float32"]
COMPOSITE = (1e-5, 1e-6)  # conformance_kit.COMPOSITE["float32"]: a chain that cancels (1 + erf)
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember-fusion-test-"))


def _compilers():
    out = [("interpreter", Interpreter())]
    try:
        from ember.accel.fusion.compile_c import CCompiler
    except ImportError:
        return out
    return out + [("c", CCompiler())]


COMPILERS = _compilers()


def floats(n, seed, lo=-4.0, hi=4.0, special=True):
    rnd = random.Random(seed)
    out = [rnd.uniform(lo, hi) for _ in range(n)]
    if special and n >= 12:
        out[:12] = [NAN, INF, -INF, 0.0, -0.0, 1e-40, -1e-40, 3.4e38, -3.4e38, 1.0, -1.0, 0.5]
    return out


def ints(n, seed, lo, hi):
    rnd = random.Random(seed)
    return [rnd.randint(lo, hi) for _ in range(n)]


# -- cases: each returns (kernel, space, inputs, tol) ----------------------------------------------

def chain_f32():
    g = Graph(["float32", "float32"])
    x, y = g.load(0), g.load(1)
    t = g.binary("mul", g.binary("add", x, y), 0.5)
    out = g.binary("div", g.binary("sub", t, g.unary("sqrt", g.unary("abs", y))), 3.0)
    k = g.flat(2, [out, t])
    a, b = array(floats(60, 1), (6, 10), "float32"), array(floats(10, 2), (1, 10), "float32")
    return k, (6, 10), [item(a), item(b, (6, 10))], None


def chain_f64_special():
    g = Graph(["float64"])
    x = g.load(0)
    out = g.binary("maximum", g.binary("floordiv", x, -1.5), g.binary("mod", x, 0.0))
    out2 = g.unary("neg", g.unary("floor", g.binary("pow", x, 2.0)))
    k = g.flat(1, [out, out2])
    a = array(floats(50, 3), (50,), "float64")
    return k, (50,), [item(a)], None


def compares_where():
    g = Graph(["float32", "float32"])
    x, y = g.load(0), g.load(1)
    c = g.binary("lt", x, y)
    n = g.unary("isnan", x)
    both = g.binary("or", c, n)
    out = g.where(both, x, g.binary("mul", y, 2.0))
    k = g.flat(2, [out, both, g.binary("eq", x, 0.0)])
    a, b = array(floats(40, 4), (4, 10), "float32"), array(floats(40, 5), (4, 10), "float32")
    return k, (4, 10), [item(a), item(b)], None


def casts():
    g = Graph(["float32", "int64"])
    x, i = g.load(0), g.load(1)
    big = g.binary("mul", x, 1e9)
    outs = [g.cast(big, "int8"), g.cast(big, "int32"), g.cast(big, "int64"), g.cast(x, "bool"),
            g.cast(i, "int8"), g.cast(i, "float32"), g.cast(g.cast(i, "int32"), "float64"),
            g.cast(g.binary("gt", x, 0.0), "float32"), g.cast(g.cast(x, "float64"), "int8")]
    k = g.flat(1, outs)
    xs = floats(64, 6, -300.0, 300.0)
    iv = ints(64, 7, -(1 << 63), (1 << 63) - 1)
    iv[:4] = [127, 128, -129, 1 << 40]
    return k, (64,), [item(array(xs, (64,), "float32")), item(array(iv, (64,), "int64"))], None


def int_ops(dtype, lo, hi):
    def case():
        g = Graph([dtype, dtype])
        x, y = g.load(0), g.load(1)
        outs = [g.binary(op, x, y) for op in ("add", "sub", "mul", "floordiv", "mod", "maximum", "minimum",
                                              "and", "or", "xor", "pow")]
        outs += [g.binary("floordiv", x, K(-3)), g.binary("mod", x, K(-3)), g.binary("rshift", x, K(3)),
                 g.binary("lshift", x, K(2)), g.unary("neg", x), g.unary("abs", x), g.unary("sign", x),
                 g.unary("bitwise_not", x), g.binary("ge", x, y)]
        k = g.flat(1, outs)
        n = 80
        a, b = ints(n, 8, lo, hi), ints(n, 9, -7, 7)
        a[:6] = [lo, hi, 0, -1, 1, lo]
        b[:6] = [-1, 0, 0, 0, -1, 2]
        return k, (n,), [item(array(a, (n,), dtype)), item(array(b, (n,), dtype))], None
    case.__name__ = "int_ops_" + dtype
    return case


def bool_ops():
    g = Graph(["bool", "bool"])
    x, y = g.load(0), g.load(1)
    outs = [g.binary("and", x, y), g.binary("xor", x, y), g.unary("logical_not", x), g.binary("ne", x, y),
            g.cast(g.binary("or", x, y), "int32")]
    k = g.flat(2, outs)
    a = array([v > 0 for v in ints(30, 10, -1, 1)], (5, 6), "bool")
    b = array([v > 0 for v in ints(6, 11, -1, 1)], (1, 6), "bool")
    return k, (5, 6), [item(a), item(b, (5, 6))], None


def transcendental():
    g = Graph(["float32"])
    x = g.load(0)
    outs = [g.unary(op, x) for op in ("exp", "log", "tanh", "sigmoid", "erf", "sin", "cos", "expm1", "log1p",
                                      "rsqrt", "atan")]
    k = g.flat(1, outs)
    a = array(floats(300, 12, -20.0, 20.0), (300,), "float32")
    return k, (300,), [item(a)], TRANSCENDENTAL


def gelu_chain():
    g = Graph(["float32"])
    x = g.load(0)
    e = g.unary("erf", g.binary("div", x, 1.4142135381698608))
    out = g.binary("div", g.binary("mul", x, g.binary("add", e, 1.0)), 2.0)
    k = g.flat(1, [out])
    a = array(floats(2000, 13, -10.0, 10.0), (2000,), "float32")
    return k, (2000,), [item(a)], COMPOSITE


def layouts():
    """Permuted, sliced with a step, offset and flipped inputs, and a scalar broadcast."""
    g = Graph(["float32", "float32", "float32", "float32"])
    p, s, f, c = (g.load(k) for k in range(4))
    out = g.binary("add", g.binary("mul", p, s), g.binary("sub", f, c))
    k = g.flat(3, [out])
    base = array(floats(2 * 3 * 4 * 2, 14), (2 * 3 * 4 * 2,), "float32")
    space = (2, 3, 4)
    permuted = (base, (1, 16, 4), 0)  # a (4, 3, 2)-ish buffer read transposed
    sliced = (base, (24, 8, 2), 1)  # every other element, from offset 1
    flipped = (base, (-24, -8, -2), 47)  # the same, read backwards
    scalar = (array([2.5], (1,), "float32"), (0, 0, 0), 0)
    return k, space, [permuted, sliced, flipped, scalar], None


def zero_size():
    g = Graph(["float32"])
    k = g.flat(2, [g.binary("add", g.load(0), 1.0)])
    return k, (0, 3), [item(array([], (0, 3), "float32"))], None


def rank0():
    g = Graph(["int32"])
    k = g.flat(0, [g.binary("mul", g.load(0), K(3))])
    return k, (), [(array([7], (), "int32"), (), 0)], None


def softmax(dim, rows, n, permute=False):
    def case():
        g = Graph(["float32"])
        x = g.load(0)
        m = g.row(0, "float32")
        e = g.unary("exp", g.binary("sub", x, m))
        s = g.row(1, "float32")
        out = g.binary("div", e, s)
        k = g.rows(2, dim, [ir.Reduce("max", x, "float32"), ir.Reduce("sum", e, "float32"), ir.Map()],
                   [(out, False)])
        vals = floats(rows * n, 15, -30.0, 30.0, special=False)
        vals[3] = -INF
        space = (rows, n) if dim == 1 else (n, rows)
        a = array(vals, space, "float32")
        inp = item(a)
        if permute:  # the array is (n, rows) in memory, read transposed
            inp = (a, (1, rows) if dim == 1 else (n, 1), 0)
            a = array(vals, space[::-1], "float32")
            inp = (a, tuple(reversed(a.layout()[0])), 0)
        return k, space, [inp], TRANSCENDENTAL
    case.__name__ = "softmax_dim%d_%dx%d%s" % (dim, rows, n, "_permuted" if permute else "")
    return case


def layer_norm():
    g = Graph(["float32", "float32", "float32"])
    x, w, b = g.load(0), g.load(1), g.load(2)
    n = 33
    mean = g.binary("div", g.row(0, "float32"), float(n))
    d = g.binary("sub", x, mean)
    var = g.binary("div", g.row(1, "float32"), float(n))
    rstd = g.unary("rsqrt", g.binary("add", var, 1e-5))
    out = g.binary("add", g.binary("mul", g.binary("mul", d, rstd), w), b)
    k = g.rows(2, 1, [ir.Reduce("sum", x, "float32"), ir.Reduce("sum", g.binary("mul", d, d), "float32"),
                      ir.Map()], [(out, False), (mean, True), (rstd, True)])
    xs = array(floats(7 * n, 16, special=False), (7, n), "float32")
    ws = array(floats(n, 17, special=False), (n,), "float32")
    bs = array(floats(n, 18, special=False), (n,), "float32")
    return k, (7, n), [item(xs), (ws, (0, 1), 0), (bs, (0, 1), 0)], TRANSCENDENTAL


def mean_of_squares_dim0():
    """Rows along a non-last dim, per-row outputs only, sum and max of ints and bools."""
    g = Graph(["float64", "int8", "bool"])
    x, i, b = g.load(0), g.load(1), g.load(2)
    sq = g.binary("mul", x, x)
    ms = g.binary("div", g.row(0, "float64"), 5.0)
    k = g.rows(3, 1, [ir.Reduce("sum", sq, "float64"), ir.Reduce("sum", i, "int8"),
                      ir.Reduce("max", i, "int8"), ir.Reduce("sum", b, "int64"), ir.Reduce("min", x, "float64"),
                      ir.Reduce("prod", x, "float64")],
               [(ms, True), (g.row(1, "int8"), True), (g.row(2, "int8"), True), (g.row(3, "int64"), True),
                (g.row(4, "float64"), True), (g.row(5, "float64"), True)])
    space = (3, 5, 4)
    xs = array(floats(60, 19), space, "float64")
    iv = array(ints(60, 20, -128, 127), space, "int8")
    bv = array([v > 0 for v in ints(60, 21, -1, 1)], space, "bool")
    return k, space, [item(xs), item(iv), item(bv)], None


def matmul_gelu(batch_a, batch_b, m, n, kk, dtype="float32"):
    def case():
        g = Graph([dtype, dtype, dtype])
        acc = g.acc(dtype)
        z = g.binary("add", acc, g.load(2))
        e = g.unary("erf", g.binary("mul", z, 0.7071067690849304))
        out = g.binary("mul", g.binary("mul", z, 0.5), g.binary("add", e, 1.0))
        batch = tuple(max(p, q) for p, q in zip(batch_a, batch_b))
        rank = len(batch) + 2
        k = ir.MatmulKernel(rank, 0, 1, dtype, g.inputs, g.nodes, [(out, False), (z, False)])
        a = array(floats(_n(batch_a) * m * kk, 22, -1, 1, special=False), batch_a + (m, kk), dtype)
        b = array(floats(_n(batch_b) * kk * n, 23, -1, 1, special=False), batch_b + (kk, n), dtype)
        bias = array(floats(n, 24, special=False), (n,), dtype)
        inputs = [item(a, batch + (m, kk)), item(b, batch + (kk, n)), item(bias, batch + (m, n))]
        return k, batch + (m, n, kk), inputs, (1e-5, 1e-5)
    case.__name__ = "matmul_gelu_%s_%s_%dx%dx%d_%s" % (batch_a, batch_b, m, n, kk, dtype)
    return case


def _n(shape):
    out = 1
    for s in shape:
        out *= s
    return out


def matmul_int():
    g = Graph(["int32", "int32"])
    out = g.binary("floordiv", g.acc("int32"), K(7))
    k = ir.MatmulKernel(2, 0, 1, "int32", g.inputs, g.nodes, [(out, False), (0, False)])
    a = array(ints(12, 25, -(1 << 30), 1 << 30), (3, 4), "int32")
    b = array(ints(20, 26, -100, 100), (4, 5), "int32")
    return k, (3, 5, 4), [item(a), item(b)], None


def matmul_transposed():
    g = Graph(["float64", "float64"])
    k = ir.MatmulKernel(2, 0, 1, "float64", g.inputs, [("acc", "float64")], [(0, False)])
    a = array(floats(12, 27, special=False), (3, 4), "float64")
    b = array(floats(20, 28, special=False), (5, 4), "float64")  # read as b.T
    return k, (3, 5, 4), [item(a), (b, (1, 4), 0)], (1e-12, 1e-15)


CASES = [chain_f32, chain_f64_special, compares_where, casts, int_ops("int8", -128, 127),
         int_ops("int32", -(1 << 31), (1 << 31) - 1), int_ops("int64", -(1 << 63), (1 << 63) - 1), bool_ops,
         transcendental, gelu_chain, layouts, zero_size, rank0, softmax(1, 6, 50), softmax(0, 5, 40),
         softmax(1, 4, 37, permute=True), layer_norm, mean_of_squares_dim0,
         matmul_gelu((), (), 5, 7, 9), matmul_gelu((2, 3), (1, 3), 4, 6, 5), matmul_gelu((2,), (2,), 33, 70, 65),
         matmul_gelu((), (), 3, 4, 0, "float64"), matmul_int, matmul_transposed]


@pytest.mark.parametrize("name,compiler", COMPILERS, ids=[c[0] for c in COMPILERS])
@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_against_unfused(name, compiler, case):
    kernel, space, inputs, tol = case()
    assert compiler.supports(kernel)
    want = reference(kernel, space, inputs)
    got = compiler.run(kernel, space, inputs)
    assert len(got) == len(want)
    for j, (g, w) in enumerate(zip(got, want)):
        assert_same(g, w, tol, "%s output %d" % (case.__name__, j))
    assert compiler.source(kernel)


@pytest.mark.parametrize("name,compiler", COMPILERS, ids=[c[0] for c in COMPILERS])
def test_bad_input_raises(name, compiler):
    kernel, space, inputs, _ = chain_f32()
    with pytest.raises(ArgumentError):
        compiler.run(kernel, space, inputs[:1])
    with pytest.raises(ShapeError):
        compiler.run(kernel, space, [inputs[0], (inputs[1][0], (0,), 0)])
    with pytest.raises(ArgumentError):  # reaches past the storage
        compiler.run(kernel, (7, 10), inputs)
    with pytest.raises(ArgumentError):
        compiler.run(kernel, space, [inputs[0], (inputs[1][0], (0, 1), 5)])
    with pytest.raises(DTypeError):
        compiler.run(kernel, space, [inputs[0], item(array([1] * 60, (6, 10), "int32"))])
    bad = ir.RowKernel(1, None, ["float16"], [("load", "float16", 0)], [ir.Map()], [(0, False)])
    assert not compiler.supports(bad)
    with pytest.raises(DTypeError):
        compiler.run(bad, (3,), [item(array([1.0] * 3, (3,), "float16"))])
    forward = ir.RowKernel(1, None, ["float32"], [("unary", "float32", "exp", 1), ("load", "float32", 0)],
                           [ir.Map()], [(0, False)])
    assert not compiler.supports(forward)
    with pytest.raises(ArgumentError):
        compiler.run(forward, (3,), [item(array([1.0] * 3, (3,), "float32"))])


def _sweep():
    """Dense float32 inputs over exp's and erf's whole range, then the special values."""
    xs = [i / 64.0 for i in range(-120 * 64, 120 * 64)]
    xs += [s * 10.0 ** (e / 8.0) for e in range(-360, 40) for s in (1.0, -1.0)]
    xs += [88.0, 88.5, 88.72, 88.73, 89.0, -87.3, -87.4, -103.9, -104.0, 1e-45, -1e-45, 1e-38, -0.0]
    return xs + [NAN, INF, -INF, 0.0]


def test_fast_approximations_sweep():
    """fk_expf and fk_erff (and their exact fallback at nan, inf, overflow) against the pure Cpu's
    libm values, within the conformance tolerance, over a dense sweep."""
    from ember.accel.fusion.compile_c import CCompiler
    g = Graph(["float32"])
    x = g.load(0)
    k = g.flat(1, [g.unary("exp", x), g.unary("erf", x), g.unary("exp", g.unary("neg", g.binary("mul", x, x)))])
    xs = _sweep()
    inputs = [item(array(xs, (len(xs),), "float32"))]
    want = reference(k, (len(xs),), inputs)
    got = CCompiler().run(k, (len(xs),), inputs)
    for j, (a, b) in enumerate(zip(got, want)):
        assert_same(a, b, TRANSCENDENTAL, "sweep output %d" % j)


def test_erf_of_a_quotient_sweep():
    """erf(x / c) reads x * (1/c) (no division in the fast loop): within the tolerance of erf of the
    exact quotient over the dense sweep, for divisors with and without an exact reciprocal; the
    quotient itself, also an output, stays exact."""
    from ember.accel.fusion.compile_c import CCompiler
    xs = _sweep()
    inputs = [item(array(xs, (len(xs),), "float32"))]
    for c in (1.4142135381698608, 3.0, -0.1, 2.0, 1e-30, 3e38, 1e-40):
        g = Graph(["float32"])
        q = g.binary("div", g.load(0), c)
        k = g.flat(1, [g.unary("erf", q), q])
        want = reference(k, (len(xs),), inputs)
        got = CCompiler().run(k, (len(xs),), inputs)
        assert_same(got[0], want[0], TRANSCENDENTAL, "erf(x / %r)" % c)
        assert_same(got[1], want[1], None, "x / %r" % c)


def test_one_compiler_many_calls():
    """A compiler reuses a layout's plan: new buffers, offsets and layouts each give their own values."""
    from ember.accel.fusion.compile_c import CCompiler
    g = Graph(["float32", "float32"])
    k = g.flat(1, [g.binary("sub", g.binary("mul", g.load(0), 3.0), g.load(1))])
    compiler = CCompiler()
    calls = []
    for seed in (1, 2):
        a, b = (array(floats(64, seed + j), (64,), "float32") for j in (0, 10))
        calls.append(((32,), [(a, (1,), 0), (b, (1,), 0)]))
        calls.append(((32,), [(a, (1,), 32), (b, (2,), 1)]))
        calls.append(((32,), [(a, (2,), 0), (b, (0,), 5)]))
    for space, inputs in calls + calls:
        assert_same(compiler.run(k, space, inputs)[0], reference(k, space, inputs)[0], None, "%r" % (inputs[1][1:],))


def test_gelu_loop_uses_the_fast_erf():
    """The GELU chain's loop calls fk_erff on x times 1/sqrt(2): no libm erf, no division for it."""
    from ember.accel.fusion.compile_c import CCompiler
    k, _, _, _ = gelu_chain()
    src = CCompiler().source(k)
    loop = src[src.index("static void fk_segment"):]
    assert "fk_erff((v0 * ((float)0x1.6a09e60000000p-1f)))" in loop
    assert "erf((double)" not in loop


def test_broken_compiler_falls_back(monkeypatch, tmp_path):
    """CC pointing nowhere: one warning, then the interpreter's (exact) results."""
    from ember.accel.fusion import compile_c
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compile_c, "_warned", [])
    _, space, inputs, _ = chain_f32()
    g = Graph(["float32", "float32"])
    kernel = g.flat(2, [g.binary("add", g.binary("mul", g.load(0), 7.25), g.load(1))])  # built nowhere else
    compiler = compile_c.CCompiler()
    with pytest.warns(RuntimeWarning, match="interpreter"):
        got = compiler.run(kernel, space, inputs)
    for g, w in zip(got, reference(kernel, space, inputs)):
        assert_same(g, w)
    assert compiler.run(kernel, space, inputs)  # no second warning, no build attempt


def test_compiler_for(monkeypatch):
    import ember
    from ember.accel.fusion.compilers import compiler_for
    assert compiler_for(ember.Cpu(kernels="python")).name == "interpreter"
    assert compiler_for(ember.Cpu(kernels="c")).name == "c"
    monkeypatch.setenv("EMBER_NO_C", "1")
    assert compiler_for(ember.Cpu(kernels="c")).name == "interpreter"
    assert compiler_for("gpu") is None  # no compiler: Fusion runs the ops unfused
    from ember.accel.numpy import NumPy
    assert compiler_for(NumPy()) is None


@pytest.mark.skipif(len(COMPILERS) < 2, reason="no C compiler")
@pytest.mark.parametrize("n", [1, 63, 64, 200])
def test_row_scratch_keeps_the_reduced_values(n):
    """The sum phase's exp(x - max) is kept in the row scratch and read back by the Map phase: the
    same bits as a kernel whose Map computes exp itself, and the output's sum is the row sum."""
    from ember.accel.fusion import cgen
    c = COMPILERS[1][1]
    def exp_rows(sum_too):
        g = Graph(["float32"])
        x = g.load(0)
        e = g.unary("exp", g.binary("sub", x, g.row(0, "float32")))
        if not sum_too:
            return g.rows(2, 1, [ir.Reduce("max", x, "float32"), ir.Map()], [(e, False)]), e
        s = g.row(1, "float32")
        return g.rows(2, 1, [ir.Reduce("max", x, "float32"), ir.Reduce("sum", e, "float32"), ir.Map()],
                      [(e, False), (g.binary("div", e, s), False), (s, True)]), e
    (saved, e), (alone, _) = exp_rows(True), exp_rows(False)
    reads, stores, slots = cgen.scratch_plan(saved)
    assert slots == [e] and stores[1] == [e] and e in reads[2]
    assert cgen.scratch_plan(alone)[2] == []  # nothing to keep: the Map computes exp once
    a = array(floats(5 * n, 21, -30.0, 30.0, special=False), (5, n), "float32")
    got = c.run(saved, (5, n), [item(a)])
    assert_same(got[0], c.run(alone, (5, n), [item(a)])[0])
    for j, w in enumerate(reference(saved, (5, n), [item(a)])):
        assert_same(got[j], w, TRANSCENDENTAL)



@pytest.mark.skipif(len(COMPILERS) < 2, reason="no C compiler")
@pytest.mark.parametrize("n", [128, 300, 1024])
def test_reduce_folds_values_in_memory_in_the_same_order(n):
    """A whole chunk of a reduce whose values lie in memory (a unit-stride input, the row scratch)
    is folded from there: the same bits as the same values computed into the chunk buffer (an input
    read at stride 3), and within tolerance of the pure Cpu."""
    c = COMPILERS[1][1]
    g = Graph(["float32"])
    x = g.load(0)
    e = g.unary("exp", g.binary("sub", x, g.row(0, "float32")))
    s, t = g.row(1, "float32"), g.row(2, "float32")
    k = g.rows(2, 1, [ir.Reduce("max", x, "float32"), ir.Reduce("sum", e, "float32"),
                      ir.Reduce("sum", x, "float32"), ir.Map()],
               [(g.binary("div", e, s), False), (s, True), (t, True), (g.row(0, "float32"), True)])
    vals = floats(3 * n, 22, -20.0, 20.0, special=False)
    rows = array(vals, (3, n), "float32")
    cols = array([vals[r * n + i] for i in range(n) for r in range(3)], (n, 3), "float32")
    got = c.run(k, (3, n), [item(rows)])
    strided = c.run(k, (3, n), [(cols, (1, 3), 0)])
    for j, (a, b) in enumerate(zip(got, strided)):
        assert_same(a, b, None, "output %d" % j)
    for j, w in enumerate(reference(k, (3, n), [item(rows)])):
        assert_same(got[j], w, TRANSCENDENTAL, "output %d" % j)

def _next_row_kernels():
    """A softmax (max, sum, map: the sum phase prefetches) and ``x / sum(x)`` (sum, map: the map
    phase prefetches), each with the row sum as a per-row output too."""
    g = Graph(["float32"])
    x = g.load(0)
    e = g.unary("exp", g.binary("sub", x, g.row(0, "float32")))
    s = g.row(1, "float32")
    softmax = g.rows(2, 1, [ir.Reduce("max", x, "float32"), ir.Reduce("sum", e, "float32"), ir.Map()],
                     [(g.binary("div", e, s), False), (s, True)])
    h = Graph(["float32"])
    y = h.load(0)
    t = h.row(0, "float32")
    share = h.rows(2, 1, [ir.Reduce("sum", y, "float32"), ir.Map()], [(h.binary("div", y, t), False), (t, True)])
    return softmax, share


@pytest.mark.skipif(len(COMPILERS) < 2, reason="no C compiler")
@pytest.mark.parametrize("n", [1, 37, 1024, 20000])
def test_next_row_prefetch_keeps_the_results(n):
    """Row kernels of two phases or more prefetch the next row (rows up to cgen.PREFETCH_BYTES):
    within tolerance of the pure Cpu over rows holding -inf, a row of -inf only, huge values and
    a single column, for contiguous rows and rows of a wider array; the same bits as the kernel
    reading its input at a run-time stride (which prefetches nothing)."""
    from ember.accel.fusion import cgen
    c = COMPILERS[1][1]
    rows = 4
    vals = floats(rows * n, 23, -20.0, 20.0, special=False)
    vals[0] = -INF
    vals[n:2 * n] = [-INF] * n  # the second row: -inf everywhere
    vals[-1] = 3.0e38  # the last row: a huge value
    wide = array([v for r in range(rows) for v in vals[r * n:(r + 1) * n] + [7.0]], (rows, n + 1), "float32")
    cols = array([vals[r * n + i] for i in range(n) for r in range(rows)], (n, rows), "float32")
    layouts = [item(array(vals, (rows, n), "float32")), (wide, (n + 1, 1), 0)]
    for k in _next_row_kernels():
        assert "__builtin_prefetch" in c.source(k)
        strided = c.run(k, (rows, n), [(cols, (1, rows), 0)])
        for inp in layouts:
            got = c.run(k, (rows, n), [inp])
            for j, (a, b) in enumerate(zip(got, strided)):
                assert_same(a, b, None, "n=%d output %d" % (n, j))
            for j, w in enumerate(reference(k, (rows, n), [inp])):
                assert_same(got[j], w, TRANSCENDENTAL, "n=%d output %d" % (n, j))
    g = Graph(["float32"])
    one_phase = g.rows(2, 1, [ir.Reduce("sum", g.load(0), "float32")], [(g.row(0, "float32"), True)])
    assert "__builtin_prefetch" not in c.source(one_phase)  # one pass: nothing comes back to the row
    assert cgen.PREFETCH_BYTES < 20000 * 4  # the longest rows here go without


def _threaded_exp(c):
    """An exp over 1M floats on 2 threads (the kernel's share of work is large enough)."""
    from ember.backends.cpu import ckernels
    g = Graph(["float32"])
    k = g.flat(1, [g.unary("exp", g.load(0))])
    n = 1 << 20
    a = array([(i % 200) / 50.0 - 2.0 for i in range(n)], (n,), "float32")
    previous = ckernels.set_num_threads(2)
    try:
        return c.run(k, (n,), [item(a)])[0].data
    finally:
        ckernels.set_num_threads(previous)


@pytest.mark.skipif(len(COMPILERS) < 2 or not hasattr(os, "fork"), reason="no C compiler or no fork")
def test_worker_pool_survives_fork():
    """Kernels run on ember._ckernels' worker pool; a forked child (pytest-xdist, a DataLoader's
    workers) starts with no workers and makes its own instead of waiting on the parent's."""
    import multiprocessing
    c = COMPILERS[1][1]
    want = list(_threaded_exp(c))
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=lambda: q.put(list(_threaded_exp(c)) == want))
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill()
        pytest.fail("a forked child hung in a threaded kernel")
    assert p.exitcode == 0 and q.get(timeout=5)
    assert list(_threaded_exp(c)) == want  # the parent's pool still works


@pytest.mark.skipif(len(COMPILERS) < 2, reason="no C compiler")
def test_worker_pool_concurrent_callers():
    """Two Python threads calling threaded kernels at once: one gets the pool, the other its own
    threads; both get the same values."""
    import threading
    c = COMPILERS[1][1]
    want = list(_threaded_exp(c))
    got = []
    ts = [threading.Thread(target=lambda: got.append(list(_threaded_exp(c)) == want)) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert got == [True] * 4
