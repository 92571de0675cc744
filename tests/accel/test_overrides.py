"""Override resolution (ember.composite): along the device class's bases, then down the decorator
chain; users' overrides beat built-in fused paths; forward and backward chosen apart."""
import pytest
import torch

import ember
import ember.backends.cpu
import ember.nn.functional as F
from ember import composite
from ember.accel import Autodiff
from ember.backends.cpu.cdevice import CpuC

from test_decorators import Passthrough

C = ember.Cpu(kernels="c")


class counted_fused:
    """Wraps CpuC's fused paths for ``names`` and counts their calls; restores them on exit."""

    def __init__(self, *names):
        self.names = names
        self.calls = {n: 0 for n in names}

    def __enter__(self):
        self.saved = dict(composite.FUSED[CpuC])

        def counting(name, fn):
            def run(*args, **kwargs):
                self.calls[name] += 1
                return fn(*args, **kwargs)
            return run
        composite.register_fused(CpuC, {n: counting(n, self.saved[n]) for n in self.names})
        return self.calls

    def __exit__(self, *exc):
        composite.register_fused(CpuC, self.saved)
        return False


def _flat(v):
    return [x for row in v for x in _flat(row)] if type(v) is list else [v]


def close(a, b, tol=1e-5):
    return _flat(a) == pytest.approx(_flat(b), rel=tol, abs=tol)


def _torch(t):
    return torch.tensor(t.tolist(), dtype=torch.float32, requires_grad=True)


CASES = {
    "gelu": (lambda x, w, b: F.gelu(x), lambda x, w, b: torch.nn.functional.gelu(x)),
    "softmax": (lambda x, w, b: F.softmax(x, -1), lambda x, w, b: torch.softmax(x, -1)),
    "log_softmax": (lambda x, w, b: F.log_softmax(x, -1), lambda x, w, b: torch.log_softmax(x, -1)),
    "relu": (lambda x, w, b: F.relu(x), lambda x, w, b: torch.relu(x)),
    "linear": (lambda x, w, b: F.linear(x, w, b), lambda x, w, b: torch.nn.functional.linear(x, w, b)),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, 4, w[0], b),
                   lambda x, w, b: torch.nn.functional.layer_norm(x, (4,), w[0], b)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_autodiff_over_the_c_cpu_runs_the_fused_forward(name):
    dev = Autodiff(C)
    g = ember.Generator(5)
    x = ember.randn(3, 4, generator=g, device=dev).requires_grad_()
    w = ember.randn(4, 4, generator=g, device=dev).requires_grad_()
    b = ember.randn(4, generator=g, device=dev).requires_grad_()
    ours, theirs = CASES[name]
    with counted_fused(name) as calls:
        y = ours(x, w, b)
        grads = (y * y).sum().backward()
    assert calls[name] == 1, "the fused C %s should run once under Autodiff" % name
    tx, tw, tb = _torch(x), _torch(w), _torch(b)
    ty = theirs(tx, tw, tb)
    (ty * ty).sum().backward()
    assert close(y.tolist(), ty.tolist())
    for leaf, t in ((x, tx), (w, tw), (b, tb)):
        got = leaf.grad(grads)
        want = t.grad if t.grad is not None and t.grad.abs().sum() > 0 else None
        if want is None:
            continue
        assert got is not None and close(got.tolist(), want.tolist(), 1e-4)


def test_linear_and_layer_norm_backwards_cover_the_general_case():
    dev = Autodiff(ember.Cpu(kernels="python"))
    x = ember.randn(2, 3, 4, generator=ember.Generator(1), device=dev).requires_grad_()
    w = ember.randn(4, generator=ember.Generator(2), device=dev).requires_grad_()
    grads = (F.linear(x, w) * 2).sum().backward()  # a 1-d weight: the recorded body's gradients
    assert close(x.grad(grads).tolist(), (w * 2).expand(2, 3, 4).tolist())
    ln = F.layer_norm(x, (3, 4))
    assert ln.requires_grad and ln.backward(ember.ones(2, 3, 4)).get(x).shape == (2, 3, 4)


def test_a_keyword_tensor_that_requires_grad_gets_its_gradient():
    dev = Autodiff(C)
    x = ember.randn(2, 4, generator=ember.Generator(3), device=dev)
    w = ember.ones(4, device=dev).requires_grad_()
    grads = F.layer_norm(x, 4, weight=w).sum().backward()
    assert w.grad(grads) is not None and w.grad(grads).shape == (4,)


def test_users_override_beats_the_fused_path_and_reaches_every_cpu():
    calls = []

    def mine(x, approximate="none"):
        calls.append(type(x.device).__name__)
        return x * 0 + 5.0
    ember.Cpu.override("gelu", mine)
    try:
        for dev in (C, ember.Cpu(kernels="python"), Autodiff(C), Passthrough(C)):
            assert F.gelu(ember.ones(2, device=dev)).tolist() == [5.0, 5.0]
        assert calls == ["CpuC", "Cpu", "CpuC", "CpuC"]
    finally:
        ember.Cpu.override("gelu", None)
    assert composite.resolve(CpuC, "gelu")[0] is composite.FUSED[CpuC]["gelu"]


def test_an_override_without_a_backward_runs_with_the_composites_backward():
    seen = []

    def mine(x, dim=-1):
        seen.append(dim)
        return composite.COMPOSITES["softmax"](x, dim)
    ember.Cpu.override("softmax", mine)
    try:
        x = ember.tensor([[1.0, 2.0, 3.0]], device=Autodiff(ember.Cpu(kernels="python"))).requires_grad_()
        y = F.softmax(x, -1)
        g = (y * ember.tensor([[1.0, 0.0, 0.0]], device=x.device)).sum().backward().get(x)
    finally:
        ember.Cpu.override("softmax", None)
    assert seen == [-1]
    t = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    torch.softmax(t, -1)[0, 0].backward()
    assert close(g.tolist(), t.grad.tolist())


def test_a_users_backward_goes_with_its_override():
    def double(x, approximate="none"):
        return x * 2

    def double_backward(g, out, x, approximate="none"):
        return (g * 2,)
    ember.Cpu.override("gelu", double, backward=double_backward)
    try:
        x = ember.ones(3, device=Autodiff(C)).requires_grad_()
        assert F.gelu(x).sum().backward().get(x).tolist() == [2.0, 2.0, 2.0]
    finally:
        ember.Cpu.override("gelu", None)


def test_a_decorator_resolves_down_its_chain():
    with counted_fused("softmax") as calls:
        x = ember.ones(2, 3, device=Passthrough(C))
        y = F.softmax(x, -1)
        assert y.device == Passthrough(C) and calls["softmax"] == 1
        assert close(y.tolist(), [[1 / 3] * 3] * 2)
        z = F.softmax(ember.ones(2, 3, device=Autodiff(Passthrough(C))).requires_grad_(), -1)
        assert calls["softmax"] == 2 and z.requires_grad


def test_subclasses_keep_their_bases_overrides():
    class MyCpu(ember.Cpu):
        name = "MyCpu"

    ember.Cpu.override("relu", lambda x: x * 0 - 1.0)
    try:
        assert F.relu(ember.ones(2, device=MyCpu())).tolist() == [-1.0, -1.0]
    finally:
        ember.Cpu.override("relu", None)
    assert F.relu(ember.ones(2, device=MyCpu())).tolist() == [1.0, 1.0]


def test_a_wgpu_subclass_keeps_the_overrides_of_wgpu():
    wgpu = pytest.importorskip("wgpu")  # noqa: F841
    from ember.accel.wgpu import Wgpu

    class MyWgpu(Wgpu):
        name = "MyWgpu"

    try:
        dev = MyWgpu()
    except RuntimeError as e:
        pytest.skip("no GPU adapter: %s" % e)
    Wgpu.override("gelu", lambda x, approximate="none": x * 0 + 9.0)
    try:
        assert F.gelu(ember.ones(2, device=dev)).tolist() == [9.0, 9.0]
        assert F.gelu(ember.ones(2, device=Autodiff(dev))).tolist() == [9.0, 9.0]
    finally:
        Wgpu.override("gelu", None)
    assert F.gelu(ember.zeros(2, device=dev)).tolist() == [0.0, 0.0]


def test_the_backend_folder_imports_no_frontend():
    import os
    import re
    folder = os.path.dirname(ember.backends.cpu.__file__)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name)) as f:
                source = f.read()
            found = re.findall(r"from \.\.\.?(tensor|composite|nn|creation|elementwise)\b|import ember\.(tensor|nn)", source)
            assert not found, "%s imports the frontend: %r" % (name, found)
