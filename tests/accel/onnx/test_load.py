"""ember.accel.onnx.load: outputs against onnxruntime, parameters, folding, control flow, and every
way a broken or hostile file must fail."""
import os

import numpy as np
import pytest
from onnx import TensorProto, defs, helper, numpy_helper

import ember
from ember.accel import NumPy
from ember.accel.onnx import load
from ember.errors import ArgumentError, RecordError

from onnx_nets import lenet, ort, single


def _x(batch, seed=1):
    return np.random.default_rng(seed).standard_normal((batch, 1, 12, 12)).astype(np.float32)


@pytest.mark.parametrize("device", [NumPy(), ember.Cpu()], ids=["numpy", "cpu"])
def test_lenet_matches_onnxruntime_with_a_dynamic_batch(device):
    m = lenet()
    model = load(m.SerializeToString(), device=device)
    for batch in (1, 3):
        x = _x(batch)
        got = model(ember.from_numpy(x, device=device)).numpy()
        np.testing.assert_allclose(got, ort(m, x)[0], rtol=1e-4, atol=1e-4)


def test_initializers_are_parameters_with_their_names_and_can_be_trained():
    m = lenet()
    model = load(m.SerializeToString(), device=NumPy())
    names = [n for n, _ in model.named_parameters()]
    assert names[:2] == ["conv1.weight", "conv1.bias"] and "bn.var" in names and "fc2.bias" in names
    assert "zero" not in names and "minus1" not in names  # int initializers are constants
    w = numpy_helper.to_array([t for t in m.graph.initializer if t.name == "fc2.weight"][0])
    np.testing.assert_array_equal(model.state_dict()["fc2.weight"].numpy(), w)
    # a changed parameter changes the output: the graph reads the module's parameters
    x = ember.from_numpy(_x(2), device=NumPy())
    before = model(x).numpy()
    model.fc2.bias = model.fc2.bias + 1.0
    np.testing.assert_allclose(model(x).numpy(), before + 1.0, rtol=1e-5, atol=1e-5)


def test_shape_arithmetic_folds_at_load_when_the_batch_is_fixed():
    from ember.accel.onnx import load_plan
    fixed = load_plan(lenet(batch=2).SerializeToString(), device=NumPy())
    dynamic = load_plan(lenet().SerializeToString(), device=NumPy())
    ops_fixed = [s.node.op_type for s in fixed.steps]
    ops_dynamic = [s.node.op_type for s in dynamic.steps]
    assert "Shape" not in ops_fixed and "Concat" not in ops_fixed and "Gather" not in ops_fixed
    assert "Shape" in ops_dynamic and "Concat" in ops_dynamic
    assert fixed.consts["target"].tolist() == [2, -1]


def test_sanitised_state_dict_keys():
    init = numpy_helper.from_array(np.ones((2,), np.float32), "/enc/layer.0/w:0")
    m = single("Add", [("x", TensorProto.FLOAT, [2])], [("y", TensorProto.FLOAT, [2])], [init])
    model = load(m.SerializeToString(), device=NumPy())
    assert [n for n, _ in model.named_parameters()] == ["_enc_layer.0_w_0"]
    got = model(ember.tensor([1.0, 2.0], device=NumPy())).tolist()
    assert got == [2.0, 3.0]


def test_if_with_a_folding_condition_is_inlined_and_loop_runs_its_trip_count():
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["acc", "x"], ["acc_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [False])),
             helper.make_node("If", ["c"], ["sel"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Constant", [], ["m"], value=helper.make_tensor("m", TensorProto.INT64, [], [4])),
             helper.make_node("Loop", ["m", "", "sel"], ["y"], body=body)]
    g = helper.make_graph(nodes, "ctl", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    x = np.array([1.0, -2.0, 3.0], np.float32)
    got = load(m.SerializeToString(), device=NumPy())(ember.from_numpy(x, device=NumPy())).numpy()
    np.testing.assert_allclose(got, ort(m, x)[0])
    np.testing.assert_allclose(got, -x + 4 * x)


def test_if_whose_condition_is_an_input_picks_its_branch_each_run():
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["o"])], "then", [],
                               [helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["o2"])], "else", [],
                               [helper.make_tensor_value_info("o2", TensorProto.FLOAT, [2])])
    g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then_g, else_branch=else_g)],
                          "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = load(m.SerializeToString(), device=NumPy())
    x = np.array([3.0, -2.0], np.float32)
    for c in (True, False):
        got = model(ember.tensor(c, device=NumPy()), ember.from_numpy(x, device=NumPy())).numpy()
        np.testing.assert_array_equal(got, ort(m, np.array(c), x)[0])


def test_every_unsupported_node_is_listed_in_one_error():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("StringNormalizer", ["a"], ["b"], name="strings"),
             helper.make_node("Conv", ["b", "w"], ["c"], name="odd_conv", kernel_shape=[1], frobnicate=3),
             helper.make_node("Resize", ["c", "", "s"], ["d"], name="lanczos", mode="lanczos")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])],
                          [helper.make_tensor_value_info("d", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.ones((1, 1, 1), np.float32), "w"),
                           numpy_helper.from_array(np.ones(3, np.float32), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(ArgumentError) as e:
        load(m.SerializeToString())
    text = str(e.value)
    assert "3 node(s)" in text
    assert "strings (StringNormalizer, opset 19): op not supported" in text
    assert "odd_conv (Conv, opset 19): attribute(s) frobnicate not supported" in text
    assert "lanczos (Resize, opset 19): resize mode 'lanczos' not supported" in text
    assert "ok (Relu" not in text


def test_truncated_protobuf():
    data = lenet().SerializeToString()
    with pytest.raises(RecordError, match="truncated or not ONNX"):
        load(data[: len(data) // 2])
    with pytest.raises(RecordError, match="empty file"):
        load(b"")


def test_huge_dims_are_refused_before_any_allocation():
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20], raw_data=b"")
    m = single("Add", [("x", TensorProto.FLOAT, [1])], [("y", TensorProto.FLOAT, None)], [t])
    with pytest.raises(RecordError, match=r"tensor 'w': dims \[1048576, 1048576\] hold more than"):
        load(m.SerializeToString())
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=np.ones(2, np.float32).tobytes())
    m = single("Add", [("x", TensorProto.FLOAT, [4])], [("y", TensorProto.FLOAT, None)], [t])
    with pytest.raises(RecordError, match="does not fit its dims"):
        load(m.SerializeToString())


def test_a_cycle_is_named():
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="second")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(RecordError, match=r"expected an acyclic graph, found the cycle first \(Add.*second \(Relu"):
        load(m.SerializeToString())


def test_a_missing_input_is_named():
    m = single("Add", [("x", TensorProto.FLOAT, [1])], [("y", TensorProto.FLOAT, [1])])
    m.graph.node[0].input.append("nowhere")
    with pytest.raises(RecordError, match="reads 'nowhere', which no node, input or initializer produces"):
        load(m.SerializeToString())


def _external_model(tmp_path, location):
    w = np.arange(4, dtype=np.float32)
    t = numpy_helper.from_array(w, "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        e = t.external_data.add()
        e.key, e.value = k, v
    m = single("Add", [("x", TensorProto.FLOAT, [4])], [("y", TensorProto.FLOAT, [4])], [t])
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir()
    path.write_bytes(m.SerializeToString())
    return path, w


def test_external_data_inside_the_folder_loads(tmp_path):
    path, w = _external_model(tmp_path, "weights.bin")
    (path.parent / "weights.bin").write_bytes(w.tobytes())
    got = load(str(path), device=NumPy())(ember.zeros(4, device=NumPy())).numpy()
    np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd", "sub/../../secret.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path, location):
    path, w = _external_model(tmp_path, location)
    (tmp_path / "secret.bin").write_bytes(w.tobytes())
    with pytest.raises(RecordError, match="external-data path inside the model's folder"):
        load(str(path))


def test_external_data_through_a_link_out_of_the_folder_is_refused(tmp_path):
    path, w = _external_model(tmp_path, "link.bin")
    (tmp_path / "secret.bin").write_bytes(w.tobytes())
    os.symlink(tmp_path / "secret.bin", path.parent / "link.bin")
    with pytest.raises(RecordError, match="leads outside the model's folder"):
        load(str(path))


def test_external_data_past_the_end_of_its_file(tmp_path):
    path, w = _external_model(tmp_path, "weights.bin")
    (path.parent / "weights.bin").write_bytes(w.tobytes()[:8])
    with pytest.raises(RecordError, match=r"expected bytes 0..16 of 'weights.bin', but the file has 8 bytes"):
        load(str(path))


def test_opset_out_of_range():
    with pytest.raises(ArgumentError, match=r"expected a default-domain opset in 1\.\.\d+, found 99"):
        load(lenet(opset=99).SerializeToString())


def test_an_imported_model_fine_tunes_under_autodiff():
    import ember.nn.functional as F
    from ember.accel import Autodiff
    from ember.optim import SGD
    dev = Autodiff(NumPy())
    model = load(lenet().SerializeToString(), device=NumPy()).to(dev)
    before = model.conv1.weight.to(NumPy()).numpy().copy()
    x = ember.from_numpy(_x(4), device=NumPy()).to(dev)
    y = ember.tensor([1, 2, 3, 4], device=NumPy()).to(dev)
    opt = SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(4):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8, losses
    assert np.abs(model.conv1.weight.to(NumPy()).numpy() - before).max() > 1e-4  # the first layer learned too


@pytest.mark.parametrize("opset", [7, 11, 13, defs.onnx_opset_version()])
def test_lenet_from_opset_7_to_the_newest(opset):
    m = lenet(opset=opset)
    m.ir_version = 7 if opset < 21 else 10
    x = _x(2)
    got = load(m.SerializeToString(), device=NumPy())(ember.from_numpy(x, device=NumPy())).numpy()
    np.testing.assert_allclose(got, ort(m, x)[0], rtol=1e-4, atol=1e-4)


def test_a_huge_computed_shape_is_refused_not_allocated():
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20], np.int64), "shape")
    m = single("ConstantOfShape", [], [("y", TensorProto.FLOAT, None)], [shape], opset=17)
    with pytest.raises(RecordError, match=r"ConstantOfShape, opset 17\): an output of dims \[1048576, 1048576\]"):
        load(m.SerializeToString())


def test_forward_with_the_wrong_number_of_inputs():
    model = load(lenet().SerializeToString(), device=NumPy())
    with pytest.raises(ArgumentError, match=r"onnx model: expected 1 input\(s\) \(x\), found 2"):
        model(ember.zeros((1, 1, 12, 12), device=NumPy()), ember.zeros(1, device=NumPy()))
