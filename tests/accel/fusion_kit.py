"""Helpers for the Cpu fusion-compiler tests: a kernel builder, and the unfused reference.

``Graph`` builds the IR of ``ember.accel.fusion.ir`` by hand with dtypes inferred. ``reference``
runs the same node list unfused, op by op through the pure ``Cpu(kernels="python")`` primitives on
whole arrays (loads are views of the inputs, row values are ``reduce`` results broadcast back along
the dim), which is what the compilers must reproduce.
"""
import math
import struct
from array import array as pyarray

import ember
from ember import dtypes
from ember.accel.fusion import ir
from ember.backend import COMPARISONS
from ember.backends.cpu.array import CpuArray, numel, values

PURE = ember.Cpu(kernels="python")
_TO_BOOL = ("isnan", "isinf", "logical_not")


class K:
    """An int constant operand (a bare int is a node index)."""

    def __init__(self, value):
        self.value = value


class Graph:
    """Nodes with inferred dtypes: ``g.binary("add", x, 1.0)`` returns the node index (a float or
    bool operand becomes a const node; an int const is ``K(3)``)."""

    def __init__(self, inputs):
        self.inputs = tuple(inputs)
        self.nodes = []

    def _add(self, node):
        self.nodes.append(node)
        return len(self.nodes) - 1

    def dtype(self, i):
        return self.nodes[i][1]

    def load(self, k):
        return self._add(("load", self.inputs[k], k))

    def const(self, value, dtype):
        if dtype == "float32":  # the frontend rounds a scalar to the tensor's precision
            value = pyarray("f", [value])[0]
        return self._add(("const", dtype, value))

    def unary(self, op, x):
        return self._add(("unary", "bool" if op in _TO_BOOL else self.dtype(x), op, x))

    def binary(self, op, x, y):
        if type(y) in (K, float, bool):
            y = self.const(getattr(y, "value", y), self.dtype(x))
        if type(x) in (K, float, bool):
            x = self.const(getattr(x, "value", x), self.dtype(y))
        return self._add(("binary", "bool" if op in COMPARISONS else self.dtype(x), op, x, y))

    def where(self, c, x, y):
        return self._add(("where", self.dtype(x), c, x, y))

    def cast(self, x, dtype):
        return self._add(("cast", dtype, x))

    def row(self, j, dtype):
        return self._add(("row", dtype, j))

    def acc(self, dtype):
        return self._add(("acc", dtype))

    def flat(self, rank, outputs):
        return ir.RowKernel(rank, None, self.inputs, self.nodes, [ir.Map()], [(o, False) for o in outputs])

    def rows(self, rank, dim, phases, outputs):
        return ir.RowKernel(rank, dim, self.inputs, self.nodes, phases, outputs)


def array(flat, shape, dtype):
    return PURE.from_list(list(flat), tuple(shape), dtypes.get(dtype))


def item(a, shape=None):
    """``(a, strides, offset)`` addressing ``a`` (its layout, or broadcast into ``shape``)."""
    strides, offset = a.layout()
    if shape is not None and tuple(shape) != a.shape:
        pad = len(shape) - len(a.shape)
        strides = (0,) * pad + tuple(0 if n == 1 and m != 1 else s
                                     for n, m, s in zip(a.shape, shape[pad:], strides))
    return (a, tuple(strides), offset)


# -- the unfused reference -------------------------------------------------------------------------

def _full(space, value, dtype):
    return PURE.full(space, value, dtypes.get(dtype))


def _as_array(v, space, dtype):
    return v if type(v) is CpuArray else _full(space, v, dtype)


def _evaluate(kernel, space, inputs, rows, acc):
    vals = []
    nodes = kernel.nodes
    for node in nodes:
        kind, dtype = node[0], node[1]
        refs = node[3:] if kind in ("unary", "binary") else node[2:] if kind in ("where", "cast") else ()
        if any(vals[r] is None for r in refs):  # reads a row value a later phase makes
            vals.append(None)
            continue
        if kind == "load":
            a, strides, offset = inputs[node[2]]
            v = CpuArray(a.data, tuple(space), a.dtype, tuple(strides), offset)
        elif kind == "const":
            v = node[2]
        elif kind == "row":
            v = rows[node[2]]
        elif kind == "acc":
            v = acc
        elif kind == "unary":
            v = PURE.unary(node[2], _as_array(vals[node[3]], space, nodes[node[3]][1]))
        elif kind == "binary":
            x, y = vals[node[3]], vals[node[4]]
            if type(x) is not CpuArray and type(y) is not CpuArray:
                x = _as_array(x, space, nodes[node[3]][1])
            v = PURE.binary(node[2], x, y)
        elif kind == "where":
            c, x, y = (_as_array(vals[r], space, nodes[r][1]) for r in node[2:])
            v = PURE.where(c, x, y)
        else:
            v = PURE.cast(_as_array(vals[node[2]], space, nodes[node[2]][1]), dtypes.get(dtype))
        vals.append(v)
    return vals


def _broadcast_along(a, space, dim):
    """A reduce result (size 1 along ``dim``) as a view over ``space``."""
    strides, offset = a.layout()
    strides = tuple(0 if d == dim else s for d, s in enumerate(strides))
    return CpuArray(a.data, tuple(space), a.dtype, strides, offset)


def reference(kernel, space, inputs):
    """The kernel's outputs computed unfused by the pure Cpu's primitives."""
    space = tuple(space)
    if kernel.kind == "matmul":
        batch, (m, n, k) = space[:-3], space[-3:]
        (ad, ast, aoff), (bd, bst, boff) = inputs[kernel.a], inputs[kernel.b]
        a = CpuArray(ad.data, batch + (m, k), ad.dtype, tuple(ast), aoff)
        b = CpuArray(bd.data, batch + (k, n), bd.dtype, tuple(bst), boff)
        acc = PURE.matmul(a, b)
        out_space = batch + (m, n)
        vals = _evaluate(kernel, out_space, inputs, [], acc)
        return [_as_array(vals[i], out_space, kernel.nodes[i][1]) for i, _ in kernel.outputs]
    rows = [None] * len(kernel.phases)
    for j, p in enumerate(kernel.phases):
        if type(p) is ir.Reduce:
            vals = _evaluate(kernel, space, inputs, rows, None)
            red = PURE.reduce(p.op, _as_array(vals[p.node], space, kernel.nodes[p.node][1]), kernel.dim)
            rows[j] = _broadcast_along(red, space, kernel.dim)
    vals = _evaluate(kernel, space, inputs, rows, None)
    outs = []
    for i, per_row in kernel.outputs:
        v = _as_array(vals[i], space, kernel.nodes[i][1])
        if per_row:
            d = kernel.dim
            shape = space[:d] + (1,) + space[d + 1:]
            strides, offset = v.layout()
            v = CpuArray(v.data, shape, v.dtype, strides, offset)
        outs.append(v)
    return outs


# -- comparison ------------------------------------------------------------------------------------

def _bits(v):
    return struct.pack("<d", v) if type(v) is float else v


def assert_same(got, want, tol=None, what=""):
    """Equal shapes and dtypes, and values bit for bit (``tol`` None) or within ``(rtol, atol)``."""
    assert got.shape == want.shape, "%s: shape %s != %s" % (what, got.shape, want.shape)
    assert got.dtype is want.dtype, "%s: dtype %s != %s" % (what, got.dtype.name, want.dtype.name)
    g, w = list(values(got)), list(values(want))
    assert len(g) == len(w) == numel(want.shape)
    for i, (x, y) in enumerate(zip(g, w)):
        if tol is None or type(y) is not float:
            ok = (x != x and y != y) or (_bits(x) == _bits(y) and type(x) is type(y))
        elif x != x or y != y:
            ok = x != x and y != y
        elif math.isinf(x) or math.isinf(y):
            ok = x == y
        else:
            ok = abs(x - y) <= tol[1] + tol[0] * abs(y)
        assert ok, "%s: element %d of %d: %r != expected %r" % (what, i, len(w), x, y)
