"""Board tensors: a flat buffer in the planned arena, a shape, and (int8 only) a scale.

An int8 tensor holds ``q`` with real value ``q * scale``; a float32 tensor has ``scale`` None.
Every op takes its output from the ``Arena``: on a board one float32 and one int8 array sized by
``ember deploy`` and reused from layer to layer, so a forward pass allocates no buffer at all.
"""
import sys
from array import array

try:  # beside the full ember (the desktop) its error classes; a bundle ships none: the builtins they extend
    from ..errors import ArgumentError, DeployError, RecordError, ShapeError
except ImportError:
    ArgumentError = DeployError = RecordError = ShapeError = ValueError

_ARENA = [None]
_MICROPYTHON = sys.implementation.name == "micropython"


def scratch(code, n):
    """An array of ``n`` elements whose values the caller overwrites, made without a temporary as
    large (MicroPython sizes an array from a range at once; its values wrap, which is harmless)."""
    if _MICROPYTHON:
        return array(code, range(n))
    return array(code, bytes(n * array(code).itemsize))


class Arena:
    """The buffers of one forward pass. ``plan`` (from ``ember deploy``): ``{"f": floats, "b":
    bytes, "ops": [[code, offset, n], ...]}``, the place of each op's output in turn. Without a
    plan every op gets a fresh buffer and ``trace`` records ``(code, n, inputs, inplace)`` per op,
    which ``ember.micro.plan`` turns into a plan."""

    def __init__(self, plan=None):
        self.plan = None if plan is None else plan["ops"]
        self.step = 0
        self.trace = [] if plan is None else None
        if plan is not None:
            self.f = memoryview(scratch("f", plan["f"]))
            self.b = memoryview(scratch("b", plan["b"]))

    def take(self, code, n, inputs, inplace=None):
        """An ``n``-element buffer of typecode ``code`` ("f" or "b") for the next op, and its id;
        ``inputs`` are the tensors the op reads; ``inplace`` one of them it may overwrite."""
        i = self.step
        self.step = i + 1
        if self.plan is None:
            self.trace.append((code, n, [t.buf for t in inputs], -1 if inplace is None else inplace.buf))
            return memoryview(scratch(code, n)), i
        if i >= len(self.plan):
            raise ArgumentError("micro: the forward pass has more ops than its plan (%d): the model must "
                                "run the same ops for every input" % len(self.plan))
        c, off, m = self.plan[i]
        if c != code or m != n:
            raise ArgumentError("micro: op %d asks for %d %s values where the plan has %d %s: the model "
                                "must run the same ops and shapes as when it was deployed" % (i, n, code, m, c))
        return (self.f if code == "f" else self.b)[off:off + m], i


def use(arena):
    """Make ``arena`` the one every op takes its output from; returns it."""
    _ARENA[0] = arena
    return arena


def arena():
    a = _ARENA[0]
    if a is None:
        a = use(Arena())
    return a


def empty(code, shape, inputs, scale=None, inplace=None):
    """A new tensor of ``shape`` from the arena (values undefined until the op writes them)."""
    n = 1
    for s in shape:
        n *= s
    data, buf = arena().take(code, n, inputs, inplace)
    return Tensor(data, shape, scale, buf)


def tensor(values, shape=None):
    """A float32 input tensor outside the arena (the model's input): ``values`` a flat sequence."""
    data = values if type(values) is array else array("f", values)
    return Tensor(memoryview(data), tuple(shape) if shape is not None else (len(data),), None, -1)


class Tensor:
    """What ember's layers compute with on a board: ``shape``, ``data`` (flat, row-major) and
    ``scale`` (None for float32). Offers the few Tensor methods models call in ``forward``."""

    __slots__ = ("data", "shape", "scale", "buf")

    def __init__(self, data, shape, scale=None, buf=-1):
        self.data = data
        self.shape = shape
        self.scale = scale
        self.buf = buf  # the arena op that made the buffer (views share it); -1 outside the arena

    def numel(self):
        return len(self.data)

    def dim(self):
        return len(self.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def reshape(self, *shape):
        if len(shape) == 1 and type(shape[0]) in (tuple, list):
            shape = shape[0]
        shape = list(shape)
        n, known, free = len(self.data), 1, -1
        for i in range(len(shape)):
            if type(shape[i]) is not int or shape[i] < -1:  # (-2, -3) has the right product
                raise ShapeError("reshape: expected sizes >= 0 or -1, found %s" % (tuple(shape),))
            if shape[i] == -1:
                if free >= 0:
                    raise ShapeError("reshape: only one dimension can be -1, found %s" % (tuple(shape),))
                free = i
            else:
                known *= shape[i]
        if free >= 0:
            if not known:
                raise ShapeError("reshape: cannot infer -1 in %s for %d elements" % (tuple(shape), n))
            shape[free] = n // known
        if known * (shape[free] if free >= 0 else 1) != n:
            raise ShapeError("reshape: shape %s is invalid for %d elements" % (tuple(shape), n))
        return Tensor(self.data, tuple(shape), self.scale, self.buf)

    view = reshape

    def flatten(self, start_dim=0, end_dim=-1):
        nd = len(self.shape)
        for d in (start_dim, end_dim):
            if nd and not -nd <= d < nd:
                raise ShapeError("flatten: dim %d is out of range for a tensor with %d dims (expected %d..%d)"
                                 % (d, nd, -nd, nd - 1))
        start, end = start_dim % nd if nd else 0, end_dim % nd if nd else 0
        if start > end:
            raise ShapeError("flatten: start_dim %d comes after end_dim %d" % (start_dim, end_dim))
        n = 1
        for s in self.shape[start:end + 1]:
            n *= s
        return Tensor(self.data, self.shape[:start] + (n,) + self.shape[end + 1:], self.scale, self.buf)

    def argmax(self, dim=None):
        """The flat index of the largest value (``dim`` None), or per row of the last dim."""
        data = self.data
        if dim is None:
            return _argmax(data, 0, len(data))
        k = self.shape[-1]
        if dim not in (-1, len(self.shape) - 1):
            raise ArgumentError("argmax: the deployment path reduces the last dim only, found dim=%r" % (dim,))
        rows = [_argmax(data, r, r + k) for r in range(0, len(data), k)]
        return Tensor(rows, self.shape[:-1], None, -1)

    def tolist(self):
        """Nested lists of Python numbers (int8 tensors dequantized)."""
        s = self.scale
        flat = [v * s for v in self.data] if s is not None else list(self.data)
        if not self.shape:
            return flat[0]
        for k in reversed(self.shape[1:]):
            flat = [flat[i:i + k] for i in range(0, len(flat), k)]
        return flat



def _argmax(data, lo, hi):
    best, at = data[lo], lo
    for i in range(lo + 1, hi):
        if data[i] > best:
            best, at = data[i], i
    return at - lo
