"""The specialised replay of ``OnnxModule``: per input shapes, shape arithmetic folded and the
MatMul+Add / erf-GELU / Identity rewrites; each checked against onnxruntime and against the
plain node-by-node ``run_plan``."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.accel import NumPy
from ember.accel.onnx import load
from ember.accel.onnx.graph import run_plan

from onnx_nets import lenet, ort

DEVICES = [ember.Cpu(kernels="c"), ember.Cpu(kernels="python"), NumPy()]
IDS = ["cpu-c", "cpu-python", "numpy"]


def _init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def _plain(model, *xs):
    """The model's outputs through run_plan, node by node (no replay)."""
    env = dict(model._constants(xs[0].device))
    params = dict(model.named_parameters())
    for onnx_name, path in model._param_paths:
        env[onnx_name] = params[path].value
    env.update(zip(model._inputs, xs))
    run_plan(model._plan, env, xs[0].device)
    return [env[o].numpy() for o in model._outputs]


def ffn(batch="N", seed=0):
    """A torch-style FFN block with a dynamic batch: Shape arithmetic, Identity of a weight,
    MatMul + bias Add, the erf GELU, and a second MatMul + Add read twice (it does not fuse)."""
    r = np.random.default_rng(seed)
    w = lambda *s: (r.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = [_init("w1", w(8, 16)), _init("b1", w(16)), _init("w2", w(16, 8)), _init("b2", w(8)),
             _init("zero", np.array([0], np.int64)),
             _init("shape_tail", np.array([-1, 8], np.int64))]
    n = helper.make_node
    # the GELU's numbers as Constant nodes, as torch exports them (a float initializer would be a
    # parameter, which the replay cannot take for a fixed number)
    consts = [n("Constant", [], [name], value=_init(name, np.array(v, np.float32)))
              for name, v in (("sqrt2", 2 ** 0.5), ("one", 1.0), ("half", 0.5))]
    nodes = consts + [
        n("Identity", ["w1"], ["w1_alias"]),
        n("Shape", ["x"], ["s"]), n("Gather", ["s", "zero"], ["b"], axis=0),
        n("Concat", ["b", "shape_tail"], ["target"], axis=0),
        n("MatMul", ["x", "w1_alias"], ["m1"]), n("Add", ["b1", "m1"], ["h"]),
        n("Div", ["h", "sqrt2"], ["d"]), n("Erf", ["d"], ["e"]), n("Add", ["e", "one"], ["e1"]),
        n("Mul", ["h", "e1"], ["g0"]), n("Mul", ["g0", "half"], ["g"]),
        n("MatMul", ["g", "w2"], ["m2"]), n("Add", ["m2", "b2"], ["y0"]),
        n("Mul", ["m2", "half"], ["side"]),  # m2 is read twice: the second MatMul+Add stays apart
        n("Add", ["y0", "side"], ["y1"]), n("Reshape", ["y1", "target"], ["y"]),
    ]
    g = helper.make_graph(nodes, "ffn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 5, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
def test_ffn_replay_matches_onnxruntime_and_run_plan(device):
    m = ffn()
    model = load(m.SerializeToString(), device=device)
    for batch in (1, 3, 1, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 5, 8)).astype(np.float32)
        xe = ember.from_numpy(x, device=device)
        want = ort(m, x)[0]
        for _ in range(2):  # the first call specialises, the second replays
            np.testing.assert_allclose(model(xe).numpy(), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(_plain(model, xe)[0], want, rtol=1e-5, atol=1e-5)
    assert len(model._replays) == 3  # one per batch size seen
    replay = model._replays[next(iter(model._replays))]
    ops = sorted(c[1].op_type + ":" + c[0].__name__ for c in replay.generic or replay.calls)
    # Shape/Gather/Concat folded, Identity aliased, one MatMul+Add and the GELU fused (the shared m2 not),
    # the Reshape a precomputed view program (on the C Cpu each but the MatMul then a direct C call, lower_c.py)
    assert (replay.generic is not None) == (device is DEVICES[0])
    assert ops == ["Add:<lambda>", "Add:<lambda>", "Add:_linear", "MatMul:matmul", "Mul:<lambda>", "Mul:_gelu",
                   "Reshape:_movement"], ops


def test_replay_reads_new_parameter_values():
    m = ffn()
    device = ember.Cpu(kernels="c")
    model = load(m.SerializeToString(), device=device)
    x = ember.from_numpy(np.ones((2, 5, 8), np.float32), device=device)
    before = model(x).numpy()
    model(x)
    state = {k: v * 2.0 for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    after = model(x).numpy()
    np.testing.assert_allclose(after, _plain(model, x)[0], rtol=1e-5, atol=1e-5)
    assert np.abs(after - before).max() > 1e-3


def test_shape_of_a_data_dependent_value_is_not_folded():
    """Shape(NonZero(x)) depends on the values of x, not only its shape: never a replay constant."""
    n = helper.make_node
    nodes = [n("NonZero", ["x"], ["nz"]), n("Shape", ["nz"], ["s"]), n("Cast", ["s"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "nz", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    device = ember.Cpu(kernels="c")
    model = load(m.SerializeToString(), device=device)
    for x in ([1.0, 0.0, 2.0, 0.0], [1.0, 3.0, 2.0, 4.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 5.0, 0.0]):
        a = np.array(x, np.float32)
        got = model(ember.from_numpy(a, device=device)).numpy()
        np.testing.assert_array_equal(got, ort(m, a)[0])


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
def test_lenet_replay_equals_run_plan(device):
    m = lenet()
    model = load(m.SerializeToString(), device=device)
    x = np.random.default_rng(3).standard_normal((2, 1, 12, 12)).astype(np.float32)
    xe = ember.from_numpy(x, device=device)
    model(xe)
    np.testing.assert_allclose(model(xe).numpy(), _plain(model, xe)[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(model(xe).numpy(), ort(m, x)[0], rtol=1e-4, atol=1e-4)


def test_loop_body_reads_a_folded_value_of_the_outer_scope():
    """A Loop body reading a value the replay folded (a float made from the batch size)."""
    n = helper.make_node
    body = helper.make_graph(
        [n("Identity", ["cond"], ["cond_out"]), n("Add", ["acc", "bf"], ["acc_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, None)])
    nodes = [n("Shape", ["x"], ["s"]), n("Gather", ["s", "zero"], ["b"], axis=0),
             n("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
             n("Loop", ["trip", "", "x"], ["y"], body=body)]
    g = helper.make_graph(nodes, "loop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [_init("zero", np.array(0, np.int64)), _init("trip", np.array(3, np.int64))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    device = ember.Cpu(kernels="c")
    model = load(m.SerializeToString(), device=device)
    for batch in (2, 2, 5, 5):
        x = np.arange(batch * 2, dtype=np.float32).reshape(batch, 2)
        got = model(ember.from_numpy(x, device=device)).numpy()
        np.testing.assert_allclose(got, x + 3.0 * batch)
        np.testing.assert_allclose(got, ort(m, x)[0])
