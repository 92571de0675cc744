"""PyTorch's training loop in ember (``opt.zero_grad(); loss.backward(); opt.step()``) beside
ember's (``opt.step(loss.backward())``), schedulers that take the optimizer, ``ember.optim``'s
names, tied weights against PyTorch, a captured Adadelta step, device names and the top-level
numpy helpers."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.accel import Autodiff, compile
from ember.accel.optim import SGD, Adadelta, AdamW, lr
from ember.optim.lr_scheduler import LinearLR, StepLR
from harness.check import assert_close

DEV = Autodiff(ember.Cpu())


def mlp(seed=0):
    g = ember.Generator(seed)
    return nn.Sequential(nn.Linear(4, 8, generator=g), nn.ReLU(), nn.Linear(8, 3, generator=g)).to(DEV)


def batch(seed=1):
    g = ember.Generator(seed)
    return ember.randn(5, 4, generator=g).to(DEV), ember.randint(0, 3, (5,), generator=g).to(DEV)


def weights(model):
    return [p.value.tolist() for p in model.parameters()]


def test_pytorch_loop_equals_ember_loop():
    a, b = mlp(), mlp()
    oa, ob = SGD(a.parameters(), lr=0.1, momentum=0.9), SGD(b, lr=0.1, momentum=0.9)
    x, y = batch()
    for _ in range(3):
        oa.zero_grad()
        F.cross_entropy(a(x), y).backward()
        oa.step()
        ob.step(F.cross_entropy(b(x), y).backward())
    assert weights(a) == weights(b)
    assert all(p.grad is None for p in b.parameters())  # ember's loop leaves nothing on the model


def test_backward_accumulates_until_zero_grad():
    m = mlp()
    opt = SGD(m, lr=0.1)
    x, y = batch()
    g1 = F.cross_entropy(m(x), y).backward()
    g2 = F.cross_entropy(m(x * 2), y).backward()
    w = m.parameters()[0]
    assert_close(w.grad, w.value.grad(g1) + w.value.grad(g2))
    opt.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    # a closure, PyTorch's form: it computes the gradients the step uses, and its loss comes back
    before = weights(m)

    def closure():
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        return loss

    loss = opt.step(closure=closure)
    assert loss.shape == () and weights(m) != before


def test_explicit_gradients_switch_collection_off_and_zero_grad_back_on():
    m = mlp()
    opt = SGD(m, lr=0.1)
    x, y = batch()
    opt.step(F.cross_entropy(m(x), y).backward())
    F.cross_entropy(m(x), y).backward()
    assert all(p.grad is None for p in m.parameters())
    opt.zero_grad()
    F.cross_entropy(m(x), y).backward()
    assert all(p.grad is not None for p in m.parameters())


def test_tied_weights_train_as_in_pytorch():
    """An embedding tied to the output layer: gradients from both uses add; one update."""
    def tied(lib):
        class Tied(lib.Module):
            def __init__(self):
                super().__init__()
                self.emb = lib.Embedding(6, 3)
                self.head = lib.Linear(3, 6, bias=False)
                self.emb.weight = self.head.weight

            def forward(self, idx):
                return self.head(self.emb(idx))
        return Tied()

    w = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    tm, em = tied(torch.nn), tied(nn)
    with torch.no_grad():
        tm.head.weight.copy_(torch.from_numpy(w))
    em.load_state_dict([("head.weight", ember.tensor(w.tolist()))])
    em.to(DEV)
    assert len(list(tm.parameters())) == len(em.parameters()) == 1
    to = torch.optim.AdamW(tm.parameters(), lr=0.05)
    eo = AdamW(em.parameters(), lr=0.05)
    idx = [[0, 2, 5], [1, 1, 3]]
    target = [[1, 2, 3], [4, 5, 0]]
    for _ in range(3):
        to.zero_grad()
        torch.nn.functional.cross_entropy(tm(torch.tensor(idx)).reshape(-1, 6), torch.tensor(target).reshape(-1)).backward()
        to.step()
        eo.zero_grad()
        F.cross_entropy(em(ember.tensor(idx, device=DEV)).reshape(-1, 6), ember.tensor(target, device=DEV).reshape(-1)).backward()
        assert_close(em.parameters()[0].grad, tm.head.weight.grad.tolist(), rtol=1e-5, atol=1e-6)
        eo.step()
    assert_close(em.head.weight, tm.head.weight.tolist(), rtol=1e-5, atol=1e-6)
    assert em.emb.weight is em.head.weight


def test_step_lr_takes_the_optimizer_as_pytorch_does():
    m = mlp()
    opt = SGD([{"params": m[0].parameters(), "lr": 0.1}, {"params": m[2].parameters(), "lr": 0.01}])
    sched = StepLR(opt, step_size=2, gamma=0.5)
    params = [torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))]
    topt = torch.optim.SGD([{"params": params[:1], "lr": 0.1}, {"params": params[1:], "lr": 0.01}])
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5)
    for _ in range(5):
        assert sched.get_last_lr() == tsched.get_last_lr()
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in topt.param_groups]
        assert sched.step() is None
        tsched.step()
    # LinearLR sets the rate of epoch 0 at construction, as PyTorch's does
    opt2 = SGD(mlp(), lr=0.3)
    LinearLR(opt2, start_factor=0.5, total_iters=4)
    assert opt2.lr == pytest.approx(0.15)
    # the rate-only form is unchanged
    s = lr.StepLR(0.1, step_size=1, gamma=0.5)
    assert [s.step() for _ in range(3)] == [0.1, 0.05, 0.025]
    # and a scheduler's state comes back per group
    state = sched.state_dict()
    again = StepLR(SGD([{"params": m[0].parameters(), "lr": 0.1}, {"params": m[2].parameters(), "lr": 0.01}]),
                   step_size=2, gamma=0.5)
    again.load_state_dict(state)
    assert again.get_last_lr() == sched.get_last_lr()


def test_ember_optim_names_are_accels():
    import ember.accel.optim as accel_optim
    assert optim.Adadelta is accel_optim.Adadelta and optim.AdamW is accel_optim.AdamW
    assert optim.lr_scheduler.StepLR is accel_optim.lr.StepLR
    with pytest.raises(AttributeError, match="NoSuchOptimizer"):
        optim.NoSuchOptimizer


def test_adadelta_step_replays_captured():
    inner = ember.Cpu()
    models = [mlp(), mlp()]
    opts = [Adadelta(models[0], lr=1.0), Adadelta(models[1], lr=1.0)]
    x, y = batch()

    def step(model, opt):
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss

    compiled = compile(step)
    for i in range(6):
        a = step(models[0], opts[0]).tolist()
        b = compiled(models[1], opts[1]).tolist()
        assert a == b, i
        assert weights(models[0]) == weights(models[1]), i
        opts[0].lr = opts[1].lr = 1.0 / (i + 2)  # a new rate each step reaches the replay
    assert not compiled.refused and compiled.stats["replayed"] >= 3, (compiled.refused, compiled.stats)
    assert inner == DEV.inner


def test_no_grad_decorator_records_nothing():
    w = ember.ones(2, device=DEV).requires_grad_()

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(w).requires_grad and (w * 2).requires_grad
    assert not ember.no_grad(lambda t: t * 3)(w).requires_grad
    assert f.__name__ == "f"


def test_device_names():
    assert ember.ones(1).to("numpy").device == ember.accel.NumPy()
    try:
        gpu = ember.accel.Wgpu()
    except Exception as e:  # no adapter here: the name says so
        with pytest.raises(ember.DeviceError, match="not available"):
            ember.ones(1).to("cuda")
        print("no GPU:", e)
    else:
        t = ember.ones(2).to("cuda")
        assert t.device == gpu and ember.ones(1).to("gpu").device is t.device


def test_from_numpy_and_as_tensor_share_memory():
    a = np.arange(4, dtype=np.float32)
    t = ember.from_numpy(a)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    a[0] = 9
    assert t.tolist()[0] == 9.0  # shared
    assert ember.as_tensor(t) is t and ember.as_tensor(a).tolist()[0] == 9.0
    assert ember.as_tensor(a, dtype=ember.float64).dtype is ember.float64
    assert ember.as_tensor([1, 2]).dtype is ember.int64


def test_ember_nn_loads_only_the_layers_used():
    code = ("import sys, ember.nn as nn; nn.Linear(2, 2); "
            "print(sorted(m for m in sys.modules if m.startswith('ember.nn.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out)
    assert "ember.nn.linear" in loaded
    assert not [m for m in loaded if m in ("ember.nn.conv", "ember.nn.recurrent", "ember.nn.layers",
                                           "ember.nn.transformer", "ember.nn.loss")], loaded


def test_every_layer_name_is_in_the_table():
    """A layer added to ember.nn.layers without a line in ember.nn's table still resolves (by loading
    every layer); this keeps the table whole so a board never needs that."""
    import ember.nn.layers as layers
    missing = [n for n in dir(layers) if n[:1].isupper() and isinstance(getattr(layers, n), type)
               and issubclass(getattr(layers, n), ember.nn.Module) and nn._family(n) is None
               and n not in ("Module", "ModuleDict", "ModuleList", "Sequential")]
    assert not missing, "add these to ember.nn._FAMILIES: %s" % missing
