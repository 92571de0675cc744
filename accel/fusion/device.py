"""``Fusion(device)``: a backend decorator that records ops lazily and runs them as fused kernels.

Elementwise ops (unary, binary, where, cast), broadcasting views, the sum/prod/max/min reductions
and matmul are recorded, not run. The pending work below a node runs when its values are needed:
a read (``tolist``, ``item``, ``to_bytes``), an op Fusion does not record (conv, gather, sort...,
which get their inputs computed and then run on the inner device), ``synchronize()``, or a
stream of more than ``max_pending`` recorded ops. Then ``schedule.py`` cuts the graph into kernels
and the inner device's compiler (``compilers.py``) runs them.

Errors are raised at the op that causes them: the frontend validates shapes and dtypes before a
primitive is called, and what only the inner device can judge runs eagerly.
"""

from ember import dtypes
from ember.backend import Decorator

from . import ir
from .explain import TRACERS, report
from .graph import Lazy, Node
from .schedule import realize, squeeze_only

_FUSED = frozenset(dtypes.get(name) for name in ir.DTYPES)  # as dtype objects: one hash each
_TO_BOOL = frozenset(("isnan", "isinf", "logical_not"))
_COMPARES = frozenset(("eq", "ne", "lt", "le", "gt", "ge"))
# composites whose primitives leave nothing to fuse (scatters and gathers over windows, pads and
# transposing copies around a conv): the inner device's kernel is one pass (Wgpu's pooling
# gradient: 31 us where the scatter-add body took 121 us in LeNet's step on the H200, 2026-12-02;
# its conv gradients: one implicit GEMM each instead of pads, concatenations and copies)
INNER_COMPOSITES = ("pool_input_grad", "conv_input_grad", "conv_weight_grad")
# composites the inner device's kernel runs in one pass when their input is computed already (a
# pending producer is better fused into the body's first primitive): a conv bias's gradient, the
# sum over N, H and W of a gradient the conv's own gradients read too
INNER_WHEN_COMPUTED = ("reduce_dims",)


def _pending(ref):
    """Whether the handle behind ``ref`` is alive and its node not computed yet."""
    h = ref()
    return h is not None and h.node.value is None


def _computed(t):
    return type(t._data) is Lazy and t._data.node.value is not None


class Fusion(Decorator):
    """Wrap a device so chains of ops run as generated kernels.

    >>> dev = ember.accel.Fusion(ember.Cpu())
    >>> x = ember.randn(1024, device=dev)
    >>> y = x * ((x / 2 ** 0.5).erf() + 1) / 2   # recorded
    >>> y.tolist()                               # one kernel computes y

    On a device without a compiler (``compilers.compiler_for`` returns None) the ops run unfused;
    ``compiler=`` picks one explicitly (``False``: none).
    """

    name = "Fusion"

    def __init__(self, inner, max_pending=512, compiler=None):
        Decorator.__init__(self, inner)
        from ember.errors import ArgumentError
        if isinstance(inner, Fusion):
            raise ArgumentError("Fusion: %r already fuses" % (inner,))
        if getattr(inner, "records_grad", False):
            raise ArgumentError("Fusion: put Fusion inside Autodiff, as Autodiff(Fusion(%r)), so "
                                "backward's ops are fused too" % (inner.inner,))
        if compiler is None:
            from .compilers import compiler_for
            compiler = compiler_for(inner)
        # None (or compiler=False): record nothing, run every op on the inner device
        self.compiler = compiler or None
        self.max_pending = int(max_pending)
        self._recent = []  # weakrefs to the handles of recently recorded nodes
        self.schedules = {}  # graph shape -> the kernel built for it (schedule.py)

    # -- the decorator protocol -------------------------------------------------------------------
    def wrap(self, value, shape, dtype):
        return self._leaf(value, shape, dtype)

    def unwrap(self, a):
        """The inner array ``a`` stands for, computing what is pending first."""
        return realize(self, a.node)

    def run_composite(self, name, args, kwargs):
        """Composites run as their primitives, which Fusion records and fuses (a fused kernel of the
        device below, such as the C Cpu's gelu, would be one more kernel the chain cannot join),
        except those in ``INNER_COMPOSITES``, and those in ``INNER_WHEN_COMPUTED`` whose input is
        computed already: the inner device's kernel, where it has one."""
        from ember.composite import COMPOSITES
        if name in INNER_COMPOSITES or (name in INNER_WHEN_COMPUTED and args and _computed(args[0])):
            return Decorator.run_composite(self, name, args, kwargs)
        return COMPOSITES[name](*args, **kwargs)

    def synchronize(self):
        """Run every recorded op now, then wait for the inner device."""
        self.flush()
        self.inner.synchronize()

    def flush(self):
        """Compute every recorded node that a tensor still holds."""
        recent, self._recent = self._recent, []
        # the newest first: its kernel writes the older nodes it reads at its own index as extra
        # outputs (a softmax's held max and exp), where oldest-first would give each its own kernel
        for ref in reversed(recent):
            h = ref()
            if h is not None and h.node.value is None:
                realize(self, h.node)

    # -- recording --------------------------------------------------------------------------------
    def _leaf(self, value, shape, dtype):
        return Lazy(Node("input", (), tuple(shape), dtype, value))

    def _lazy(self, op, args, shape, dtype):
        h = Lazy(Node(op, args, shape if type(shape) is tuple else tuple(shape), dtype))
        recent = self._recent
        recent.append(h.node.handle)  # the weakref Lazy made
        if len(recent) > self.max_pending:
            # most entries are done by now (computed by a read, or dropped): only a stream that
            # still holds many pending nodes is flushed. Flushing whenever the list was long cut a
            # training step's graphs at another op each step: new kernels, built every few steps
            self._recent = recent = [r for r in recent if _pending(r)]
            if len(recent) > self.max_pending // 2:
                self.flush()
        return h

    def _value(self, a):
        return realize(self, a.node)

    def _fusable(self, *arrays):
        if self.compiler is None:
            return False
        for a in arrays:
            if type(a) is Lazy and a.node.dtype not in _FUSED:
                return False
        return True

    def _launched(self, kernel, space, inputs, compiler):
        if TRACERS:
            if kernel is None:
                report(None, None, inputs, None, op=space)
            else:
                report(kernel, space, inputs, compiler)

    def _inner_op(self, name, *args):
        """Run a primitive Fusion does not record on the inner device (its inputs computed first)."""
        if TRACERS:
            report(None, None, args, None, op=name)
        return getattr(self.inner, name)(*args)

    # -- data in and out --------------------------------------------------------------------------
    def from_list(self, flat, shape, dtype):
        """The inner device's ``from_list``, held as an input of later kernels."""
        return self._leaf(self.inner.from_list(flat, shape, dtype), shape, dtype)

    def from_bytes(self, buf, shape, dtype):
        """The inner device's ``from_bytes``, held as an input of later kernels."""
        return self._leaf(self.inner.from_bytes(buf, shape, dtype), shape, dtype)

    def full(self, shape, value, dtype):
        """The inner device's ``full``, held as an input of later kernels."""
        return self._leaf(self.inner.full(shape, value, dtype), shape, dtype)

    def to_list(self, a):
        """Compute what ``a`` needs (a sync point), then the inner device's ``to_list``."""
        return self.inner.to_list(self._value(a))

    def to_bytes(self, a):
        """Compute what ``a`` needs (a sync point), then the inner device's ``to_bytes``."""
        return self.inner.to_bytes(self._value(a))

    # -- movement -----------------------------------------------------------------------------------
    def _view(self, op, a, arg, shape):
        node = a.node
        if node.value is not None:  # a view of a computed array is the inner device's view
            return self._leaf(getattr(self.inner, op)(node.value, arg), shape, node.dtype)
        return self._lazy(op, (node, arg), shape, node.dtype)

    def reshape(self, a, shape):
        """Recorded as a view of a pending node (computed first unless it only adds or drops size-1 dims)."""
        shape = tuple(shape)
        if a.node.value is None and not squeeze_only(a.node.shape, shape):
            realize(self, a.node)
        return self._view("reshape", a, shape, shape)

    def permute(self, a, dims):
        """Recorded as a view of a pending node; of a computed array, the inner device's view."""
        dims = tuple(dims)
        return self._view("permute", a, dims, tuple(a.node.shape[d] for d in dims))

    def expand(self, a, shape):
        """Recorded as a broadcasting view of a pending node; of a computed array, the inner device's view."""
        shape = tuple(shape)
        return self._view("expand", a, shape, shape)

    def slice(self, a, ranges):
        """Computes ``a``, then the inner device's ``slice`` (not recorded)."""
        shape = tuple(len(range(*r)) for r in ranges)
        return self._leaf(self.inner.slice(self._value(a), ranges), shape, a.dtype)

    def slice_assign(self, a, ranges, v):
        """Computes the inputs, then runs on the inner device (not recorded)."""
        return self._leaf(self._inner_op("slice_assign", self._value(a), ranges, self._value(v)),
                          a.shape, a.dtype)

    def cat(self, arrays, dim):
        """Computes the inputs, then runs on the inner device (not recorded)."""
        first = arrays[0]
        size = sum(x.shape[dim] for x in arrays)
        shape = first.shape[:dim] + (size,) + first.shape[dim + 1:]
        return self._leaf(self._inner_op("cat", [self._value(x) for x in arrays], dim), shape, first.dtype)

    # -- elementwise (recorded) ---------------------------------------------------------------------
    def unary(self, op, a):
        """Recorded into the pending elementwise graph (fused later); unfusable dtypes run on the inner device."""
        node = a.node
        dtype = dtypes.bool_ if op in _TO_BOOL else node.dtype
        if self.compiler is None or node.dtype not in _FUSED or dtype not in _FUSED:
            return self._leaf(self._inner_op("unary", op, self._value(a)), node.shape, dtype)
        return self._lazy("unary", (op, node), node.shape, dtype)

    def binary(self, op, a, b):
        """Recorded into the pending elementwise graph (fused later); unfusable inputs run on the inner device."""
        # the hot path of a recorded model: one look at each side, no helper calls
        na = a.node if type(a) is Lazy else a
        nb = b.node if type(b) is Lazy else b
        node = na if type(na) is Node else nb
        dtype = dtypes.bool_ if op in _COMPARES else node.dtype
        if self.compiler is None or (type(na) is Node and na.dtype not in _FUSED) or \
                (type(nb) is Node and nb.dtype not in _FUSED):
            args = [self._value(x) if type(x) is Lazy else x for x in (a, b)]
            return self._leaf(self._inner_op("binary", op, args[0], args[1]), node.shape, dtype)
        return self._lazy("binary", (op, na, nb), node.shape, dtype)

    def where(self, cond, a, b):
        """Recorded into the pending elementwise graph (fused later)."""
        if not self._fusable(cond, a, b):
            return self._leaf(self._inner_op("where", self._value(cond), self._value(a), self._value(b)),
                              a.shape, a.dtype)
        return self._lazy("where", (cond.node, a.node, b.node), a.shape, a.dtype)

    def cast(self, a, dtype):
        """Recorded into the pending elementwise graph (fused later) for the dtypes kernels hold."""
        if dtype is a.dtype:
            return a
        if not self._fusable(a) or dtype not in _FUSED:
            return self._leaf(self._inner_op("cast", self._value(a), dtype), a.shape, dtype)
        return self._lazy("cast", (a.node, dtype), a.shape, dtype)

    # -- reductions: sum/prod/max/min recorded (fuse-on-read), the rest run -------------------------------
    def reduce(self, op, a, dim):
        """sum, prod, max and min are recorded (fused on read); the others run on the inner device."""
        shape = a.shape[:dim] + (1,) + a.shape[dim + 1:]
        if op in ir.REDUCE_OPS and self._fusable(a):
            return self._lazy("reduce", (op, a.node, dim), shape, a.dtype)
        dtype = dtypes.int64 if op in ("argmax", "argmin") else dtypes.bool_ if op in ("any", "all") else a.dtype
        return self._leaf(self._inner_op("reduce", op, self._value(a), dim), shape, dtype)

    def scan(self, op, a, dim):
        """Computes ``a``, then the inner device's ``scan`` (not recorded)."""
        dtype = dtypes.int64 if op.startswith("cumarg") else a.dtype
        return self._leaf(self._inner_op("scan", op, self._value(a), dim), a.shape, dtype)

    def sort(self, a, dim, descending):
        """Computes ``a``, then the inner device's ``sort`` (not recorded)."""
        v, i = self._inner_op("sort", self._value(a), dim, descending)
        return self._leaf(v, a.shape, a.dtype), self._leaf(i, a.shape, dtypes.int64)

    # -- linear algebra (matmul recorded: fuse-on-write), nn, indexing -----------------------------------
    def matmul(self, a, b):
        """Recorded for floats, with the elementwise ops after it fused into its epilogue."""
        shape = a.shape[:-1] + (b.shape[-1],)
        if self._fusable(a, b) and a.dtype.kind == "f":
            return self._lazy("matmul", (a.node, b.node), shape, a.dtype)
        return self._leaf(self._inner_op("matmul", self._value(a), self._value(b)), shape, a.dtype)

    def conv(self, x, w, stride, padding, dilation, groups):
        """Computes the inputs, then the inner device's ``conv`` (not recorded)."""
        from ember.shapes import conv_out_size
        spatial = tuple(conv_out_size(n, k, s, p, d) for n, k, s, p, d in
                        zip(x.shape[2:], w.shape[2:], stride, padding, dilation))
        value = self._inner_op("conv", self._value(x), self._value(w), stride, padding, dilation, groups)
        return self._leaf(value, (x.shape[0], w.shape[0]) + spatial, x.dtype)

    def pool(self, op, x, kernel, stride, padding, dilation):
        """Computes the input, then the inner device's ``pool`` (not recorded)."""
        from ember.shapes import conv_out_size
        spatial = tuple(conv_out_size(n, k, s, p, d) for n, k, s, p, d in
                        zip(x.shape[2:], kernel, stride, padding, dilation))
        value = self._inner_op("pool", op, self._value(x), kernel, stride, padding, dilation)
        return self._leaf(value, x.shape[:2] + spatial, x.dtype)

    def gather(self, x, dim, index):
        """Computes the inputs, then the inner device's ``gather`` (not recorded)."""
        return self._leaf(self._inner_op("gather", self._value(x), dim, self._value(index)), index.shape, x.dtype)

    def scatter(self, x, dim, index, src, mode):
        """Computes the inputs, then the inner device's ``scatter`` (not recorded)."""
        value = self._inner_op("scatter", self._value(x), dim, self._value(index), self._value(src), mode)
        return self._leaf(value, x.shape, x.dtype)
