"""The lazy graph ``Fusion`` records: nodes, and the handles tensors hold.

A ``Node`` is one recorded op (``op`` and ``args``, where args are other nodes, Python scalars and
op parameters) with its shape and dtype, or -- once computed -- just its inner ``value``. A
computed node drops its args, so the recorded graph above it can be freed.

Tensors hold a ``Lazy`` handle, never the node itself: the scheduler tells which pending nodes are
still wanted by the program (their handle is alive) from intermediates that only other nodes
reference, which a fused kernel never writes to memory.
"""
import weakref

ELEMENTWISE = ("unary", "binary", "where", "cast")
VIEWS = ("expand", "permute", "reshape")


class Node:
    __slots__ = ("op", "args", "shape", "dtype", "value", "handle")

    def __init__(self, op, args, shape, dtype, value=None):
        self.op = op
        self.args = args
        self.shape = shape
        self.dtype = dtype
        self.value = value
        self.handle = None  # weakref to the Lazy that tensors hold, set by Lazy()

    def set(self, value):
        self.value = value
        self.args = ()

    def alive(self):
        """True while a tensor (or anything but the graph) holds this node's handle."""
        return self.handle is not None and self.handle() is not None

    def __repr__(self):
        state = "done" if self.value is not None else self.op
        return "Node(%s, %s, %s)" % (state, self.shape, self.dtype.name)


class Lazy:
    """What a ``Fusion`` tensor holds: a handle on its node (shape and dtype answered directly)."""

    __slots__ = ("node", "__weakref__")

    def __init__(self, node):
        self.node = node
        node.handle = weakref.ref(self)

    @property
    def shape(self):
        return self.node.shape

    @property
    def dtype(self):
        return self.node.dtype


def topo(root):
    """The pending nodes ``root`` depends on (itself included), inputs before users."""
    order, seen, stack = [], set(), [root, False]  # (node, done) pairs, flat
    while stack:
        done = stack.pop()
        node = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen or node.value is not None:
            continue
        seen.add(id(node))
        stack += (node, True)
        for a in node.args:
            if type(a) is Node and a.value is None and id(a) not in seen:
                stack += (a, False)
    return order
