"""Fusion's schedule cache: a pending graph of a shape seen before binds the kernel built for it
(schedule.py ``_Graph``, ``_Schedule``) instead of being built again, and anything that changes the
kernel (a held intermediate, a constant, an input's layout) names another graph.

Each test runs with the interpreter over the pure Cpu and with generated C over the C-backed Cpu,
and compares values with the same ops run unfused on the pure Cpu.
"""
import math

import pytest

import ember
from ember.accel.fusion import Fusion, schedule

CPU = ember.Cpu(kernels="python")


def _interpreter():
    return Fusion(ember.Cpu(kernels="python"))


def _c():
    try:
        dev = ember.Cpu(kernels="c")
    except ImportError as e:
        pytest.skip("no C kernels here: %s" % e)
    return Fusion(dev)


@pytest.fixture(params=["interpreter", "c"])
def dev(request):
    return {"interpreter": _interpreter, "c": _c}[request.param]()


@pytest.fixture
def builds(monkeypatch):
    """How many kernels the scheduler has built (not bound from its cache)."""
    count = [0]
    build = schedule._Builder.build

    def counted(self):
        count[0] += 1
        return build(self)
    monkeypatch.setattr(schedule._Builder, "build", counted)
    return count


def data(shape, seed):
    ember.seed(seed)
    return ember.randn(*shape, device=CPU)


def softmax(x):
    m = x.max(-1, keepdim=True)[0]
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


def close(a, b, tol=2e-6):
    fa, fb = a.reshape(-1).tolist(), b.reshape(-1).tolist()
    assert len(fa) == len(fb)
    for u, v in zip(fa, fb):
        assert abs(u - v) <= tol * (1 + abs(v)), (u, v)


def test_a_repeated_graph_is_built_once(dev, builds):
    for seed in range(4):
        x = data((6, 40), seed)
        close(softmax(x.to(dev)), softmax(x))
    assert builds[0] == 1 and len(dev.schedules) == 1


def test_another_size_is_another_graph(dev, builds):
    for shape in ((6, 40), (3, 40), (6, 40)):
        x = data(shape, 1)
        close(softmax(x.to(dev)), softmax(x))
    assert builds[0] == 2


def test_a_held_intermediate_is_another_graph(dev):
    x = data((5, 33), 2)
    m = x.max(-1, keepdim=True)[0]
    want_e = (x - m).exp()
    want = want_e / want_e.sum(-1, keepdim=True)
    for keep in (True, False, True, False):
        v = x.to(dev)
        mm = v.max(-1, keepdim=True)[0]
        e = (v - mm).exp()
        y = e / e.sum(-1, keepdim=True)
        if not keep:
            del e
        close(y, want)
        if keep:
            close(e, want_e)  # written by the kernel that computed y
    assert len(dev.schedules) == 2


def test_signed_zero_constants_are_two_graphs(dev):
    # compared equal (0.0 == -0.0), the two would share a schedule and give one zero for both
    x = data((4, 9), 3).to(dev)
    keys = []
    for c in (0.0, -0.0):
        y = x * c
        keys.append(schedule._Graph(dev.compiler, y._data.node).key)
        del y
    assert keys[0] != keys[1]


def test_an_input_layout_is_part_of_the_graph(dev):
    x = data((7, 12), 4)
    for view in (False, True, False, True):
        v = x.to(dev)
        if view:
            v = v.permute(1, 0)
        close(softmax(v), softmax(x.permute(1, 0) if view else x))


def test_graphs_with_a_boundary_stay_right(dev):
    # the root reads a reduce of a reduce: the inner one is computed first, by a kernel of its own
    for seed in range(3):
        x = data((5, 8), seed)
        f = lambda v: (v - v.sum(-1, keepdim=True).max(0, keepdim=True)[0]).exp()
        close(f(x.to(dev)), f(x), 1e-5)


def test_equal_constants_of_other_bits_or_types_are_other_kernels(dev):
    # a kernel's key holds each constant's type and bits (ir._keyed): x * 0.0 then x * -0.0 must
    # not share the first one's compiled code (float equality says 0.0 == -0.0)
    x = ember.ones(4, device=dev)
    assert [math.copysign(1.0, v) for v in (x * 0.0).tolist()] == [1.0] * 4
    assert [math.copysign(1.0, v) for v in (x * -0.0).tolist()] == [-1.0] * 4
    i = ember.ones(3, dtype=ember.int32, device=dev)
    assert (i + 1).tolist() == [2, 2, 2] and (i + 1).dtype is ember.int32
    assert (i + True).tolist() == [2, 2, 2]
    assert (i + 1.5).tolist() == [2.5, 2.5, 2.5]
    nan = float("nan")
    for _ in range(2):  # a nan constant keys like itself: the second call finds the first kernel
        assert all(v != v for v in (x + nan).tolist())


# -- prepared calls: a repeated graph on the C Cpu runs the compiler's prepared call ---------------

@pytest.fixture
def runs(monkeypatch):
    """How many kernels went through ``CCompiler.run`` (checks, lookups) rather than a prepared call."""
    from ember.accel.fusion.compile_c import CCompiler
    count = [0]
    run = CCompiler.run

    def counted(self, kernel, space, inputs):
        count[0] += 1
        return run(self, kernel, space, inputs)
    monkeypatch.setattr(CCompiler, "run", counted)
    return count


def gelu(v):
    return v * ((v / math.sqrt(2)).erf() + 1) / 2


@pytest.mark.parametrize("name, f, shapes", [
    ("softmax", softmax, [(6, 40)]),
    ("gelu", gelu, [(3, 50)]),
    ("permuted softmax", lambda v: softmax(v.permute(1, 0)), [(9, 14)]),
    ("sliced rows", lambda v: (v[1:, ::2] * 2 + 1).exp(), [(7, 12)]),
    ("compare", lambda v: (v > 0.25), [(5, 11)]),
    ("matmul epilogue", lambda a, w, b: gelu(a @ w.permute(1, 0) + b), [(6, 10), (4, 10), (4,)]),
])
def test_a_repeated_graph_runs_its_prepared_call(runs, name, f, shapes):
    dev = _c()
    for seed in range(4):
        xs = [data(s, 10 * seed + k) for k, s in enumerate(shapes)]
        got = f(*[x.to(dev) for x in xs])
        want = f(*xs)
        if want.dtype is ember.bool:
            assert got.tolist() == want.tolist(), name
        else:
            close(got, want, 1e-5)
        if seed == 1:
            first = runs[0]
    # the first call builds and runs, the second runs and prepares; later ones only call
    assert runs[0] == first, name
    assert all(s.call is not None for s in dev.schedules.values()), name


def test_a_prepared_call_still_reports_to_a_trace(runs):
    from ember.accel.fusion import trace
    dev = _c()
    for seed in range(3):
        x = data((4, 30), seed)
        with trace() as t:
            close(softmax(x.to(dev)), softmax(x))
        assert len(t.kernels) == 1
    assert runs[0] == 3  # traced calls take the reporting path


def test_an_explicitly_strided_contiguous_input_is_right():
    # an array whose strides are spelt out keys apart from an implicit contiguous one of the same
    # layout (layout_key); both give the right values
    from ember.backends.cpu.array import CpuArray
    dev = _c()
    x = data((5, 8), 7)
    want = softmax(x).tolist()
    for explicit in (False, True, False, True):
        v = x.to(dev)
        if explicit:
            a = v._data.node.value
            v._data.node.value = CpuArray(a.data, a.shape, a.dtype, (8, 1), 0)
        close(softmax(v), ember.tensor(want))


def test_a_held_node_read_through_a_broadcast_is_stored(dev):
    # a bias updated every step and read broadcast by the next step's kernel is computed and
    # stored (a boundary), not inlined into its reader: inlined, it was never stored, and each
    # step's kernel held the whole history of updates (a training step's kernels grew every step)
    x, b0 = data((4, 5), 1), data((5,), 2)
    want_b = b0
    b = b0.to(dev)
    xd = x.to(dev)
    sizes = []
    for step in range(6):
        y = (xd + b).exp()
        want_y = (x + want_b).exp()
        close(y, want_y, 1e-5)
        assert b._data.node.value is not None, step  # stored by the read above
        b = b * 0.5 + 1.0
        want_b = want_b * 0.5 + 1.0
        sizes.append(len(schedule._Graph(dev.compiler, ((xd + b).exp())._data.node).nodes))
    assert len(set(sizes)) == 1, sizes
    close(b, want_b)


def test_a_held_node_at_the_kernels_index_is_still_written_by_it(dev, builds):
    # the same node read at the kernel's own index needs no kernel of its own: one kernel, two outputs
    x = data((4, 5), 3)
    v = x.to(dev)
    h = v * 2.0 + 1.0
    y = (h + v).exp()
    close(y, ((x * 2.0 + 1.0) + x).exp(), 1e-5)
    close(h, x * 2.0 + 1.0)
    assert builds[0] == 1


def test_a_graph_with_a_boundary_is_built_once(dev, builds):
    # the inner reduce is computed first by its own kernel; the graph's key keeps which nodes those
    # were, and the graph left after them keeps its kernel: the next call builds nothing
    f = lambda v: (v - v.sum(-1, keepdim=True).max(0, keepdim=True)[0]).exp()
    for seed in range(4):
        x = data((5, 8), seed)
        close(f(x.to(dev)), f(x), 1e-5)
        if seed == 0:
            first = builds[0]
    assert first >= 2 and builds[0] == first
    assert any(type(s) is schedule._Boundaries for s in dev.schedules.values())


def test_a_chain_deeper_than_the_walks_recursion_is_one_graph(dev, builds):
    # _Graph recurses into a node's pending arguments; past _DEPTH nested visits it places the
    # nodes inputs first instead: the same values, one kernel, and the same key on the next call
    def chain(v):
        for _ in range(schedule._DEPTH * 2):
            v = v * 0.75 + 0.25
        return v
    x = data((3, 7), 5)
    keys = []
    for _ in range(2):
        y = chain(x.to(dev))
        graph = schedule._Graph(dev.compiler, y._data.node)
        assert len(graph.nodes) == schedule._DEPTH * 4
        keys.append(graph.key)
        close(y, chain(x), 1e-5)
    assert keys[0] == keys[1] and builds[0] == 1


def test_a_repeated_graph_leaves_no_reference_cycle(dev):
    # a flush's walk must not keep itself alive: the pool hands out an output buffer again only
    # once nothing holds it, so a cycle held every repeated kernel's output until the collector ran
    import gc
    x = data((64, 64), 6).to(dev)
    gelu = lambda v: v * ((v / math.sqrt(2)).erf() + 1) / 2
    gelu(x).tolist()
    gc.collect()
    gc.disable()
    try:
        y = gelu(x)
        dev.synchronize()
        del y
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_repeated_graph_with_boundaries_is_walked_once(dev, monkeypatch):
    # the graphs computed first, and the graph left after them, are read off the first walk by
    # position (_Part): a repeat walks one graph where its first call walked one per boundary
    f = lambda v: (v - v.sum(-1, keepdim=True).max(0, keepdim=True)[0]).exp()
    walks = [0]
    init = schedule._Graph.__init__

    def counted(self, compiler, root):
        walks[0] += 1
        init(self, compiler, root)
    monkeypatch.setattr(schedule._Graph, "__init__", counted)
    for seed in range(3):
        x = data((5, 8), seed)
        before = walks[0]
        close(f(x.to(dev)), f(x), 1e-5)
        if seed == 0:
            first = walks[0] - before
    assert first >= 3 and walks[0] - before == 1


def test_a_part_that_is_no_longer_as_it_was_is_walked(dev):
    # _Part.read answers None when a node it holds as pending was computed since: the caller
    # then walks, never binding a graph of another shape
    xc = data((6, 4), 9)
    x = xc.to(dev)
    h = (x * 2.0 + 1.0)
    y = (h - h.sum(-1, keepdim=True).max(0, keepdim=True)[0]).exp()
    graph = schedule._Graph(dev.compiler, y._data.node)
    part = schedule._Part.of(graph, graph, {}, dev.compiler)
    assert part is not None and part.read(graph, dev.compiler).key == graph.key
    h.tolist()  # computes h, a node of the part
    assert part.read(graph, dev.compiler) is None
    hc = xc * 2.0 + 1.0
    close(y, (hc - hc.sum(-1, keepdim=True).max(0, keepdim=True)[0]).exp(), 1e-5)
