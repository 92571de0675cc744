"""The host road: a primitive the binding cannot run exactly, run by the NumPy device.

``host(name)`` is the NumPy device's primitive ``name`` over Candle arrays: each ``CandleArray``
argument is downloaded (exchange.py: one exact copy), the NumPy kernel runs, and its arrays are
uploaded again. The NumPy device is tested against the pure Cpu by the conformance suite, so the
values are ember's; the cost is two copies, which ``docs/candle.md`` lists op by op.
"""
import numpy as np

from ember.accel.numpy.arrays import ember_dtype
from ember.accel.numpy.device import NumPy

from .exchange import CandleArray, download, upload


def to_host(v):
    """``v`` with every Candle array (also inside a list or tuple) as a NumPy-device array."""
    t = type(v)
    if t is CandleArray:
        return download(v)
    if (t is list or t is tuple) and v and type(v[0]) is CandleArray:
        return t(download(e) for e in v)
    return v


def to_device(r):
    """A NumPy primitive's result (an array or a tuple of arrays) as Candle arrays."""
    if isinstance(r, np.ndarray):
        return upload(r, ember_dtype(r))
    if type(r) is tuple:
        return tuple(to_device(e) for e in r)
    return r


def host(name):
    """The NumPy device's primitive ``name``, taking and returning Candle arrays."""
    kernel = getattr(NumPy, name)

    def run(*args):
        return to_device(kernel(*[to_host(a) for a in args]))
    run.__name__ = name
    run.__doc__ = "The primitive ``%s`` through the host (the NumPy device's kernel)." % name
    return run
