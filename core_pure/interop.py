"""The interop hook: how tensors reach numpy, PyTorch and DLPack without the core importing them.

The core is what a board holds, so ``Tensor.numpy()``, ``np.asarray(t)`` and ``t.__dlpack__()`` call
the functions registered here; ``ember.accel.numpy.interop`` registers them when it is imported
(``import ember.accel.numpy``, ``from ember.accel import from_numpy``...). A program that never
imported it (``np.asarray(ember.ones(2))``) gets it imported on the first such call: that needs
numpy, and where numpy is missing the ImportError says so.

>>> register(numpy=to_numpy, array=array_protocol, dlpack=dlpack, dlpack_device=dlpack_device)
"""

_hooks = {}  # "numpy", "array", "dlpack", "dlpack_device" -> function(tensor, ...)

DEFAULT = "ember.accel.numpy.interop"  # the module that registers the hooks of a CPython install


def register(**functions):
    """Set the interop functions (``numpy``, ``array``, ``dlpack``, ``dlpack_device``)."""
    _hooks.update(functions)


def hook(name):
    """The function registered for ``name``, importing the default module the first time."""
    fn = _hooks.get(name)
    if fn is None:
        __import__(DEFAULT)  # registers itself; raises ImportError where numpy (or accel) is absent
        fn = _hooks.get(name)
        if fn is None:
            from .errors import ArgumentError
            raise ArgumentError("interop: nothing registered for %r (known: %s)" % (name, sorted(_hooks)))
    return fn
