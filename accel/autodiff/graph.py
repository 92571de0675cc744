"""The tape: nodes that remember how to send a gradient to their inputs, and the backward walk.

There is no global tape. Each result of a differentiable op holds a ``Node`` pointing at its
inputs' nodes, so a graph lives exactly as long as the tensors that can reach it, threads never
share one, and dropping a tensor without calling backward frees its graph.
"""
import itertools
import threading

# each node's id; a C iterator's next is atomic under the GIL, so threads never share an id
new_id = itertools.count(1).__next__


class Node:
    """One recorded op: its inputs' nodes and ``backward(grad) -> grads for each input``.

    A leaf (a tensor that requires grad) has no parents and no backward; its ``id`` keys its
    gradient in ``Gradients`` (a module's parameter keeps its id across forks and devices).
    """

    __slots__ = ("id", "parents", "backward", "shape", "dtype", "kept", "recompute")

    def __init__(self, parents, backward, shape, dtype, id=None):
        self.id = new_id() if id is None else id
        self.parents = parents
        self.backward = backward
        self.shape = shape
        self.dtype = dtype
        self.kept = None  # with checkpointing: this node's output, when it is worth keeping
        self.recompute = None  # with checkpointing: redoes this (elementwise) node's op

    def output(self):
        """This node's forward value (checkpointing): the kept one, or recomputed from parents."""
        if self.kept is not None:
            return self.kept
        return self.recompute()

    @property
    def is_leaf(self):
        return self.backward is None


class _GradMode(threading.local):
    enabled = True


grad_mode = _GradMode()

# functions called with {leaf id: gradient} after every backward pass (ember.accel.optim adds
# the one that fills Param.grad for PyTorch's training loop)
backward_hooks = []


class _LeafHook(threading.local):
    fn = None


_leaf_hook = _LeafHook()


class leaf_gradients:
    """``with leaf_gradients(fn):`` — during every backward pass on this thread, ``fn(id, grad)``
    is called as soon as a leaf's gradient is final (the last node using it has sent its part),
    while the walk goes on: what lets ``DistributedDataParallel`` start a bucket's all-reduce
    in the middle of backward. A leaf that is itself the root gets no call."""

    def __init__(self, fn):
        self.fn = fn

    def __enter__(self):
        self.previous = _leaf_hook.fn
        _leaf_hook.fn = self.fn
        return self

    def __exit__(self, *exc):
        _leaf_hook.fn = self.previous
        return False


def _final_leaves(order):
    """{index in ``order``: [leaf ids whose gradient is final once that node has run]} and
    {leaf id: its leaf nodes}."""
    last, nodes = {}, {}
    for i, node in enumerate(order):
        if node.is_leaf:
            nodes.setdefault(node.id, []).append(node)
            continue
        for p in node.parents:
            if p is not None and p.is_leaf:
                last[p.id] = i
    ready = {}
    for id, i in last.items():
        ready.setdefault(i, []).append(id)
    return ready, nodes


class no_grad:
    """``with no_grad():`` — ops inside record nothing (inference, optimizer steps). Per thread.
    Also a decorator: ``@no_grad()`` (or ``@no_grad``) makes every call of a function record nothing.

    >>> @ember.no_grad()
    ... def evaluate(model, x):
    ...     return model(x).argmax(1)
    """

    def __new__(cls, fn=None):
        if fn is not None:  # @no_grad without parentheses
            return object.__new__(cls)(fn)
        return object.__new__(cls)

    def __call__(self, fn):
        if not callable(fn):
            from ember.errors import ArgumentTypeError
            raise ArgumentTypeError("no_grad: decorates a function, found %s" % type(fn).__name__)

        def call(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        call.__name__ = getattr(fn, "__name__", "call")
        call.__qualname__ = getattr(fn, "__qualname__", call.__name__)
        call.__doc__ = fn.__doc__
        call.__wrapped__ = fn
        return call

    def __enter__(self):
        self.previous = grad_mode.enabled
        grad_mode.enabled = False
        return self

    def __exit__(self, *exc):
        grad_mode.enabled = self.previous
        return False


def topological(root):
    """Nodes reachable from ``root``, each after every node that consumes it (iterative DFS).

    Nodes are told apart by identity, not by ``id``: a parameter's leaf id is chosen by its
    module and may equal an op node's id.
    """
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        for p in node.parents:
            if p is not None and p not in seen:
                stack.append((p, False))
    order.reverse()
    return order


def run_backward(root, seed, release=True):
    """Propagate ``seed`` (the gradient of ``root``) to every leaf; returns {leaf id: gradient}.

    Intermediate gradients are dropped as soon as their node has passed them on. With
    ``release`` the walked nodes forget their inputs and closures, freeing the graph.
    """
    pending = {root: seed}
    leaves = {}
    order = topological(root)
    hook = _leaf_hook.fn
    ready, nodes = _final_leaves(order) if hook is not None else (None, None)
    for i, node in enumerate(order):
        grad = pending.pop(node, None)
        if grad is not None and node.is_leaf:  # leaves sharing an id (one parameter used twice) sum
            have = leaves.get(node.id)
            leaves[node.id] = grad if have is None else have + grad
        elif grad is not None:
            grads = node.backward(grad)
            for parent, g in zip(node.parents, grads):
                if parent is None or g is None:
                    continue
                have = pending.get(parent)
                pending[parent] = g if have is None else have + g
        if ready is not None and i in ready:
            _send_final(ready[i], nodes, pending, leaves, hook)
    if release:
        for node in order:
            if not node.is_leaf:
                node.parents = ()
                node.backward = _released
                node.kept = node.recompute = None
    return leaves


def _send_final(ids, nodes, pending, leaves, hook):
    """Move the finished gradients of leaf ``ids`` from ``pending`` to ``leaves`` and tell ``hook``."""
    for id in ids:
        g = leaves.get(id)  # a leaf node of this id the walk has passed already
        for leaf in nodes[id]:
            part = pending.pop(leaf, None)
            if part is not None:
                g = part if g is None else g + part
        if g is not None:
            leaves[id] = g
            hook(id, g)


def _released(grad):
    from ember.errors import ArgumentError
    raise ArgumentError("backward: this graph was already used by a backward pass and released; "
                        "call backward(retain_graph=True) to walk it twice")
