"""ember.accel: the optional layers above the core (CPython only).

Autodiff and Fusion (backend decorators), the NumPy and Wgpu backends, optimizers, training and
model import land here, each behind its own extra (``pip install ember[gpu]``, ...). Importing
``ember`` never imports this package, and importing this package imports no third-party module:
each name below loads its layer (and that layer's dependency) on first use.

- ``Autodiff``, ``Gradients``, ``no_grad``: gradients as a backend decorator (``ember.accel.autodiff``).
- ``NumPy``: the numpy device (``ember.accel.numpy``; needs ``ember[numpy]``).
- ``from_numpy(a, device=None)``, ``from_dlpack(x, device=None)``: tensors from numpy arrays,
  PyTorch tensors and other DLPack exporters, sharing memory where they can (docs/interop.md).
- ``Fusion``: kernel fusion as a backend decorator (``ember.accel.fusion``, docs/fusion.md).
- ``compile(step)``: step capture, a step recorded once and replayed (``ember.accel.capture``).
- ``Torch``, ``from_torch``, ``to_torch``: the device over torch tensors (CPU, CUDA, MPS) and
  zero-copy exchange with them (``ember.accel.torch``; needs ``ember[torch]``).
- ``autocast(dtype)``, ``GradScaler``: mixed-precision training on any device (``ember.accel.amp``).
- ``Wgpu``: the GPU device through wgpu (``ember.accel.wgpu``; needs ``ember[gpu]``, docs/gpu.md).
- ``Candle``: the device over Hugging Face Candle (``ember.accel.candle``; needs ``ember[candle]``,
  docs/candle.md).
- ``onnx``, ``pytorch``, ``distributed``: ONNX import and export, PyTorch checkpoints without torch,
  data-parallel training on MPI, as ``ember.accel.onnx.load(...)`` without an import of their own.
"""

_LAZY = {
    "Autodiff": "autodiff",
    "Gradients": "autodiff",
    "no_grad": "autodiff",
    "NumPy": "numpy",
    "from_numpy": "numpy",
    "from_dlpack": "numpy",
    "Wgpu": "wgpu",
    "Candle": "candle",
    "Torch": "torch",
    "from_torch": "torch",
    "to_torch": "torch",
    "autocast": "amp",
    "GradScaler": "amp",
    "Fusion": "fusion",
    "compile": "capture",
    "CaptureWarning": "capture",
}


_PACKAGES = ("onnx", "pytorch", "distributed")  # reachable as ember.accel.<name> once asked for


def __getattr__(name):
    import importlib
    if name in _PACKAGES:
        return importlib.import_module("ember.accel." + name)  # the import binds it here for next time
    layer = _LAZY.get(name)
    if layer is None:
        raise AttributeError("module 'ember.accel' has no attribute %r" % (name,))
    value = getattr(importlib.import_module("ember.accel." + layer), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_PACKAGES))
