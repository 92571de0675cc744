"""``Autodiff(device)``: a backend decorator that records a graph for ``backward``.

Its arrays pair the inner device's array with the shape, dtype and (when the value depends on
a tensor that requires grad) the ``Node`` that produced it. Every primitive runs on the inner
device and, where a gradient can flow, records its rule from ``rules.py``. The decorator never
asks which device it wraps: any backend that implements the contract works inside it.
"""
import ember
from ember import dtypes
from ember.backend import Decorator, grad_device
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.dtypes import bool_ as _BOOL
from ember.ops import BINARY_TRAIT, UNARY_TRAIT, infer

from . import rules
from .gradients import Gradients
from .graph import Node, backward_hooks, grad_mode, run_backward


class AdArray:
    """An inner array plus what the tape needs: shape, dtype and the producing node (or None)."""

    __slots__ = ("value", "shape", "dtype", "node")

    def __init__(self, value, shape, dtype, node=None):
        self.value = value
        self.shape = shape
        self.dtype = dtype
        self.node = node


class _Const:
    """An input that records no gradient (its array must be kept to recompute the op)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _on(inner, a):
    """An AdArray as an ``inner``-device tensor (records nothing); a Python scalar stays one."""
    return ember.Tensor(a.value, a.shape, a.dtype, inner) if type(a) is AdArray else a


def _parents(inputs):
    """The inputs' nodes (None for an input without one), or None when no input has a node."""
    parents = []
    found = False
    for a in inputs:
        node = a.node if type(a) is AdArray else None
        if node is not None:
            found = True
        parents.append(node)
    return tuple(parents) if found else None


class Autodiff(Decorator):
    """Wrap a device so its tensors can record ops and run ``backward``.

    >>> dev = ember.accel.Autodiff(ember.Cpu())
    >>> w = ember.randn(3, device=dev).requires_grad_()
    >>> grads = (w * w).sum().backward()
    >>> w.grad(grads)            # 2 * w, on the inner device
    """

    name = "Autodiff"
    records_grad = True

    def __init__(self, inner, checkpointing=False):
        Decorator.__init__(self, inner)
        if grad_device(inner) is not None:
            raise ArgumentError("Autodiff: %r already records gradients" % (inner,))
        # gradient checkpointing (F16): elementwise (memory-bound) results are not kept for backward;
        # they are recomputed there from the nearest kept (compute-bound) result
        self.checkpointing = bool(checkpointing)

    # the key is Decorator's: checkpointing changes memory, not values

    # -- the graph ----------------------------------------------------------------------------------
    def _t(self, a):
        """An AdArray seen as an inner-device tensor (records nothing)."""
        return ember.Tensor(a.value, a.shape, a.dtype, self.inner)

    def _record(self, value, spec, inputs, make_rule):
        """Wrap an inner result of ``spec`` (shape, dtype); attach a node if a gradient can flow from
        ``inputs`` into it."""
        shape, dtype = spec
        out = AdArray(value, shape, dtype)
        if not grad_mode.enabled or dtype.kind != "f":
            return out
        parents = _parents(inputs)
        if parents is not None:
            out.node = Node(parents, make_rule(out), shape, dtype)
            if self.checkpointing:
                out.node.kept = value  # a recompute source for the elementwise ops after it
        return out

    def _checkpointed(self, out, inputs, rule, recompute):
        """Attach to ``out`` (an elementwise result some of whose ``inputs`` have nodes) a node that
        keeps no array: ``rule(ins, out)`` builds its backward from AdArrays and ``recompute(values)``
        redoes the op from its inputs' inner values, both when backward runs."""
        shape, dtype = out.shape, out.dtype
        parents = _parents(inputs)
        # keep nodes (which can recompute) and constants, never the inputs' arrays themselves
        sources = tuple(a.node if type(a) is AdArray and a.node is not None else
                        (_Const(a.value) if type(a) is AdArray else a) for a in inputs)
        shapes = tuple((a.shape, a.dtype) if type(a) is AdArray else None for a in inputs)

        def materialize():
            vals = [s.output() if type(s) is Node else (s.value if type(s) is _Const else s) for s in sources]
            ins = tuple(AdArray(v, sd[0], sd[1]) if sd is not None else v for v, sd in zip(vals, shapes))
            return ins, vals

        def backward(g):
            ins, vals = materialize()
            return rule(ins, AdArray(recompute(vals), shape, dtype))(g)

        def output():
            return recompute(materialize()[1])
        out.node = Node(parents, backward, shape, dtype)
        out.node.recompute = output
        return out

    def _elementwise(self, value, spec, inputs, rule, recompute):
        """Record an elementwise op (``where``, ``cast``; ``unary`` and ``binary`` inline this).
        ``rule(ins, out)`` builds its backward from AdArrays; ``recompute(values)`` redoes the op
        from its inputs' inner values."""
        shape, dtype = spec
        out = AdArray(value, shape, dtype)
        parents = _parents(inputs) if grad_mode.enabled and dtype.kind == "f" else None
        if parents is None:
            return out
        if self.checkpointing:
            return self._checkpointed(out, inputs, rule, recompute)
        out.node = Node(parents, rule(inputs, out), shape, dtype)
        return out

    def wrap(self, value, shape, dtype):
        """An inner array as one of this device's arrays, recording nothing (used by Tensor.to)."""
        return AdArray(value, shape, dtype)

    def unwrap(self, a):
        """The inner array of ``a`` (no copy)."""
        return a.value

    def grad_node(self, a):
        """The node that produced ``a`` (``id``, ``is_leaf``), or None when no gradient flows to it."""
        return a.node

    def require_grad(self, a, id=None):
        """A leaf copy of the float array ``a`` whose gradient ``backward`` keys by ``id``."""
        if a.dtype.kind != "f":
            raise DTypeError("requires_grad: only float tensors can require grad, found %s" % a.dtype.name)
        node = Node((), None, a.shape, a.dtype, id)
        node.kept = a.value
        return AdArray(a.value, a.shape, a.dtype, node)

    def detach(self, a):
        """``a``'s values cut from the graph (no copy)."""
        return AdArray(a.value, a.shape, a.dtype)

    def backward(self, a, grad=None, retain_graph=False):
        """Gradients of every leaf reachable from ``a`` (a scalar unless ``grad`` is given)."""
        if a.node is None:
            raise ArgumentError("backward: this tensor does not depend on any tensor that requires grad")
        if grad is None:
            if len(a.shape) and a.shape != (1,) * len(a.shape):
                raise ShapeError("backward: expected a scalar (or pass grad=), found shape %s" % (a.shape,))
            seed = ember.ones(a.shape, dtype=a.dtype, device=self.inner)
        else:
            seed = grad.to(self.inner) if isinstance(grad, ember.Tensor) else grad
            if seed.shape != a.shape:
                raise ShapeError("backward: grad of shape %s for a tensor of shape %s" % (seed.shape, a.shape))
        leaves = run_backward(a.node, seed, release=not retain_graph)
        for hook in backward_hooks:
            hook(leaves)
        return Gradients(leaves)

    # -- composites recorded whole (see ember.composite) ------------------------------------------------
    def run_composite(self, name, args, kwargs):
        """Record a composite as one node when a backward for it exists, else let its primitives
        record themselves. Forward and backward are chosen apart: the forward is whatever the inner
        device resolves (a user's override, a fused kernel, or the body), the backward the one
        registered with that override or else the composite's own (``composite.backward_for``);
        a backward needs only ``(grad, out, *args)``, so any forward serves."""
        from ember.composite import COMPOSITES, all_on, backward_for, run, unwrap_args
        backward = backward_for(self.inner, name)
        if backward is None or not all_on(self, args, kwargs) or \
                (kwargs and any(isinstance(v, ember.Tensor) and v.requires_grad for v in kwargs.values())):
            # the body: it names mixed devices, and a backward gives gradients to positional arguments only
            return COMPOSITES[name](*args, **kwargs)
        inner_args, inner_kwargs = unwrap_args(self, args, kwargs)
        out = run(self.inner, name, inner_args, inner_kwargs)
        Tensor = ember.Tensor
        parents = []
        found = False
        for a in args:
            node = a._data.node if type(a) is Tensor and (a.device is self or a.device == self) else None
            if node is not None:
                found = True
            parents.append(node)
        wrapped = AdArray(out._data, out.shape, out.dtype)
        if found and grad_mode.enabled and out.dtype.kind == "f":
            wrapped.node = Node(tuple(parents), lambda g: backward(g, out, *inner_args, **inner_kwargs),
                                out.shape, out.dtype)
            if self.checkpointing:
                wrapped.node.kept = out._data
        return Tensor(wrapped, out.shape, out.dtype, self)

    # -- data in and out (the shape and dtype of every result come from ember.ops.infer) -------------
    def from_list(self, flat, shape, dtype):
        """The inner device's ``from_list``, wrapped as a constant (no node)."""
        return AdArray(self.inner.from_list(flat, shape, dtype), *infer("from_list", flat, shape, dtype))

    def from_bytes(self, buf, shape, dtype):
        """The inner device's ``from_bytes``, wrapped as a constant (no node)."""
        return AdArray(self.inner.from_bytes(buf, shape, dtype), *infer("from_bytes", buf, shape, dtype))

    def full(self, shape, value, dtype):
        """The inner device's ``full``, wrapped as a constant (no node)."""
        return AdArray(self.inner.full(shape, value, dtype), *infer("full", shape, value, dtype))

    def to_list(self, a):
        """The inner device's ``to_list`` of ``a``'s values."""
        return self.inner.to_list(a.value)

    def to_bytes(self, a):
        """The inner device's ``to_bytes`` of ``a``'s values."""
        return self.inner.to_bytes(a.value)

    # -- movement ------------------------------------------------------------------------------------
    def reshape(self, a, shape):
        """The inner device's ``reshape``, recorded with its backward rule (``rules.reshape_rule``) when a gradient
        flows."""
        spec = infer("reshape", a, shape)
        return self._record(self.inner.reshape(a.value, spec[0]), spec, (a,),
                            lambda out: rules.reshape_rule(self._t(a)))

    def permute(self, a, dims):
        """The inner device's ``permute``, recorded with its backward rule (``rules.permute_rule``) when a gradient
        flows."""
        return self._record(self.inner.permute(a.value, dims), infer("permute", a, dims), (a,),
                            lambda out: rules.permute_rule(dims))

    def expand(self, a, shape):
        """The inner device's ``expand``, recorded with its backward rule (``rules.expand_rule``) when a gradient
        flows."""
        spec = infer("expand", a, shape)
        return self._record(self.inner.expand(a.value, spec[0]), spec, (a,),
                            lambda out: rules.expand_rule(a.shape, spec[0]))

    def slice(self, a, ranges):
        """The inner device's ``slice``, recorded with its backward rule (``rules.slice_rule``) when a gradient
        flows."""
        return self._record(self.inner.slice(a.value, ranges), infer("slice", a, ranges), (a,),
                            lambda out: rules.slice_rule(self._t(a), ranges))

    def slice_assign(self, a, ranges, v):
        """The inner device's ``slice_assign``, recorded with its backward rule (``rules.slice_assign_rule``) when a
        gradient flows."""
        return self._record(self.inner.slice_assign(a.value, ranges, v.value), infer("slice_assign", a, ranges, v),
                            (a, v), lambda out: rules.slice_assign_rule(self._t(a), ranges, self._t(v)))

    def cat(self, arrays, dim):
        """The inner device's ``cat``, recorded with its backward rule (``rules.cat_rule``) when a gradient flows."""
        sizes = [x.shape[dim] for x in arrays]
        value = self.inner.cat([x.value for x in arrays], dim)
        return self._record(value, infer("cat", arrays, dim), arrays, lambda out: rules.cat_rule(sizes, dim))

    # -- elementwise ---------------------------------------------------------------------------------
    # unary and binary record inline, with the backward rule built only when backward runs: they
    # are most of a model's ops, and each layer of Python here is paid on every one of them
    def unary(self, op, a):
        """The inner device's ``unary``, recorded with its backward rule (``rules.unary_rule``) when a gradient
        flows."""
        inner = self.inner
        value = inner.unary(op, a.value)
        shape = a.shape
        dtype = _BOOL if UNARY_TRAIT[op] == "to_bool" else a.dtype  # ember.ops.infer("unary", ...)
        out = AdArray(value, shape, dtype)
        parent = a.node
        if parent is None or dtype.kind != "f" or not grad_mode.enabled:
            return out
        if self.checkpointing:
            return self._checkpointed(out, (a,), lambda ins, y: rules.unary_rule(op, self._t(ins[0]), self._t(y)),
                                      lambda vals: inner.unary(op, vals[0]))
        x_value, x_dtype = a.value, a.dtype

        def backward(g):
            return rules.unary_rule(op, ember.Tensor(x_value, shape, x_dtype, inner),
                                    ember.Tensor(value, shape, dtype, inner))(g)
        out.node = Node((parent,), backward, shape, dtype)
        return out

    def binary(self, op, a, b):
        """The inner device's ``binary``, recorded with its backward rule (``rules.binary_rule``) when a gradient
        flows."""
        inner = self.inner
        ta = type(a) is AdArray
        tb = type(b) is AdArray
        value = inner.binary(op, a.value if ta else a, b.value if tb else b)
        x = a if ta else b
        shape = x.shape
        dtype = _BOOL if BINARY_TRAIT[op] == "compare" else x.dtype  # ember.ops.infer("binary", ...)
        out = AdArray(value, shape, dtype)
        if dtype.kind != "f" or not grad_mode.enabled:
            return out
        pa = a.node if ta else None
        pb = b.node if tb else None
        if pa is None and pb is None:
            return out
        if self.checkpointing:
            def rule(ins, y):
                tx, ty = (self._t(v) if type(v) is AdArray else v for v in ins)
                return rules.binary_rule(op, tx, ty, self._t(y))
            return self._checkpointed(out, (a, b), rule, lambda vals: inner.binary(op, vals[0], vals[1]))

        def backward(g):
            return rules.binary_rule(op, _on(inner, a), _on(inner, b), ember.Tensor(value, shape, dtype, inner))(g)
        out.node = Node((pa, pb), backward, shape, dtype)
        return out

    def where(self, cond, a, b):
        """The inner device's ``where``, recorded with its backward rule (``rules.where_rule``) when a gradient
        flows."""
        inner = self.inner
        return self._elementwise(inner.where(cond.value, a.value, b.value), infer("where", cond, a, b),
                                 (cond, a, b), lambda ins, out: rules.where_rule(*[self._t(x) for x in ins]),
                                 lambda vals: inner.where(*vals))

    def cast(self, a, dtype):
        """The inner device's ``cast``, recorded with its backward rule (``rules.cast_rule``) when a gradient flows."""
        if dtype is a.dtype:
            return a
        inner = self.inner
        return self._elementwise(inner.cast(a.value, dtype), infer("cast", a, dtype), (a,),
                                 lambda ins, out: rules.cast_rule(self._t(ins[0])),
                                 lambda vals: inner.cast(vals[0], dtype))

    # -- reductions, scans, sorting ------------------------------------------------------------------
    def reduce(self, op, a, dim):
        """The inner device's ``reduce``, recorded with its backward rule (``rules.reduce_rule``) when a gradient
        flows."""
        return self._record(self.inner.reduce(op, a.value, dim), infer("reduce", op, a, dim), (a,),
                            lambda out: rules.reduce_rule(op, self._t(a), self._t(out), dim))

    def scan(self, op, a, dim):
        """The inner device's ``scan``, recorded with its backward rule (``rules.scan_rule``) when a gradient flows."""
        def rule(out):
            indices = None
            if op in ("cummax", "cummin"):
                idx = self.inner.scan("cumarg" + op[3:], a.value, dim)
                indices = ember.Tensor(idx, a.shape, dtypes.int64, self.inner)
            return rules.scan_rule(op, self._t(a), self._t(out), dim, indices)
        return self._record(self.inner.scan(op, a.value, dim), infer("scan", op, a, dim), (a,), rule)

    def sort(self, a, dim, descending):
        """The inner device's ``sort``: values recorded with their backward rule (a scatter by the indices), indices
        constant."""
        v, i = self.inner.sort(a.value, dim, descending)
        spec = infer("sort", a, dim, descending)
        indices = AdArray(i, spec[0], dtypes.int64)
        values = self._record(v, spec, (a,), lambda out: rules.sort_rule(self._t(a), self._t(indices), dim))
        return values, indices

    # -- linear algebra, nn, indexing -----------------------------------------------------------------
    def matmul(self, a, b):
        """The inner device's ``matmul``, recorded with its backward rule (``rules.matmul_rule``) when a gradient
        flows."""
        return self._record(self.inner.matmul(a.value, b.value), infer("matmul", a, b), (a, b),
                            lambda out: rules.matmul_rule(self._t(a), self._t(b), a.node is not None,
                                                          b.node is not None))

    def conv(self, x, w, stride, padding, dilation, groups):
        """The inner device's ``conv``, recorded with its backward rule (``rules.conv_rule``) when a gradient flows."""
        value = self.inner.conv(x.value, w.value, stride, padding, dilation, groups)
        return self._record(value, infer("conv", x, w, stride, padding, dilation, groups), (x, w),
                            lambda out: rules.conv_rule(self._t(x), self._t(w), stride, padding, dilation, groups,
                                                        x.node is not None, w.node is not None))

    def pool(self, op, x, kernel, stride, padding, dilation):
        """The inner device's ``pool``, recorded with its backward rule (``rules.pool_rule``) when a gradient flows."""
        value = self.inner.pool(op, x.value, kernel, stride, padding, dilation)
        return self._record(value, infer("pool", op, x, kernel, stride, padding, dilation), (x,),
                            lambda out: rules.pool_rule(op, self._t(x), self._t(out), kernel, stride, padding,
                                                        dilation))

    def gather(self, x, dim, index):
        """The inner device's ``gather``, recorded with its backward rule (``rules.gather_rule``) when a gradient
        flows."""
        value = self.inner.gather(x.value, dim, index.value)
        return self._record(value, infer("gather", x, dim, index), (x, index),
                            lambda out: rules.gather_rule(self._t(x), dim, self._t(index)))

    def scatter(self, x, dim, index, src, mode):
        """The inner device's ``scatter``, recorded with its backward rule (``rules.scatter_rule``) when a gradient
        flows."""
        value = self.inner.scatter(x.value, dim, index.value, src.value, mode)
        return self._record(value, infer("scatter", x, dim, index, src, mode), (x, index, src),
                            lambda out: rules.scatter_rule(self._t(x), dim, self._t(index), self._t(src), mode))
