"""ember.accel.torch: the Torch device and zero-copy exchange with torch tensors.

    >>> from ember.accel import Torch, from_torch, to_torch
    >>> x = ember.zeros(3, device=Torch("cuda"))

Needs torch (``pip install ember[torch]``). ``import ember`` and ``import ember.accel`` never import
torch; importing this package does. docs/interop.md says what is shared and what copied.
"""
from .device import Torch
from .interop import from_torch, to_torch
from . import grads as _grads  # noqa: E402, F401  (registers the conv and pool gradients)
from . import fused as _fused  # noqa: E402, F401  (registers torch kernels for linear, relu, softmax)
from . import loss as _loss  # noqa: E402, F401  (registers torch's cross entropy, forward and backward)
from . import optim as _optim  # noqa: E402, F401  (registers the multi-tensor optimizer updates)

__all__ = ["Torch", "from_torch", "to_torch"]
