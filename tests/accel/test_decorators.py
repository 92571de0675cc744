"""The decorator protocol (ember.backend.Decorator): chains of decorators, wrapped and unwrapped
level by level, gradients found anywhere in the chain, composites resolved down the chain."""
import pytest

import ember
import ember.nn.functional as F
from ember.accel import Autodiff
from ember.backend import PRIMITIVES, Decorator, chain, grad_device, in_chain, unwrap_to, wrap_from
from ember.errors import ArgumentError, ArgumentTypeError


class Box:
    """Passthrough's array: the inner array, untouched."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _unbox(v):
    if type(v) is Box:
        return v.value
    if type(v) in (list, tuple):
        return type(v)(_unbox(x) for x in v)
    return v


def _forward(name):
    def primitive(self, *args):
        out = getattr(self.inner, name)(*[_unbox(a) for a in args])
        if name in ("to_list", "to_bytes"):
            return out
        if name == "sort":
            return Box(out[0]), Box(out[1])
        return Box(out)
    return primitive


class Passthrough(Decorator):
    """A decorator that records nothing and changes nothing: each primitive runs on the inner device."""

    name = "Passthrough"

    def wrap(self, value, shape, dtype):
        return Box(value)

    def unwrap(self, a):
        return a.value


for _name in PRIMITIVES:
    setattr(Passthrough, _name, _forward(_name))


def counting(device):
    """``device`` with its to_list calls counted in ``device.reads``."""
    device.reads = 0
    to_list = device.to_list

    def counted(a):
        device.reads += 1
        return to_list(a)
    device.to_list = counted
    return device


def test_chain_and_base():
    cpu = ember.Cpu(kernels="python")
    two = Autodiff(Passthrough(cpu))
    assert chain(two) == [two, Passthrough(cpu), cpu]
    assert two.base() is cpu and Passthrough(cpu).base() is cpu
    assert grad_device(two) is two and grad_device(Passthrough(two)) is two and grad_device(cpu) is None
    assert in_chain(two, cpu) and in_chain(two, Passthrough(cpu)) and not in_chain(cpu, two)
    assert repr(two) == "Autodiff(Passthrough(Cpu()))"
    assert two == Autodiff(Passthrough(ember.Cpu(kernels="python"))) and two != Autodiff(cpu)


def test_synchronize_reaches_down_the_chain():
    """Every device has ``synchronize`` (a Cpu's waits for nothing); a decorator's waits for its
    inner device, so ``Autodiff(Fusion(...))`` computes what Fusion holds pending."""
    from ember.accel import Fusion

    class Waits(Passthrough):
        waits = 0

        def synchronize(self):
            Waits.waits += 1
            Passthrough.synchronize(self)
    cpu = ember.Cpu(kernels="python")
    assert cpu.synchronize() is None
    Autodiff(Passthrough(Waits(cpu))).synchronize()
    assert Waits.waits == 1
    fused = Fusion(ember.Cpu(kernels="python"))
    dev = Autodiff(fused)
    x = ember.tensor([1.0, -2.0], device=dev).requires_grad_()
    y = (x * 3 + 1).relu()
    assert y._data.value.node.value is None  # recorded, not run
    dev.synchronize()
    assert y._data.value.node.value is not None and y.tolist() == [4.0, 0.0]


def test_decorator_needs_a_device():
    with pytest.raises(ArgumentTypeError, match="Passthrough: expected a device"):
        Passthrough("cpu")
    with pytest.raises(ArgumentError, match="already records gradients"):
        Autodiff(Passthrough(Autodiff(ember.Cpu())))


def test_to_wraps_and_unwraps_two_levels_without_a_host_copy():
    cpu = counting(ember.Cpu(kernels="python"))
    top = Autodiff(Passthrough(cpu))
    t = ember.tensor([1.0, 2.0, 3.0], device=cpu)
    up = t.to(top)
    assert up.device is top and cpu.reads == 0
    assert type(up._data.value) is Box and up._data.value.value is t._data
    mid = up.to(Passthrough(cpu))
    assert type(mid._data) is Box and cpu.reads == 0
    down = up.to(cpu)
    assert down.device is cpu and down._data is t._data and cpu.reads == 0
    assert mid.to(top).to(cpu)._data is t._data and cpu.reads == 0
    assert up.tolist() == [1.0, 2.0, 3.0] and cpu.reads == 1


def test_to_another_chain_copies_through_the_host():
    cpu = ember.Cpu(kernels="python")
    t = ember.tensor([1.0, 2.0], device=Autodiff(Passthrough(cpu)))
    other = counting(ember.Cpu(kernels="python"))
    u = t.to(Passthrough(Autodiff(cpu)))
    assert u.tolist() == [1.0, 2.0] and u.device == Passthrough(Autodiff(cpu))
    assert ember.tensor([4.0], device=other).to(Autodiff(ember.Cpu(kernels="python"))).tolist() == [4.0]


def test_unwrap_to_and_wrap_from_are_inverse():
    cpu = ember.Cpu(kernels="python")
    top = Passthrough(Autodiff(cpu))
    a = cpu.from_list([1.0], (1,), ember.float32)
    up = wrap_from(top, cpu, a, (1,), ember.float32)
    assert unwrap_to(top, up, cpu) is a


@pytest.mark.parametrize("order", ("autodiff-outside", "autodiff-inside"))
def test_gradients_through_a_two_level_chain(order):
    cpu = ember.Cpu(kernels="python")
    dev = Autodiff(Passthrough(cpu)) if order == "autodiff-outside" else Passthrough(Autodiff(cpu))
    w = ember.tensor([1.0, -2.0, 3.0], device=dev).requires_grad_()
    assert w.requires_grad and w.device is dev
    y = (w * w).sum()
    assert y.requires_grad
    grads = y.backward()
    assert w.grad(grads).tolist() == [2.0, -4.0, 6.0]
    assert not w.detach().requires_grad and w.detach().device is dev
    leaf = ember.ones(2, device=dev).require_grad(id=7)
    assert leaf.requires_grad and leaf.device is dev and (leaf * 3).sum().backward().get_id(7).tolist() == [3.0, 3.0]


def test_no_grad_device_in_the_chain_says_so():
    with pytest.raises(ArgumentError, match="records no graph"):
        ember.ones(2, device=Passthrough(ember.Cpu())).requires_grad_()
    assert not ember.ones(2, device=Passthrough(ember.Cpu())).requires_grad


def test_optimizer_steps_a_parameter_below_another_decorator():
    from ember.accel.optim import SGD, track
    from ember.nn.linear import Linear

    dev = Passthrough(Autodiff(ember.Cpu(kernels="python")))
    model = track(Linear(2, 1), dev)
    opt = SGD(model.parameters(), lr=0.5)
    before = model.weight.tolist()
    loss = model(ember.ones(3, 2, device=dev)).sum()
    opt.step(loss.backward())
    assert model.weight.device is dev and model.weight.requires_grad
    assert model.weight.tolist() != before
