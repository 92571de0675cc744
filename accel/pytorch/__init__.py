"""PyTorch checkpoints without PyTorch: ``torch.save`` files (zip and legacy) read through an
allow-listed unpickler, each tensor read lazily from the file.

>>> from ember.accel import pytorch
>>> sd = pytorch.load("model.pt")                      # OrderedDict name -> ember Tensor
>>> model.load("model.pt")                             # Module.load sniffs the format itself
>>> report = pytorch.load_into(model, "model.pt", rules=[(r"^backbone\\.", "")], strict=False)

Only tensor-rebuild functions, storage types, torch dtypes, ``collections.OrderedDict`` and plain
containers are built; any other global, ``INST``/``OBJ``, ``BUILD`` on other objects or a length past
the end of the file is a ``RecordError``. torch is never imported.
"""
from .checkpoint import Checkpoint, Entry, TensorRef, open_checkpoint as open, remap

__all__ = ["open", "load", "load_into", "remap", "Checkpoint", "Entry", "TensorRef"]


def load(path, device=None, dtype=None, key=None, rules=None, strip_prefix="module."):
    """The checkpoint's state dict as an ``OrderedDict`` name -> ember Tensor on ``device``.

    ``key`` picks a part of the saved object (``"model"``, ``"ema.state_dict"``); by default wrapper
    keys (``state_dict``, ``model``...) are followed down to the tensors and a ``module.`` prefix on
    every name is dropped. ``rules`` rename keys (see ``remap``); ``dtype`` casts every tensor."""
    with open(path, key=key, rules=rules, strip_prefix=strip_prefix) as ck:
        return ck.state_dict(device, dtype)


def load_into(module, path, strict=True, key=None, rules=None, strip_prefix="module."):
    """Load the checkpoint into ``module`` tensor by tensor (``Module.load``'s rules: strict raises
    a ``RecordError`` listing missing, unexpected and mismatched names; not strict loads what fits
    and returns the ``LoadReport``). Floats are cast to the module's dtypes."""
    with open(path, key=key, rules=rules, strip_prefix=strip_prefix) as ck:
        return module.load(ck, strict=strict)
