"""A reduction over several dims in one kernel: Wgpu's replacement for the composite
``reduce_dims`` (core_pure/reduction.py), which runs the one-dim ``reduce`` once per dim. A conv
bias's gradient (a sum over N, H and W) reads the gradient once instead of writing and reading
two intermediates; the kernel is ``reduce.reduce_dims``.
"""
import ember
from ember.composite import COMPOSITES, register_fused

from .device import Wgpu


def _reduce_dims(x, op, dims):
    dev = x.device
    if isinstance(dev, Wgpu):
        data = dev.reduce_dims(op, x._data, dims)
        if data is not None:
            return ember.Tensor(data, data.shape, x.dtype, dev)
    return COMPOSITES["reduce_dims"](x, op, dims)


register_fused(Wgpu, {"reduce_dims": _reduce_dims})
