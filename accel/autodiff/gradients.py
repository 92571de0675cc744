"""Gradients: what ``loss.backward()`` returns, kept apart from the tensors and parameters."""
from ember.errors import ArgumentTypeError
from ember.tensor import Tensor, grad_node


class Gradients:
    """Gradients of one backward pass, keyed by the id of each leaf that required grad.

    ``x.grad(grads)`` (or ``grads.get(x)``) reads one; values live on the inner device and
    record nothing. Gradients add: ``grads_a + grads_b`` sums them key by key (accumulation
    over several passes, or over threads).
    """

    def __init__(self, by_id=None):
        self.by_id = {} if by_id is None else by_id

    def get(self, tensor):
        """The gradient of ``tensor`` (a leaf that required grad), or None if it got none."""
        node = grad_node(tensor)
        if node is None:
            return None
        return self.by_id.get(node.id)

    def get_id(self, id):
        """The gradient of the leaf keyed by ``id`` (``require_grad(id=...)``, a ``Param.id``), or None."""
        return self.by_id.get(id)

    def remove(self, tensor):
        """Take the gradient of leaf ``tensor`` out (returns it, or None)."""
        node = grad_node(tensor)
        return self.by_id.pop(node.id, None) if node is not None else None

    def __len__(self):
        return len(self.by_id)

    def __contains__(self, key):
        """``tensor in grads`` or ``leaf_id in grads``."""
        node = grad_node(key) if isinstance(key, Tensor) else None
        return (node.id if node is not None else key) in self.by_id

    def ids(self):
        """The ids of every leaf with a gradient."""
        return list(self.by_id)

    def __add__(self, other):
        if not isinstance(other, Gradients):
            raise ArgumentTypeError("Gradients: can only add Gradients, found %s" % type(other).__name__)
        out = dict(self.by_id)
        for k, g in other.by_id.items():
            out[k] = g if k not in out else out[k] + g
        return type(self)(out)

    def map(self, fn):
        """New Gradients with ``fn(grad)`` applied to every value (scaling, clipping...)."""
        return type(self)({k: fn(g) for k, g in self.by_id.items()})

    def __repr__(self):
        return "Gradients(%d tensors)" % len(self.by_id)
