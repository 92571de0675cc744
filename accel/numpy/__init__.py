"""ember.accel.numpy: the NumPy device and zero-copy exchange with numpy, PyTorch and DLPack.

    >>> from ember.accel import NumPy, from_numpy, from_dlpack
    >>> x = ember.zeros(3, device=NumPy())

Needs numpy >= 2.0 (``pip install ember[numpy]``). ``import ember`` and ``import ember.accel``
never import numpy; importing this package does. docs/interop.md says what is shared and what copied.
"""
import numpy as _np

if int(_np.__version__.split(".")[0]) < 2:
    raise ImportError("ember.accel.numpy needs numpy >= 2.0 (NEP 50 scalar rules), found numpy %s; "
                      "pip install 'numpy>=2'" % _np.__version__)

from .device import NumPy  # noqa: E402
from .interop import from_dlpack, from_numpy, to_numpy  # noqa: E402
from . import optim as _optim  # noqa: E402, F401  (registers the fused optimizer updates)

__all__ = ["NumPy", "from_numpy", "from_dlpack", "to_numpy"]
