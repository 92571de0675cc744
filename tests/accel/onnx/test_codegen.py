"""ember import-onnx: the generated Module equals load()'s and onnxruntime's outputs, on CPython and
on MicroPython's unix port."""
import importlib.util
import numpy as np
import pytest

import ember
from ember import record
from ember.accel.cli import main
from ember.accel.onnx import load
from ember.errors import ArgumentError

from onnx import TensorProto, helper, numpy_helper
from onnx_nets import lenet, ort


def _import(py):
    spec = importlib.util.spec_from_file_location("generated_%d" % abs(hash(py)), py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("lenet")
    src = d / "lenet.onnx"
    m = lenet()
    src.write_bytes(m.SerializeToString())
    assert main(["import-onnx", str(src), str(d / "out")]) == 0
    return m, d / "out" / "lenet.py", d / "out" / "lenet.safetensors"


def test_generated_code_is_plain_ember_with_named_layers(generated):
    _, py, _ = generated
    text = py.read_text()
    assert "self.conv1 = nn.Conv2d(1, 4, (3, 3)" in text and "self.fc2 = nn.Linear(16, 10" in text
    assert "self.bn = nn.BatchNorm2d(8" in text
    imports = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert all(line.split()[1].startswith("ember") for line in imports), imports
    assert "onnx" not in "\n".join(imports)


def test_generated_module_matches_load_and_onnxruntime(generated):
    m, py, rec = generated
    model = _import(str(py)).Model.from_record(str(rec))
    runtime = load(m.SerializeToString())
    for batch in (1, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 1, 12, 12)).astype(np.float32)
        got = model(ember.from_numpy(x, device=ember.Cpu())).numpy()
        np.testing.assert_allclose(got, runtime(ember.from_numpy(x, device=ember.Cpu())).numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, ort(m, x)[0], rtol=1e-4, atol=1e-4)
    assert sorted(n for n, _ in model.named_parameters())[:2] == ["bn.bias", "bn.weight"]


SCRIPT = '''import ember
from ember import record
from lenet import Model
HERE = __file__.rsplit("/", 1)[0] if "/" in __file__ else "."
device = ember.Cpu(kernels="python")
model = Model.from_record(HERE + "/lenet.safetensors")
with record.open(HERE + "/input.safetensors") as r:
    x = r.read("x", device=device)
y = model(x)
print("out:" + " ".join(repr(v) for v in y.reshape(-1).tolist()))
'''


def test_generated_lenet_runs_under_micropython(generated):
    from ember.accel.deploy.micropython import find_micropython, run_script
    find_micropython()  # a dev dependency: missing it is a failure, not a skip
    m, py, rec = generated
    out = py.parent
    x = np.random.default_rng(7).standard_normal((2, 1, 12, 12)).astype(np.float32)
    record.write(str(out / "input.safetensors"), [("x", ember.from_numpy(x))])
    (out / "run_lenet.py").write_text(SCRIPT)
    status, lines = run_script(str(out / "run_lenet.py"))
    assert status == 0, "\n".join(lines)
    values = [float(v) for line in lines if line.startswith("out:") for v in line[4:].split()]
    np.testing.assert_allclose(np.array(values).reshape(2, 10), ort(m, x)[0], rtol=1e-4, atol=1e-4)


def test_nodes_without_code_generation_are_listed_in_one_error(tmp_path):
    nodes = [helper.make_node("Einsum", ["x", "x"], ["a"], name="contract", equation="ij,ij->i"),
             helper.make_node("Relu", ["a"], ["b"], name="fine"),
             helper.make_node("CumSum", ["b", "ax"], ["c"], name="scan")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])],
                          [numpy_helper.from_array(np.array(0, np.int64), "ax")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    src = tmp_path / "m.onnx"
    src.write_bytes(m.SerializeToString())
    from ember.accel.onnx.codegen import generate
    with pytest.raises(ArgumentError) as e:
        generate(str(src))
    text = str(e.value)
    assert "2 node(s) have no code generation" in text
    assert "contract (Einsum, opset 17)" in text and "scan (CumSum, opset 17)" in text and "fine" not in text
    assert main(["import-onnx", str(src), str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out" / "m.py").exists()
