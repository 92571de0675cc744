"""The NumPy device's ``random`` primitive: ember's Generator stream, the same values as every Cpu.

The C kernels (``ext_c/k_random.c``, through the C-backed Cpu's ``draw``) write the draws straight
into the numpy array; without them (no compiler, ``EMBER_NO_C``) the values come from
``Generator.draw`` on the host, which is the same stream, slower. numpy's own generators are not
used: they give other values.
"""
import numpy as np

from ember import dtypes

from .arrays import NP, from_values

_F64 = np.dtype(np.float64)


def _c_draw():
    """(``cdevice.draw``, the kernels' dtype codes), or (None, None) without the C kernels."""
    from ember.backends.cpu import ckernels
    if ckernels.native()[0] is None or ckernels.disabled():
        return None, None
    from ember.backends.cpu import cdevice, cstorage
    return cdevice.draw, cstorage.DT


def random(kind, shape, dtype, generator, params):
    """The primitive ``random``: the C kernel draws into numpy memory, the same values as the Cpu's for a seed."""
    n = 1
    for s in shape:
        n *= s
    draw, codes = _c_draw()
    wide = dtype is dtypes.float16 or dtype is dtypes.bfloat16  # drawn in float64, rounded as the Cpu rounds
    if draw is not None:
        out = np.empty(n, _F64 if wide else np.uint8 if dtype is dtypes.bool_ else NP[dtype])
        if draw(kind, n, codes[dtypes.float64 if wide else dtype], generator, params, out.ctypes.data):
            if wide:
                return from_values(out, dtype).reshape(shape)
            return (out.view(np.bool_) if dtype is dtypes.bool_ else out).reshape(shape)
    return from_values(generator.draw(kind, n, params), dtype).reshape(shape)
