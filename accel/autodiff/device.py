"""``Autodiff(device)``: a backend decorator that records a graph for ``backward``.

Its arrays pair the inner device's array with the shape, dtype and (when the value depends on
a tensor that requires grad) the ``Node`` that produced it. Every primitive runs on the inner
device and, where a gradient can flow, records its rule from ``rules.py``. The decorator never
asks which device it wraps: any backend that implements the contract works inside it.
"""
import ember
from ember import dtypes
from ember.backend import COMPARISONS, Decorator, grad_device
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.shapes import conv_out_size

from . import rules
from .gradients import Gradients
from .graph import Node, grad_mode, run_backward

_BOOL_UNARY = ("isnan", "isinf", "logical_not")
_COMPARE = COMPARISONS


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


def _value(a):
    return a.value if type(a) is AdArray else a


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

    def _record(self, value, shape, dtype, inputs, make_rule):
        """Wrap an inner result; attach a node if a gradient can flow from ``inputs`` into it."""
        out = AdArray(value, shape, dtype)
        if not grad_mode.enabled or dtype.kind != "f":
            return out
        parents = tuple(a.node if type(a) is AdArray else None for a in inputs)
        for p in parents:
            if p is not None:
                out.node = Node(parents, make_rule(out), shape, dtype)
                if self.checkpointing:
                    out.node.kept = value  # a recompute source for the elementwise ops after it
                break
        return out

    def _elementwise(self, value, shape, dtype, inputs, rule, recompute):
        """Record an elementwise op. ``rule(ins, out)`` builds its backward from AdArrays;
        ``recompute(values)`` redoes the op from its inputs' inner values."""
        if not self.checkpointing:
            return self._record(value, shape, dtype, inputs, lambda out: rule(inputs, out))
        out = AdArray(value, shape, dtype)
        if not grad_mode.enabled or dtype.kind != "f":
            return out
        parents = tuple(a.node if type(a) is AdArray else None for a in inputs)
        if all(p is None for p in parents):
            return out
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

    def wrap(self, value, shape, dtype):
        """An inner array as one of this device's arrays, recording nothing (used by Tensor.to)."""
        return AdArray(value, shape, dtype)

    def unwrap(self, a):
        return a.value

    def grad_node(self, a):
        return a.node

    def require_grad(self, a, id=None):
        if a.dtype.kind != "f":
            raise DTypeError("requires_grad: only float tensors can require grad, found %s" % a.dtype.name)
        node = Node((), None, a.shape, a.dtype, id)
        node.kept = a.value
        return AdArray(a.value, a.shape, a.dtype, node)

    def detach(self, a):
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
        return Gradients(run_backward(a.node, seed, release=not retain_graph))

    # -- composites recorded whole (see ember.composite) ------------------------------------------------
    def run_composite(self, name, args, kwargs):
        """Record a composite as one node when a backward for it exists, else let its primitives
        record themselves. Forward and backward are chosen apart: the forward is whatever the inner
        device resolves (a user's override, a fused kernel, or the body), the backward the one
        registered with that override or else the composite's own (``composite.backward_for``);
        a backward needs only ``(grad, out, *args)``, so any forward serves."""
        from ember.composite import COMPOSITES, backward_for, run, unwrap_args
        backward = backward_for(self.inner, name)
        if backward is None or any(isinstance(v, ember.Tensor) and v.requires_grad for v in kwargs.values()):
            return COMPOSITES[name](*args, **kwargs)  # a backward gives gradients to positional arguments only
        inner_args, inner_kwargs = unwrap_args(self, args, kwargs)
        out = run(self.inner, name, inner_args, inner_kwargs)
        parents = tuple(a._data.node if isinstance(a, ember.Tensor) and a.device == self else None for a in args)
        wrapped = AdArray(out._data, out.shape, out.dtype)
        if grad_mode.enabled and out.dtype.kind == "f" and any(p is not None for p in parents):
            wrapped.node = Node(parents, lambda g: backward(g, out, *inner_args, **inner_kwargs),
                                out.shape, out.dtype)
            if self.checkpointing:
                wrapped.node.kept = out._data
        return ember.Tensor(wrapped, out.shape, out.dtype, self)

    # -- data in and out ------------------------------------------------------------------------------
    def from_list(self, flat, shape, dtype):
        return AdArray(self.inner.from_list(flat, shape, dtype), tuple(shape), dtype)

    def from_bytes(self, buf, shape, dtype):
        return AdArray(self.inner.from_bytes(buf, shape, dtype), tuple(shape), dtype)

    def full(self, shape, value, dtype):
        return AdArray(self.inner.full(shape, value, dtype), tuple(shape), dtype)

    def to_list(self, a):
        return self.inner.to_list(a.value)

    def to_bytes(self, a):
        return self.inner.to_bytes(a.value)

    # -- movement ------------------------------------------------------------------------------------
    def reshape(self, a, shape):
        shape = tuple(shape)
        return self._record(self.inner.reshape(a.value, shape), shape, a.dtype, (a,),
                            lambda out: rules.reshape_rule(self._t(a)))

    def permute(self, a, dims):
        shape = tuple(a.shape[d] for d in dims)
        return self._record(self.inner.permute(a.value, dims), shape, a.dtype, (a,),
                            lambda out: rules.permute_rule(dims))

    def expand(self, a, shape):
        shape = tuple(shape)
        return self._record(self.inner.expand(a.value, shape), shape, a.dtype, (a,),
                            lambda out: rules.expand_rule(a.shape, shape))

    def slice(self, a, ranges):
        shape = tuple(len(range(*r)) for r in ranges)
        return self._record(self.inner.slice(a.value, ranges), shape, a.dtype, (a,),
                            lambda out: rules.slice_rule(self._t(a), ranges))

    def slice_assign(self, a, ranges, v):
        return self._record(self.inner.slice_assign(a.value, ranges, v.value), a.shape, a.dtype, (a, v),
                            lambda out: rules.slice_assign_rule(self._t(a), ranges, self._t(v)))

    def cat(self, arrays, dim):
        first = arrays[0]
        sizes = [x.shape[dim] for x in arrays]
        shape = first.shape[:dim] + (sum(sizes),) + first.shape[dim + 1:]
        value = self.inner.cat([x.value for x in arrays], dim)
        return self._record(value, shape, first.dtype, arrays, lambda out: rules.cat_rule(sizes, dim))

    # -- elementwise ---------------------------------------------------------------------------------
    def unary(self, op, a):
        dtype = dtypes.bool_ if op in _BOOL_UNARY else a.dtype
        inner = self.inner
        return self._elementwise(inner.unary(op, a.value), a.shape, dtype, (a,),
                                 lambda ins, out: rules.unary_rule(op, self._t(ins[0]), self._t(out)),
                                 lambda vals: inner.unary(op, vals[0]))

    def binary(self, op, a, b):
        arr = a if type(a) is AdArray else b
        dtype = dtypes.bool_ if op in _COMPARE else arr.dtype
        inner = self.inner

        def rule(ins, out):
            ta, tb = (self._t(x) if type(x) is AdArray else x for x in ins)
            return rules.binary_rule(op, ta, tb, self._t(out))
        return self._elementwise(inner.binary(op, _value(a), _value(b)), arr.shape, dtype, (a, b), rule,
                                 lambda vals: inner.binary(op, vals[0], vals[1]))

    def where(self, cond, a, b):
        inner = self.inner
        return self._elementwise(inner.where(cond.value, a.value, b.value), a.shape, a.dtype, (cond, a, b),
                                 lambda ins, out: rules.where_rule(*[self._t(x) for x in ins]),
                                 lambda vals: inner.where(*vals))

    def cast(self, a, dtype):
        if dtype is a.dtype:
            return a
        inner = self.inner
        return self._elementwise(inner.cast(a.value, dtype), a.shape, dtype, (a,),
                                 lambda ins, out: rules.cast_rule(self._t(ins[0])),
                                 lambda vals: inner.cast(vals[0], dtype))

    # -- reductions, scans, sorting ------------------------------------------------------------------
    def reduce(self, op, a, dim):
        shape = a.shape[:dim] + (1,) + a.shape[dim + 1:]
        dtype = dtypes.int64 if op in ("argmax", "argmin") else dtypes.bool_ if op in ("any", "all") else a.dtype
        return self._record(self.inner.reduce(op, a.value, dim), shape, dtype, (a,),
                            lambda out: rules.reduce_rule(op, self._t(a), self._t(out), dim))

    def scan(self, op, a, dim):
        dtype = dtypes.int64 if op.startswith("cumarg") else a.dtype

        def rule(out):
            indices = None
            if op in ("cummax", "cummin"):
                idx = self.inner.scan("cumarg" + op[3:], a.value, dim)
                indices = ember.Tensor(idx, a.shape, dtypes.int64, self.inner)
            return rules.scan_rule(op, self._t(a), self._t(out), dim, indices)
        return self._record(self.inner.scan(op, a.value, dim), a.shape, dtype, (a,), rule)

    def sort(self, a, dim, descending):
        v, i = self.inner.sort(a.value, dim, descending)
        indices = AdArray(i, a.shape, dtypes.int64)
        values = self._record(v, a.shape, a.dtype, (a,),
                              lambda out: rules.sort_rule(self._t(a), self._t(indices), dim))
        return values, indices

    # -- linear algebra, nn, indexing -----------------------------------------------------------------
    def matmul(self, a, b):
        shape = a.shape[:-1] + (b.shape[-1],)
        return self._record(self.inner.matmul(a.value, b.value), shape, a.dtype, (a, b),
                            lambda out: rules.matmul_rule(self._t(a), self._t(b), a.node is not None,
                                                          b.node is not None))

    def conv(self, x, w, stride, padding, dilation, groups):
        spatial = tuple(conv_out_size(n, k, s, p, d) for n, k, s, p, d in
                        zip(x.shape[2:], w.shape[2:], stride, padding, dilation))
        shape = (x.shape[0], w.shape[0]) + spatial
        value = self.inner.conv(x.value, w.value, stride, padding, dilation, groups)
        return self._record(value, shape, x.dtype, (x, w),
                            lambda out: rules.conv_rule(self._t(x), self._t(w), stride, padding, dilation, groups,
                                                        x.node is not None, w.node is not None))

    def pool(self, op, x, kernel, stride, padding, dilation):
        spatial = tuple(conv_out_size(n, k, s, p, d) for n, k, s, p, d in
                        zip(x.shape[2:], kernel, stride, padding, dilation))
        shape = x.shape[:2] + spatial
        value = self.inner.pool(op, x.value, kernel, stride, padding, dilation)
        return self._record(value, shape, x.dtype, (x,),
                            lambda out: rules.pool_rule(op, self._t(x), self._t(out), kernel, stride, padding,
                                                        dilation))

    def gather(self, x, dim, index):
        value = self.inner.gather(x.value, dim, index.value)
        return self._record(value, index.shape, x.dtype, (x, index),
                            lambda out: rules.gather_rule(self._t(x), dim, self._t(index)))

    def scatter(self, x, dim, index, src, mode):
        value = self.inner.scatter(x.value, dim, index.value, src.value, mode)
        return self._record(value, x.shape, x.dtype, (x, index, src),
                            lambda out: rules.scatter_rule(self._t(x), dim, self._t(index), self._t(src), mode))
