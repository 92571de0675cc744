"""Fusion's scheduler: what fuses into how many kernels, and that values equal the unfused device's.

Every test runs with each compiler this machine has: the numpy oracle (fusion_oracle.py, which
shares no code with ember's compilers), the interpreter over the pure Cpu, and generated C over the
C-backed Cpu. The conformance suite runs every op through Fusion as well (tests/harness/backends.py).
"""
import io
import math
import os
import sys

import pytest

import ember
import ember.nn.functional as F
from ember.accel import Autodiff
from ember.accel.fusion import Fusion, explain, trace
from ember.errors import ArgumentError, ShapeError

sys.path.insert(0, os.path.dirname(__file__))
from fusion_oracle import Oracle  # noqa: E402

CPU = ember.Cpu(kernels="python")


def _oracle():
    return Fusion(CPU, compiler=Oracle(CPU))


def _interpreter():
    return Fusion(ember.Cpu(kernels="python"))


def _c():
    try:
        dev = ember.Cpu(kernels="c")
    except ImportError as e:
        pytest.skip("no C kernels here: %s" % e)
    return Fusion(dev)


FUSERS = {"oracle": _oracle, "interpreter": _interpreter, "c": _c}


@pytest.fixture(params=sorted(FUSERS))
def dev(request):
    return FUSERS[request.param]()


def gelu_custom(x):
    """The seed's GELU from primitives."""
    x = x * ((x / math.sqrt(2)).erf() + 1)
    return x / 2


def softmax(x):
    m = x.max(-1, keepdim=True)[0]
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


def data(shape, seed=0):
    ember.seed(seed)
    return ember.randn(*shape, device=CPU)


def on(dev, *ts):
    return [t.to(dev) for t in ts]


def close(a, b, tol=2e-6):
    fa = ember.tensor(a.tolist()).reshape(-1).tolist() if a.shape else [a.item()]
    fb = ember.tensor(b.tolist()).reshape(-1).tolist() if b.shape else [b.item()]
    assert len(fa) == len(fb)
    for u, v in zip(fa, fb):
        assert abs(u - v) <= tol * (1 + abs(v)), (u, v)


def run(fn, *args):
    with trace() as t:
        out = fn(*args)
        out.tolist()
    return out, t


def test_gelu_custom_is_one_kernel(dev):
    x = data((8, 33))
    y, t = run(gelu_custom, *on(dev, x))
    assert len(t.kernels) == 1 and t.kernels[0].fused()
    close(y, gelu_custom(x))


def test_softmax_from_primitives_is_at_most_two_kernels(dev):
    x = data((5, 17))
    y, t = run(softmax, *on(dev, x))
    assert len(t.kernels) <= 2 and all(e.fused() for e in t.kernels)
    close(y, softmax(x))
    y, t = run(lambda v: F.softmax(v, -1), *on(dev, x))
    assert len(t.kernels) <= 2
    close(y, F.softmax(x, -1))


def test_layer_norm_and_mean_of_squares_fuse_on_read(dev):
    x, w, b = data((4, 24)), data((24,), 1), data((24,), 2)
    y, t = run(lambda v, ww, bb: F.layer_norm(v, (24,), ww, bb), *on(dev, x, w, b))
    assert len(t.kernels) == 1
    close(y, F.layer_norm(x, (24,), w, b), 1e-5)
    y, t = run(lambda v: (v * v).mean(-1), *on(dev, x))
    assert len(t.kernels) == 1
    close(y, (x * x).mean(-1))


def test_linear_bias_gelu_is_one_matmul_with_an_epilogue(dev):
    x, w, b = data((6, 16)), data((10, 16), 1), data((10,), 2)
    y, t = run(lambda v, ww, bb: F.gelu(F.linear(v, ww, bb)), *on(dev, x, w, b))
    assert len(t.kernels) == 1 and t.kernels[0].kernel.kind == "matmul"
    close(y, F.gelu(F.linear(x, w, b)), 1e-5)


def mlp_block(x, g, beta, w1, b1, w2, b2):
    h = F.layer_norm(x, (x.shape[-1],), g, beta)
    return x + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2)


def test_transformer_mlp_block_forward_is_at_most_three_kernels(dev):
    d, hidden = 16, 32
    args = [data((2, 5, d)), data((d,), 1), data((d,), 2), data((hidden, d), 3), data((hidden,), 4),
            data((d, hidden), 5), data((d,), 6)]
    y, t = run(mlp_block, *on(dev, *args))
    assert len(t.kernels) <= 3, [e.describe() for e in t.kernels]
    close(y, mlp_block(*args), 1e-5)


def test_kernels_are_cached_by_graph_shape_not_by_size(dev):
    keys = []
    for n in (4, 16):
        _, t = run(gelu_custom, *on(dev, data((n, 8))))
        keys.append(t.kernels[0].kernel.key)
    assert keys[0] == keys[1]


def test_held_intermediates_are_outputs_of_the_same_kernel(dev):
    x, = on(dev, data((3, 7)))
    with trace() as t:
        a = x * 2
        b = a.exp() + 1
        b.tolist()
        a.tolist()  # computed by the same kernel as b
    assert len(t.kernels) == 1 and len(t.kernels[0].kernel.outputs) == 2
    close(a, data((3, 7)) * 2)


def test_dead_intermediates_are_not_outputs(dev):
    x, = on(dev, data((3, 7)))
    with trace() as t:
        b = ((x * 2).exp() + 1).sqrt()
        b.tolist()
    assert len(t.kernels[0].kernel.outputs) == 1


def test_errors_are_raised_at_the_op_that_causes_them(dev):
    x, = on(dev, data((3, 4)))
    y = x.exp()
    with pytest.raises(ShapeError) as fused:
        y + ember.ones(5, device=dev)
    with pytest.raises(ShapeError) as plain:
        data((3, 4)).exp() + ember.ones(5, device=CPU)
    assert str(fused.value) == str(plain.value)


def test_unfused_ops_between_fused_chains(dev):
    x, idx = data((4, 6)), ember.tensor([[0, 2], [1, 1], [5, 0], [3, 4]])
    def f(v, i):
        return (v.exp() * 2).gather(1, i).sin() + 1
    y, t = run(f, *on(dev, x, idx))
    close(y, f(x, idx))
    assert [e.fused() for e in t.kernels] == [True, False, True]


def test_float16_runs_unfused_with_the_same_values(dev):
    x = data((2, 5)).half()
    y, t = run(lambda v: (v * 3).exp(), *on(dev, x))
    assert not any(e.fused() for e in t.kernels)
    assert y.tolist() == (x * 3).exp().tolist()


def test_autodiff_over_fusion_gives_the_same_gradients(dev):
    def loss(d):
        x, w, b = on(d, data((6, 8)), data((5, 8), 1), data((5,), 2))
        w.requires_grad_()
        b.requires_grad_()
        out = F.softmax(F.gelu(F.linear(x, w, b)), -1).log().mean()
        g = out.backward()
        return out, w.grad(g), b.grad(g)
    got = loss(Autodiff(dev))
    want = loss(Autodiff(CPU))
    for a, b in zip(got, want):
        close(a, b, 1e-5)


def test_a_long_stream_is_computed_before_it_grows_without_bound():
    dev = Fusion(CPU, max_pending=8, compiler=Oracle(CPU))
    x, = on(dev, data((4,)))
    ys = [x + i for i in range(20)]
    assert sum(y._data.node.value is not None for y in ys) >= 8
    assert [y.tolist() for y in ys] == [(data((4,)) + i).tolist() for i in range(20)]


def test_a_stream_of_computed_or_dropped_ops_is_not_flushed():
    # the length of the stream counts only what is still pending: ops a read computed already, or
    # whose tensors are gone, never make a flush cut the graph of the ops recorded after them
    dev = Fusion(CPU, max_pending=8, compiler=Oracle(CPU))
    x, = on(dev, data((4,)))
    for i in range(30):
        assert (x * 2 + i).tolist() == (data((4,)) * 2 + i).tolist()  # read: computed, then dropped
    held = [x + i for i in range(3)]
    y = x * 3  # recorded beside 3 pending ops (and 60 done ones): nothing computed yet
    assert y._data.node.value is None and all(h._data.node.value is None for h in held)


def test_a_compiler_that_declines_runs_the_ops_unfused():
    class Declines(Oracle):
        def supports(self, kernel):
            return False
    dev = Fusion(CPU, compiler=Declines(CPU))
    y, t = run(gelu_custom, *on(dev, data((3, 3))))
    assert not any(e.fused() for e in t.kernels) and len(t.kernels) == 5
    assert y.tolist() == gelu_custom(data((3, 3))).tolist()


def test_no_compiler_means_no_recording():
    dev = Fusion(CPU, compiler=False)
    y, t = run(gelu_custom, *on(dev, data((3, 3))))
    assert len(t.kernels) == 5 and y.tolist() == gelu_custom(data((3, 3))).tolist()


def test_bad_stacking_is_refused():
    with pytest.raises(ArgumentError):
        Fusion(Fusion(CPU))
    with pytest.raises(ArgumentError):
        Fusion(Autodiff(CPU))
    with pytest.raises(ember.errors.ArgumentTypeError):
        Fusion("cpu")


def test_explain_prints_the_kernels_and_their_source(dev):
    out = io.StringIO()
    t = explain(gelu_custom, *on(dev, data((4, 4))), file=out)
    text = out.getvalue()
    assert len(t.kernels) == 1 and "1 kernel(s), 1 fused" in text and "source" in text


def test_dtype_errors_are_raised_at_the_op_with_the_unfused_message(dev):
    x, = on(dev, data((2, 3)))
    y = x * 2  # pending
    with pytest.raises(ember.errors.DTypeError) as fused:
        y.bitwise_not()
    with pytest.raises(ember.errors.DTypeError) as plain:
        (data((2, 3)) * 2).bitwise_not()
    assert str(fused.value) == str(plain.value)


def test_moving_into_and_out_of_a_fusion_chain_copies_nothing():
    calls = []

    class Counting(ember.Cpu):
        def to_list(self, a):
            calls.append(a)
            return ember.Cpu.to_list(self, a)
    base = object.__new__(Counting)
    x = ember.tensor([1.0, 2.0, 3.0], device=base)
    top = Autodiff(Fusion(base, compiler=Oracle(base)))
    y = x.to(top)
    assert y.device == top and not calls
    z = (y * 2).to(base)  # computed by one kernel, unwrapped without a host copy
    assert z.device == base and not calls
    assert z.tolist() == [2.0, 4.0, 6.0]
