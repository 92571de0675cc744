"""The Torch device's reads that decide something on the host: index checks, and whether a fast
kernel may take an input.

Each is one read of the device (a sync on a GPU). A CUDA graph cannot hold a read, so while a
captured step's graph is taken (``accel/capture/lower_torch.py``) these functions are replaced by
versions that decide on the device instead: they clamp the indices, take the fast path, and raise
the graph's flag where the read would have raised or stepped aside; a replay that finds the flag up
runs the step again eagerly, where these functions read as usual. Callers therefore reach them
through this module (``checks.check_index(...)``) and use what they return.
"""
import torch

from ember.errors import IndexOutOfRange


def check_index(index, n, dim, op):
    """``index``, once every value is checked to lie in ``0 <= i < n``: else ``IndexOutOfRange``
    naming the first one outside."""
    if index.numel():
        bad = (index < 0) | (index >= n)
        if bool(bad.any()):
            first = int(index.reshape(-1)[bad.reshape(-1)][0])
            raise IndexOutOfRange("%s: index %d is out of range for dim %d of size %d" % (op, first, dim, n))
    return index


def check_classes(target, c, ignore_index, op):
    """Class indices ``target`` once each is checked to lie in ``[0, c)`` or to be ``ignore_index``:
    else ``IndexOutOfRange`` as the loss composites raise it."""
    if target.numel():
        safe = torch.where(target != ignore_index, target, 0)
        if bool(((safe < 0) | (safe >= c)).any()):
            raise IndexOutOfRange("%s: class indices must be in [0, %d) (or ignore_index), found %d..%d"
                                  % (op, c, int(safe.min()), int(safe.max())))
    return target


def any_true(flags):
    """Whether any element of the bool tensor ``flags`` is true: a case the fast kernel leaves to
    the composite (a nan in a max pool's input). In a CUDA graph: False, and the flag raised."""
    return bool(flags.any())
