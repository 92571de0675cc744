"""ember.accel.wgpu: the GPU device through wgpu (``pip install ember[gpu]``).

    >>> from ember.accel import Wgpu
    >>> x = ember.ones(3, device=Wgpu())

Importing this package imports wgpu; ``import ember.accel`` alone does not. docs/gpu.md describes
the design: storage per dtype, the asynchronous queue, the buffer pool and the autotuner.
"""
from .device import Wgpu  # noqa: F401
from .memory import OutOfMemoryError  # noqa: F401
from . import optim as _optim  # noqa: F401  (registers the fused optimizer updates)
from . import pool_grad  # noqa: F401  (registers Wgpu's pool_input_grad)
from . import conv_grad  # noqa: F401  (registers Wgpu's conv_input_grad and conv_weight_grad)
from . import reduce_dims  # noqa: F401  (registers Wgpu's reduce_dims)

__all__ = ["Wgpu", "OutOfMemoryError"]
