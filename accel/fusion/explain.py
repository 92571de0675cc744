"""See what ``Fusion`` ran: ``trace()`` collects the kernels, ``explain(fn, *args)`` prints them.

    >>> with ember.accel.fusion.trace() as t:
    ...     y = gelu(x); y.tolist()
    >>> len(t.kernels)          # fused kernels plus ops the inner device ran unfused
    1
    >>> ember.accel.fusion.explain(gelu, x)   # the same, printed with the generated source
"""
import sys

from . import ir

TRACERS = []  # the traces being recorded; every Fusion device reports to each


class Event:
    """One kernel launch: a fused ``kernel`` (with its ``source``), or an unfused inner ``op``."""

    __slots__ = ("kernel", "space", "inputs", "compiler", "op")

    def __init__(self, kernel, space, inputs, compiler, op=None):
        self.kernel = kernel
        self.space = space
        self.inputs = inputs
        self.compiler = compiler
        self.op = op

    def fused(self):
        return self.kernel is not None

    def describe(self):
        if self.kernel is None:
            return "unfused %s on the inner device" % self.op
        return "fused %s over %s" % (ir.describe(self.kernel), "x".join(map(str, self.space)) or "()")

    def source(self):
        if self.kernel is None or self.compiler is None:
            return ""
        return self.compiler.source(self.kernel)


class Trace:
    """The events of a ``with trace():`` block; ``kernels`` is every launch, fused or not."""

    def __init__(self):
        self.events = []

    @property
    def kernels(self):
        return self.events

    @property
    def fused(self):
        return [e for e in self.events if e.fused()]

    def __enter__(self):
        TRACERS.append(self)
        return self

    def __exit__(self, *exc):
        TRACERS.remove(self)
        return False


def trace():
    """A context manager that records every kernel Fusion launches inside it.

    >>> with ember.accel.fusion.trace() as t:
    ...     y = (x * 2 + 1).relu().sum()
    >>> [e.describe() for e in t.fused]
    """
    return Trace()


def report(kernel, space, inputs, compiler, op=None):
    for t in TRACERS:
        t.events.append(Event(kernel, space, inputs, compiler, op))


def _tensors(out):
    import ember
    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _tensors(o)]
    return []


def explain(fn, *args, file=None, **kwargs):
    """Run ``fn(*args, **kwargs)``, compute its results, and print every kernel it launched: what
    it computes, its inputs (dtype, strides, offset) and the generated source. Returns the Trace."""
    from ember.backend import chain
    from .device import Fusion
    out = file or sys.stdout
    with trace() as t:
        result = fn(*args, **kwargs)
        for tensor in _tensors(result):
            for dev in chain(tensor.device):
                if isinstance(dev, Fusion):
                    dev.synchronize()
    fused = len(t.fused)
    out.write("%d kernel(s), %d fused\n" % (len(t.events), fused))
    for i, e in enumerate(t.events):
        out.write("[%d] %s\n" % (i, e.describe()))
        if e.kernel is not None:
            for k, (dtype, (array, strides, offset)) in enumerate(zip(e.kernel.inputs, e.inputs)):
                out.write("    input %d: %s strides %s offset %d\n" % (k, dtype, strides, offset))
            src = e.source()
            if src:
                out.write("    --- source ---\n")
                for line in src.splitlines():
                    out.write("    " + line + "\n")
    return t
