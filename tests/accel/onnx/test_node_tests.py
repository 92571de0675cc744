"""The official ONNX node tests ember passes (tests/accel/onnx/node_tests_passing.txt, written by
``tools/onnx_coverage.py --write-passing``) keep passing: every one on NumPy, every 12th on the
pure Cpu. ``make onnx-coverage`` runs them all and reports what fails."""
import os

import pytest

import ember
from ember.accel import NumPy
from ember.accel.onnx.backend import run_node_test
from ember.accel.onnx.nodetests import node_test_dir

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "node_tests_passing.txt")) as _f:
    PASSING = [line.strip() for line in _f if line.strip()]


@pytest.fixture(scope="module")
def root():
    return node_test_dir()


@pytest.mark.parametrize("name", PASSING)
def test_node_test_on_numpy(root, name):
    ok, why = run_node_test(os.path.join(root, name), NumPy())
    assert ok, why


@pytest.mark.parametrize("name", PASSING[::12])
def test_node_test_on_cpu(root, name):
    ok, why = run_node_test(os.path.join(root, name), ember.Cpu())
    assert ok, why


def test_the_list_covers_the_quantized_operators():
    for name in ("test_quantizelinear", "test_dequantizelinear", "test_qlinearconv", "test_qlinearmatmul_2D_uint8_float32",
                 "test_matmulinteger", "test_convinteger_with_padding"):
        assert name in PASSING, name
