"""Gradient checks for the composed math and activations (ember/special.py, nn.functional): autodiff
against central finite differences in float64 on every inner backend (test_gradcheck's machinery),
and the gradients PyTorch gives where finite differences cannot look (large inputs, ties, bounds)."""
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff
from test_gradcheck import _inner_devices, c, test_gradient_matches_finite_differences as _check

CASES = [
    c("asinh", lambda x: x.asinh(), (2, 3), low=-3.0, high=3.0),
    c("acosh", lambda x: x.acosh(), (2, 3), low=1.2, high=4.0),
    c("atanh", lambda x: x.atanh(), (2, 3), low=-0.8, high=0.8),
    c("log2", lambda x: x.log2(), (2, 3), low=0.5, high=3.0),
    c("log10", lambda x: x.log10(), (2, 3), low=0.5, high=3.0),
    c("exp2", lambda x: x.exp2(), (2, 3)),
    c("logaddexp.broadcast", lambda a, b: a.logaddexp(b), (2, 3), (3,)),
    c("logaddexp2", lambda a, b: a.logaddexp2(b), (2, 3), (2, 3)),
    c("logaddexp.scalar", lambda a: a.logaddexp(0.5), (2, 3)),
    c("copysign", lambda a, b: a.copysign(b), (2, 3), (2, 3)),
    c("fmod", lambda a, b: a.fmod(b), (2, 3), (2, 3), low=0.3, high=1.0),
    c("fmod.broadcast", lambda a, b: a.fmod(b), (2, 3), (3,), low=0.3, high=1.0),
    c("lerp.scalar", lambda a, b: a.lerp(b, 0.3), (2, 3), (2, 3)),
    c("lerp.tensor", lambda a, b, w: a.lerp(b, w), (2, 3), (2, 3), (2, 3)),
    c("softsign", lambda x: F.softsign(x), (2, 5)),
    c("celu", lambda x: F.celu(x, 0.5), (2, 5)),
    c("selu", lambda x: F.selu(x), (2, 5)),
    c("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.5), (2, 5)),
    c("relu6", lambda x: F.relu6(x * 8), (2, 5)),
    c("logsigmoid", lambda x: F.logsigmoid(x), (2, 5)),
    c("softmin", lambda x: F.softmin(x, 1), (3, 4)),
    c("normalize", lambda x: F.normalize(x), (3, 4)),
    c("normalize.p3", lambda x: F.normalize(x, p=3, dim=0), (3, 4), low=0.2, high=1.0),
    c("softplus.beta", lambda x: F.softplus(x, 2.0, 1.0), (2, 5)),
    c("Tensor.softmax", lambda x: x.softmax(0), (3, 4)),
    c("Tensor.log_softmax", lambda x: x.log_softmax(1), (3, 4)),
]


@pytest.mark.parametrize("case", CASES, ids=[k.name for k in CASES])
@pytest.mark.parametrize("checkpointing", [False, True], ids=["kept", "checkpointed"])
@pytest.mark.parametrize("inner", [d for _, d in _inner_devices()], ids=[n for n, _ in _inner_devices()])
def test_gradient_matches_finite_differences(inner, checkpointing, case):
    _check(inner, checkpointing, case)


# Where PyTorch defines the gradient at a point finite differences cannot probe: large inputs whose
# discarded branch overflows (softplus' NaN in [300, 400] of issue 22), ties and bounds.
TORCH = [
    ("softplus", lambda x: F.softplus(x), lambda x: torch.nn.functional.softplus(x), [300.0, 350.0, 400.0, 1e4, 20.5, -500.0]),
    ("softplus.beta", lambda x: F.softplus(x, 0.5, 10.0), lambda x: torch.nn.functional.softplus(x, 0.5, 10.0),
     [300.0, 19.0, 21.0, 1e4, -1e4]),
    ("elu", lambda x: F.elu(x), lambda x: torch.nn.functional.elu(x), [100.0, 1e4, -1e4, 0.0]),
    ("celu", lambda x: F.celu(x), lambda x: torch.nn.functional.celu(x), [100.0, 1e4, -1e4]),
    ("selu", lambda x: F.selu(x), lambda x: torch.nn.functional.selu(x), [100.0, 1e4, -1e4]),
    ("hardtanh", lambda x: F.hardtanh(x), lambda x: torch.nn.functional.hardtanh(x), [-1.0, 1.0, 0.5, -3.0]),
    ("relu6", lambda x: F.relu6(x), lambda x: torch.nn.functional.relu6(x), [0.0, 6.0, 3.0, 7.0]),
    ("logsigmoid", lambda x: F.logsigmoid(x), lambda x: torch.nn.functional.logsigmoid(x), [0.0, -1e4, 1e4]),
    ("asinh", lambda x: x.asinh(), lambda x: x.asinh(), [1e30, -1e30, 0.0, 3e9]),
    ("acosh", lambda x: x.acosh(), lambda x: x.acosh(), [1e30, 3e9, 2.0]),
    ("logaddexp.tie", lambda x: x.logaddexp(x.detach()), lambda x: x.logaddexp(x.detach()), [0.0, 5.0, -300.0]),
    ("logaddexp.far", lambda x: x.logaddexp(x.detach() * 0 + 1e4), lambda x: x.logaddexp(x.detach() * 0 + 1e4), [0.0, 5.0]),
    ("copysign", lambda x: x.copysign(-1.0), lambda x: x.copysign(-1.0), [2.0, -3.0]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,ref,values", TORCH, ids=[t[0] for t in TORCH])
@pytest.mark.parametrize("inner", [d for _, d in _inner_devices()], ids=[n for n, _ in _inner_devices()])
def test_gradient_matches_pytorch_at_edges(inner, name, fn, ref, values, dtype):
    dev = Autodiff(inner)
    x = ember.tensor(values, dtype=getattr(ember, dtype), device=dev).requires_grad_()
    got = x.grad(fn(x).sum().backward()).tolist()
    xt = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    ref(xt).sum().backward()
    want = xt.grad.tolist()
    for a, b in zip(got, want):
        assert a == pytest.approx(b, rel=1e-6, abs=1e-7), "%s: gradient %s, PyTorch %s" % (name, got, want)


@pytest.mark.parametrize("inner", [d for _, d in _inner_devices()], ids=[n for n, _ in _inner_devices()])
def test_softmax_dtype_gradient_comes_back_in_the_input_dtype(inner):
    dev = Autodiff(inner)
    vals = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
    x = ember.tensor(vals, dtype=ember.float16, device=dev).requires_grad_()
    w = ember.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], device=dev)
    g = x.grad((F.log_softmax(x, 1, dtype=ember.float32) * w).sum().backward())
    xt = torch.tensor(vals, dtype=torch.float16, requires_grad=True)
    (torch.nn.functional.log_softmax(xt, 1, dtype=torch.float32) * torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])).sum().backward()
    assert g.dtype is ember.float16
    assert g.tolist() == xt.grad.tolist()
    s = x.grad((x.softmax(0, dtype=ember.float32) * w).sum().backward())
    xt.grad = None
    (xt.softmax(0, dtype=torch.float32) * torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])).sum().backward()
    assert s.dtype is ember.float16 and s.reshape(-1).tolist() == pytest.approx(xt.grad.reshape(-1).tolist(), abs=1e-3)
