"""The five real models of issue 16 (ResNet-18, MobileNetV2-style inverted residuals, a small
BERT-like encoder, an LSTM tagger, LeNet-5; random weights), exported by torch.onnx.export into
tests/.cache/onnx at first use (tools/onnx_fixtures.py), against onnxruntime's outputs (1e-4):

- the ember twin (the same model code on ember.nn, loaded with torch's weights), and its export;
- the importer: ember.accel.onnx.load of torch's file, and that module exported again.
"""
import importlib.util
import os

import numpy as np
import pytest

import ember
import ember.nn as nn

onnx = pytest.importorskip("onnx", reason="the ONNX model tests need onnx (pip install ember[dev])")
ort = pytest.importorskip("onnxruntime", reason="the ONNX model tests need onnxruntime (pip install ember[dev])")
torch = pytest.importorskip("torch", reason="the ONNX fixtures are made with torch==2.13.0 (pip install ember[dev])")

from ember.accel import from_numpy  # noqa: E402
from ember.accel.onnx import export  # noqa: E402

_TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "onnx_fixtures.py")
_spec = importlib.util.spec_from_file_location("onnx_fixtures", _TOOL)
fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fixtures)

CASES = fixtures.MODELS
TOL = 1e-4


def _fixture(name):
    folder = fixtures.ensure(names=(name,))
    base = os.path.join(folder, name)
    return base + ".onnx", np.load(base + ".input.npy"), np.load(base + ".expected.npy"), np.load(base + ".npz")


def _ember(a):
    return from_numpy(a).to("cpu")


def _ort(path, x):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _batch_of_two(x):
    other = fixtures.example_input("encoder" if x.dtype == np.int64 else "other", x.shape, seed=fixtures.SEED + 1)
    return np.concatenate([x, other], 0)


def _roundtrip(module, x, expected, path):
    """Export ``module``, check the file, and compare onnxruntime with ``expected`` at batch 1 and with
    the module itself at batch 2."""
    export(module, _ember(x), path)
    onnx.checker.check_model(path, full_check=True)
    np.testing.assert_allclose(_ort(path, x), expected, rtol=TOL, atol=TOL)
    x2 = _batch_of_two(x)
    np.testing.assert_allclose(_ort(path, x2), module(_ember(x2)).numpy(), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("case", CASES)
def test_ember_twin_matches_onnxruntime_and_round_trips(case, tmp_path):
    path, x, expected, state = _fixture(case)
    model, _ = fixtures.build(case, nn, ember)
    report = model.load_state_dict({k: _ember(state[k]) for k in state.files})
    assert not report.missing and not report.unexpected and not report.mismatched
    model.eval()
    np.testing.assert_allclose(model(_ember(x)).numpy(), expected, rtol=TOL, atol=TOL)
    _roundtrip(model, x, expected, str(tmp_path / (case + ".onnx")))


@pytest.mark.parametrize("case", CASES)
def test_import_matches_onnxruntime_and_round_trips(case, tmp_path):
    import ember.accel.onnx as eonnx
    if not hasattr(eonnx, "load"):
        pytest.fail("ember.accel.onnx.load is missing: these tests need the importer (issue 16 item 1)")
    path, x, expected, _ = _fixture(case)
    model = eonnx.load(path)
    np.testing.assert_allclose(model(_ember(x)).numpy(), expected, rtol=TOL, atol=TOL)
    _roundtrip(model, x, expected, str(tmp_path / (case + ".onnx")))
