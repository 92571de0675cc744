"""ember.accel.candle: the Candle device, ember's primitives over Hugging Face Candle's tensors.

    >>> from ember.accel import Candle
    >>> x = ember.ones(3, 4, device=Candle())

Needs candle-nn 0.4.2 (``pip install ember[candle]``), which imports as ``candle``.
``import ember`` and ``import ember.accel`` never import candle; importing this package does (and
numpy, whose device serves the ops the binding lacks). docs/candle.md lists, primitive by primitive,
what runs in candle, what is composed there and what takes the host road.
"""
try:
    import candle as _candle
except ImportError as e:
    raise ImportError("ember.accel.candle needs Hugging Face Candle's Python binding "
                      "(pip install 'ember[candle]', i.e. candle-nn==0.4.2): %s" % (e,))
if not hasattr(getattr(_candle, "utils", None), "load_safetensors"):  # another package named candle
    raise ImportError("ember.accel.candle needs candle-nn 0.4.2 (candle.utils.load_safetensors), "
                      "found a candle module without it at %s" % (getattr(_candle, "__file__", None)
                                                                 or list(getattr(_candle, "__path__", [])),))

from .device import Candle  # noqa: E402

__all__ = ["Candle"]
