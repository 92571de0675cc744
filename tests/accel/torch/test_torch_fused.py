"""The Torch device's fused linear, relu, softmax and log_softmax against the composites' bodies,
and the composites' own errors where the fused path steps aside."""
import pytest

import ember
import ember.nn.functional as F
from ember.accel import Autodiff, Torch
from ember.composite import COMPOSITES
from ember.errors import ShapeError
from harness.check import assert_close

TOL = {ember.float32: 1e-6, ember.float64: 1e-12, ember.bfloat16: 1e-2, ember.float16: 2e-3}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16, ember.float16])
def test_fused_paths_match_the_composites(dtype):
    ember.seed(3)
    x = ember.randn(4, 2, 5, device=Torch()).to(dtype)
    w = ember.randn(3, 5, device=Torch()).to(dtype)
    b = ember.randn(3, device=Torch()).to(dtype)
    tol = TOL[dtype]
    cases = [("linear", F.linear(x, w, b), COMPOSITES["linear"](x, w, b)),
             ("linear-nobias", F.linear(x, w), COMPOSITES["linear"](x, w)),
             ("relu", F.relu(x), COMPOSITES["relu"](x)),
             ("softmax", F.softmax(x, dim=1), COMPOSITES["softmax"](x, 1)),
             ("log_softmax", F.log_softmax(x, dim=-1), COMPOSITES["log_softmax"](x, -1))]
    for name, got, want in cases:
        assert got.dtype is want.dtype and got.shape == want.shape and got.device == Torch(), name
        assert_close(got.float(), want.float().tolist(), rtol=tol, atol=tol, msg=name)


def test_gradients_through_fused_paths_match_the_cpu():
    ember.seed(4)
    vals = [ember.randn(6, 5), ember.randn(3, 5), ember.randn(3)]
    grads = []
    for dev in (Autodiff(ember.Cpu()), Autodiff(Torch())):
        x, w, b = [v.to(dev).requires_grad_() for v in vals]
        loss = (F.log_softmax(F.relu(F.linear(x, w, b)), dim=1) * F.softmax(x[:, :3], dim=1)).sum()
        g = loss.backward()
        grads.append([t.grad(g).tolist() for t in (x, w, b)])
    for got, want in zip(grads[1], grads[0]):
        assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_what_the_fused_path_cannot_take_gets_the_composites_error():
    x = ember.ones(2, 4, device=Torch())
    with pytest.raises(ShapeError, match="matmul: expected a.shape\\[-1\\] == b.shape\\[-2\\]"):
        F.linear(x, ember.ones(3, 5, device=Torch()))
    with pytest.raises(ShapeError, match="linear: expected bias of shape \\(3,\\)"):
        F.linear(x, ember.ones(3, 4, device=Torch()), ember.ones(4, device=Torch()))
    assert F.linear(x, ember.ones(3, 4, device=Torch()).double()).dtype is ember.float64  # promotion, as the composite
