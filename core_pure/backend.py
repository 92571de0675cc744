"""The backend contract: the primitives every device implements, and the override hook.

A device *is* a backend instance: ``ember.Cpu()``, ``ember.accel.NumPy()``, ``ember.accel.Wgpu()``, and
decorators such as ``Autodiff(inner)`` that implement the same methods by wrapping another device.
Primitives take and return the backend's own arrays; the frontend (``ember.Tensor``) has already
checked shapes and dtypes, broadcast operands to one shape (as ``expand`` views), and cast them to
one dtype, so a primitive never has to validate user input. ``docs/architecture.md`` is the full
contract; the names of every op a primitive accepts come from ``ember.ops``, the op table.
"""

# The contract's names, from the one op table (ops.py says each op's trait and result dtype).
from .ops import (BINARY_OPS, COMPARISONS, OPTIONAL_PRIMITIVES, POOL_OPS, PRIMITIVES, REDUCE_OPS,  # noqa: F401
                  SCAN_OPS, SCATTER_MODES, UNARY_OPS)


class Backend:
    """Base of every device. Subclasses implement each name in ``PRIMITIVES``.

    ``name`` is what error messages and ``repr`` print; two devices whose ``key()`` is equal hold
    arrays that can meet in one op.
    """

    name = "backend"
    def key(self):
        """What identifies this device: tensors meet in one op when their devices' keys are equal."""
        return (self.name,)

    def __eq__(self, other):
        return isinstance(other, Backend) and self.key() == other.key()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return self.name + "()"

    def capacity(self):
        """Bytes a new array may take on this device now (an estimate the creation ops check a
        request against before they build it). This default is the host's free memory
        (``ember.capacity.host_free_bytes``); a device with memory of its own overrides it."""
        from .capacity import host_free_bytes
        return host_free_bytes()

    def capacity_source(self):
        """What ``capacity()`` measures, for an ``OutOfMemoryError``'s message."""
        return "%r (the host's free memory)" % (self,)

    def synchronize(self):
        """Wait until the work queued on this device is done. A device that runs each op as it is
        called (the Cpu devices) has none; a GPU's and a lazy decorator's override it."""

    def random(self, kind, shape, dtype, generator, params):
        """Random draws of ``kind`` (``ember.rng.KINDS``: uniform (low, high), normal (mean, std),
        randint (low, high), bernoulli (p,): True with probability p) from ``generator`` (an
        ``ember.Generator``), as an array of ``shape`` and ``dtype``. The frontend has checked every
        argument. This default draws on the host (``generator.draw``) and uploads with ``from_list``;
        a backend that generates on the device overrides it and says whether it keeps the stream.
        """
        n = 1
        for s in shape:
            n *= s
        return self.from_list(generator.draw(kind, n, params), shape, dtype)

    @classmethod
    def override(cls, name, fn, backward=None):
        """Replace the composite op ``name`` (``"gelu"``, ``"softmax"``...) on this backend class.

        ``fn`` receives the same arguments as the composite (tensors included) and returns its result.
        ``backward(grad, out, *args, **kwargs)``, when given, returns one gradient per positional
        argument (None for non-tensors): then ``Autodiff`` over this backend records ``fn`` as one
        node with it. Without it, Autodiff records ``fn`` with the composite's own backward when
        ember has one (softmax, gelu, linear...), else runs the composite body so gradients flow
        through its primitives.
        Pass ``fn=None`` to restore the composite. Returns the previous override or None.

        It reaches every subclass (overrides are looked up along ``type(device).__mro__``) and beats
        any built-in fused path (the C-backed Cpu's); a decorator over this backend runs it too
        (``ember.composite`` documents the resolution).
        """
        from .composite import override
        return override(cls, name, fn, backward)


class Decorator(Backend):
    """A backend that wraps another one (``Autodiff``, ``Fusion``) and runs every primitive through it.

    Its arrays pair (or stand for) the inner device's arrays: ``wrap`` makes one from an inner array
    without copying, ``unwrap`` gives the inner array back (a lazy decorator computes it first).
    ``base()`` is the backend at the bottom of the chain. ``records_grad`` says whether this
    decorator records a graph for ``backward`` (``Autodiff``); code above the backend asks the chain
    through ``ember.backend.grad_device`` instead of probing for method names.

    A decorator whose ``records_grad`` is True also implements, on its own arrays:
    ``require_grad(a, id=None)`` (a leaf whose gradient is keyed by ``id``), ``detach(a)`` (the same
    values, cut from the graph), ``grad_node(a)`` (the node that produced ``a``, with ``id`` and
    ``is_leaf``, or None) and ``backward(a, grad=None, retain_graph=False)`` (the ``Gradients``).
    ``Tensor`` reaches them through whatever decorators sit above it (``unwrap_to``/``wrap_from``).

    Composite ops (``ember.composite``) with no override on the decorator's own class call
    ``run_composite(name, args, kwargs)``; override it to run composites another way (Autodiff
    records one node where a backward exists).
    """

    name = "Decorator"
    records_grad = False

    def __init__(self, inner):
        if not isinstance(inner, Backend):
            from .errors import ArgumentTypeError
            raise ArgumentTypeError("%s: expected a device such as ember.Cpu(), found %r" % (self.name, inner))
        self.inner = inner

    def key(self):
        """This decorator's name followed by the key of the device it wraps."""
        return (self.name,) + self.inner.key()

    def __repr__(self):
        return "%s(%r)" % (self.name, self.inner)

    def wrap(self, value, shape, dtype):
        """An inner array as one of this device's arrays (no copy)."""
        raise NotImplementedError

    def unwrap(self, a):
        """The inner array this device's array ``a`` stands for (no copy)."""
        raise NotImplementedError

    def capacity(self):
        return self.inner.capacity()

    def synchronize(self):
        """The inner device's ``synchronize``."""
        self.inner.synchronize()

    def capacity_source(self):
        return self.inner.capacity_source()

    def random(self, kind, shape, dtype, generator, params):
        """The inner device's draws, wrapped: a leaf (no gradient flows to a random draw)."""
        return self.wrap(self.inner.random(kind, shape, dtype, generator, params), tuple(shape), dtype)

    def run_composite(self, name, args, kwargs):
        """Composite ``name`` on this decorator's tensors. By default: when a device below has an
        override (a fused kernel), the tensors are unwrapped to ``inner``, the composite runs as
        ``inner`` resolves it and the result is wrapped back; else the body runs on this
        decorator's primitives."""
        from .composite import COMPOSITES, all_on, overridden, run, unwrap_args, wrap_result
        if not overridden(self.inner, name) or not all_on(self, args, kwargs):
            return COMPOSITES[name](*args, **kwargs)
        inner_args, inner_kwargs = unwrap_args(self, args, kwargs)
        return wrap_result(self, run(self.inner, name, inner_args, inner_kwargs))

    def base(self):
        """The backend at the bottom of the decorator chain."""
        dev = self.inner
        while isinstance(dev, Decorator):
            dev = dev.inner
        return dev


def chain(device):
    """``device`` and every device below it, outermost first: ``[Autodiff(Fusion(Cpu())), Fusion(Cpu()), Cpu()]``."""
    out = [device]
    while isinstance(device, Decorator):
        device = device.inner
        out.append(device)
    return out


def grad_device(device):
    """The outermost decorator in ``device``'s chain that records gradients, or None."""
    for dev in chain(device):
        if isinstance(dev, Decorator) and dev.records_grad:
            return dev
    return None


def _index(devices, device):
    for i, d in enumerate(devices):
        if d is device or d == device:
            return i
    return -1


def unwrap_to(device, a, target):
    """``a``, an array of ``device``, as an array of ``target`` (a device in ``device``'s chain),
    unwrapped level by level without copies."""
    while device is not target and device != target:
        a = device.unwrap(a)
        device = device.inner
    return a


def wrap_from(device, target, a, shape, dtype):
    """``a``, an array of ``target`` (a device in ``device``'s chain), as an array of ``device``,
    wrapped level by level without copies."""
    devices = chain(device)
    for dev in reversed(devices[:_index(devices, target)]):
        a = dev.wrap(a, shape, dtype)
    return a


def in_chain(device, target):
    """Whether ``target`` is ``device`` or a device below it."""
    return _index(chain(device), target) >= 0
