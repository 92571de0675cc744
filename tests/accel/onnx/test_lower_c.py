"""The replay's calls on the C-backed Cpu (accel/onnx/lower_c.py): each lowered call against numpy
and bit for bit against the frontend call it replaces, on dense and strided inputs; and the
fallback to that call wherever the C path does not apply (another dtype, device or layout, a bad
index)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.accel.onnx import lower_c
from ember.accel.onnx.fuse import _plan, _view
from ember.errors import IndexOutOfRange, ShapeError

from test_fuse import _numpy_program, _random_program

C = ember.Cpu(kernels="c")


def t(a, device=C):
    return ember.from_numpy(np.ascontiguousarray(a), device=device)


def _sources(r, shape, dtype):
    """(numpy values, ember tensor) of ``shape``: dense, a permuted view, a narrowed view, a permuted
    and narrowed view (each a different layout of the lowered call's input)."""
    a = (r.standard_normal(shape) * 10).astype(dtype)
    yield a, t(a)
    perm = tuple(range(len(shape)))[::-1]
    yield a, t(a.transpose(perm)).permute(perm)
    big = np.concatenate([a, a + 1], axis=0)
    yield a, t(big).narrow(0, 0, shape[0])
    yield a, t(big.transpose(perm)).permute(perm).narrow(0, 0, shape[0])


class Spy:
    """A generic call that records that it ran (the lowered call fell back to it)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, node, *args):
        self.calls += 1
        return self.fn(node, *args)


def test_movement_programs_give_numpys_values_from_every_source_layout():
    r = np.random.default_rng(5)
    shapes = [(2, 3, 4), (6, 1, 4), (1, 12, 2), (4, 6)]
    for trial in range(160):
        shape = shapes[trial % len(shapes)]
        steps = tuple(_plan(shape, _random_program(r, shape)))
        call = lower_c.movement(steps, Spy(_view(steps)))
        for a, x in _sources(r, shape, np.float32 if trial % 2 else np.int64):
            want = _numpy_program(a, steps)
            got = call(None, x)
            assert got.shape == want.shape and got.dtype == x.dtype and (got.numpy() == want).all(), (shape, steps)
            assert (call(None, x).numpy() == want).all()  # the plan kept for this layout, run again
        assert call.__closure__ is not None and call.steps == steps


def test_a_movement_that_moves_no_data_is_a_view_of_its_source_and_a_reshape_of_a_permute_copies_once():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = t(a)
    steps = ((0, (6, 4)), (2, 0, 1, 3))  # reshape, then narrow rows 1..3: a view
    y = lower_c.movement(steps, _view(steps))(None, x)
    assert y._data.data is x._data.data and (y.numpy() == a.reshape(6, 4)[1:4]).all()
    steps = ((1, (2, 0, 1)), (0, (8, 3)))  # permute then a reshape merging dims that do not nest: one copy
    y = lower_c.movement(steps, _view(steps))(None, x)
    assert y._data.strides is None and (y.numpy() == a.transpose(2, 0, 1).reshape(8, 3)).all()
    steps = ((1, (2, 0, 1)), (0, (4, 6)))  # the merged dims nest: a view again
    y = lower_c.movement(steps, _view(steps))(None, x)
    assert y._data.data is x._data.data and (y.numpy() == a.transpose(2, 0, 1).reshape(4, 6)).all()


def test_movement_falls_back_off_the_c_path():
    steps = ((1, (1, 0)),)
    generic = Spy(_view(steps))
    call = lower_c.movement(steps, generic)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for x in (t(a, ember.Cpu(kernels="python")), t(a) > 2):  # list-backed storage: the generic steps
        assert (call(None, x).numpy() == (a if x.dtype.kind == "f" else a > 2).T).all()
    assert generic.calls == 2


def _sdpa(scale):
    return Spy(lambda node, q, k, v: F.scaled_dot_product_attention(q, k, v, scale=scale))


def test_attention_is_the_composites_kernels_bit_for_bit_on_strided_heads():
    r = np.random.default_rng(7)
    L, S, E, Ev = 5, 7, 4, 3
    qkv = r.standard_normal((S, 2, 3, 3, E)).astype(np.float32)  # torch's packed projection layout
    packed = t(qkv).permute((2, 1, 3, 0, 4))  # (3, batch, heads, S, E), a strided view
    q = packed.narrow(0, 0, 1).reshape((2, 3, S, E)).narrow(2, 0, L)
    k = packed.narrow(0, 1, 1).reshape((2, 3, S, E))
    v = t(r.standard_normal((2, 3, S, Ev)).astype(np.float32))
    generic = _sdpa(0.37)
    call = lower_c.attention(0.37, generic)
    for qq, kk, vv in ((q, k, v), (t(q.numpy()), t(k.numpy()), v)):
        got, want = call(None, qq, kk, vv), F.scaled_dot_product_attention(qq, kk, vv, scale=0.37)
        assert got.shape == (2, 3, L, Ev) and np.array_equal(got.numpy(), want.numpy())
    s = q.numpy() @ k.numpy().transpose(0, 1, 3, 2) * 0.37
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(got.numpy(), (p / p.sum(-1, keepdims=True)) @ v.numpy(), rtol=1e-5, atol=1e-6)
    assert generic.calls == 0
    d = [x.to(ember.float64) for x in (q, k, v)]
    np.testing.assert_allclose(call(None, *d).numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert generic.calls == 1


def test_gather_reads_rows_and_leaves_negative_and_bad_indices_to_the_onnx_op():
    r = np.random.default_rng(3)
    table = r.standard_normal((10, 4)).astype(np.float32)

    def onnx_gather(node, x, idx):  # the ONNX op: negatives wrap, others raise
        i = idx.numpy()
        if (i >= x.shape[0]).any() or (i < -x.shape[0]).any():
            raise IndexOutOfRange("gather: index out of range")
        return t(np.take(x.numpy(), i, axis=0))
    cases = ((0, t(table), table), (1, t(table.T).permute((1, 0)), table), (0, t(table[:, :3]), table[:, :3]))
    for axis, x, src in cases:
        generic = Spy(onnx_gather if axis == 0 else lambda node, x, idx: t(np.take(x.numpy(), idx.numpy(), axis=1)))
        call = lower_c.gather(axis, generic)
        idx = np.array([[3, 0, 2], [2, 1, 1]], np.int64)
        got = call(None, x, t(idx))
        assert got.shape == np.take(src, idx, axis=axis).shape
        assert (got.numpy() == np.take(src, idx, axis=axis)).all() and generic.calls == 0
    call = lower_c.gather(0, Spy(onnx_gather))
    assert (call(None, t(table), t(np.array([-1, 2], np.int64))).numpy() == table[[-1, 2]]).all()
    with pytest.raises(IndexOutOfRange):
        call(None, t(table), t(np.array([10], np.int64)))


def test_linear_layer_norm_gelu_and_elementwise_equal_the_frontend_calls():
    r = np.random.default_rng(11)
    x = t(r.standard_normal((2, 5, 6)).astype(np.float32))
    w_out_in = t(r.standard_normal((3, 6)).astype(np.float32))
    b = t(r.standard_normal((3,)).astype(np.float32))
    want = F.linear(x, w_out_in, b).numpy()
    assert np.array_equal(lower_c.linear(True, None)(None, x, w_out_in, b).numpy(), want)
    w_in_out = t(w_out_in.numpy().T)
    assert np.array_equal(lower_c.linear(False, None)(None, x, w_in_out, b).numpy(), want)
    assert np.array_equal(lower_c.linear(False, None)(None, x, w_out_in.T, b).numpy(), want)  # a strided weight
    np.testing.assert_allclose(want, x.numpy() @ w_out_in.numpy().T + b.numpy(), rtol=1e-5, atol=1e-5)
    generic = Spy(lambda node, x, w, b: F.linear(x, w, b))
    strided = x.permute((1, 0, 2)).permute((1, 0, 2))
    assert np.array_equal(lower_c.linear(True, generic)(None, strided.narrow(1, 0, 4), w_out_in, b).numpy(),
                          want[:, :4]) and generic.calls == 1

    wn, bn = t(r.standard_normal((6,)).astype(np.float32)), t(r.standard_normal((6,)).astype(np.float32))
    norm = lower_c.layer_norm(6, 1e-5, None)
    assert np.array_equal(norm(None, x, wn, bn).numpy(), F.layer_norm(x, (6,), wn, bn, 1e-5).numpy())
    m = x.numpy().mean(-1, keepdims=True)
    ref = (x.numpy() - m) / np.sqrt(x.numpy().var(-1, keepdims=True) + 1e-5) * wn.numpy() + bn.numpy()
    np.testing.assert_allclose(norm(None, x, wn, bn).numpy(), ref, rtol=1e-4, atol=1e-5)
    generic = Spy(lambda node, x, w, b=None: F.layer_norm(x, (6,), w, b, 1e-5))
    got = lower_c.layer_norm(6, 1e-5, generic)(None, x, wn)  # no bias: the generic call
    assert np.array_equal(got.numpy(), F.layer_norm(x, (6,), wn, None, 1e-5).numpy()) and generic.calls == 1

    assert np.array_equal(lower_c.gelu(None)(None, x).numpy(), F.gelu(x).numpy())
    for op, fn in (("Tanh", np.tanh), ("Sigmoid", lambda a: 1 / (1 + np.exp(-a))), ("Exp", np.exp), ("Abs", np.abs),
                   ("Neg", np.negative), ("Sqrt", lambda a: np.sqrt(np.abs(a)))):
        y = x.abs() if op == "Sqrt" else x
        got = lower_c.unary(op, None)(None, y).numpy()
        np.testing.assert_allclose(got, fn(x.numpy()), rtol=1e-5, atol=1e-6)
        assert np.array_equal(got, getattr(y, op.lower())().numpy())


@pytest.mark.parametrize("op", sorted(lower_c.BINARY))
def test_binary_broadcasts_strided_operands_as_the_frontend_does(op):
    r = np.random.default_rng(13)
    fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op]
    eager = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b}[op]
    generic = Spy(lambda node, a, b: eager(a, b))
    call = lower_c.binary(op, generic)
    a = r.standard_normal((2, 3, 4)).astype(np.float32)
    for b in (r.standard_normal((3, 4)), r.standard_normal((2, 1, 4)), r.standard_normal((1,)), a):
        b = b.astype(np.float32)
        for x, y in ((t(a), t(b)), (t(a.transpose(2, 0, 1)).permute((1, 2, 0)), t(b)), (t(b), t(a))):
            got = call(None, x, y)
            want = fn(x.numpy(), y.numpy())
            assert got.shape == want.shape and np.array_equal(got.numpy(), want)
            assert np.array_equal(got.numpy(), eager(x, y).numpy())
    assert generic.calls == 0
    d = a.astype(np.float64)
    got = call(None, t(d), t(d))  # float64: the frontend's op
    assert np.array_equal(got.numpy(), fn(d, d)) and generic.calls == 1
    with pytest.raises(ShapeError):
        call(None, t(a), t(np.ones((5,), np.float32)))  # shapes that do not broadcast: the op's error


def test_a_step_capture_of_a_loaded_model_records_the_frontend_calls_and_replays():
    """Under ``ember.accel.compile`` the replay runs the frontend calls lower_c replaces (its direct
    kernel calls make arrays outside the device's primitives, which a trace cannot replay)."""
    from onnx import TensorProto, helper, numpy_helper
    from ember.accel import compile
    from ember.accel.onnx import load
    from onnx_nets import ort
    r = np.random.default_rng(17)
    w = numpy_helper.from_array(r.standard_normal((6, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(r.standard_normal((4,)).astype(np.float32), "b")
    perm = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["l"]),
            helper.make_node("Transpose", ["l"], ["t"], perm=[1, 0]), helper.make_node("Tanh", ["t"], ["y"])]
    g = helper.make_graph(perm, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = load(m.SerializeToString(), device=C)
    x = r.standard_normal((3, 6)).astype(np.float32)
    xe = t(x)
    model(xe)  # the first call runs the plan node by node and specialises it
    eager = model(xe).numpy()  # the replay, lower_c's calls
    replay = model._replays[next(iter(model._replays))]
    assert [hasattr(c[0], "generic") for c in replay.calls] == [True, True, True], replay.calls
    step = compile(lambda v: model(v))
    for _ in range(4):
        got = step(xe).numpy()
    assert step.stats.get("replayed", 0) >= 1, (step.stats, step.refused)
    assert np.array_equal(got, eager)
    np.testing.assert_allclose(got, ort(m, x)[0], rtol=1e-5, atol=1e-6)


def test_a_call_seeing_many_layouts_keeps_giving_the_right_values():
    steps = ((1, (1, 0)), (0, (12,)))
    call = lower_c.movement(steps, _view(steps))
    big = np.arange(4 * 3 * (lower_c.PLANS + 4), dtype=np.float32).reshape(-1, 3)
    for start in range(lower_c.PLANS + 4):  # each narrow a new offset: a new layout, plans dropped past PLANS
        x = t(big).narrow(0, start, 4)
        assert (call(None, x).numpy() == big[start:start + 4].T.reshape(12)).all()
