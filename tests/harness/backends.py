"""The backends the test suites run on. Each entry builds a device or says why it cannot.

CI states which backends it provides with ``EMBER_REQUIRE_BACKENDS`` (read by conftest.py): a
required backend that is unavailable fails the run instead of being skipped silently.
"""
import sys

import ember


def _cpu():
    return ember.Cpu(kernels="python")


def _cpu_c():
    # ember.Cpu with the C kernels of ext_c/ (ember._ckernels); raises ImportError saying why when
    # the module is not built or cannot load (always so on MicroPython)
    return ember.Cpu(kernels="c")


def _numpy():
    # CPython with numpy only: MicroPython has neither numpy nor ember.accel, so both imports stay
    # inside the factory, and there `import numpy` raises ImportError like a missing numpy does
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise ImportError("numpy is not installed (pip install ember[numpy])")
    from ember.accel.numpy import NumPy
    return NumPy()


def _wgpu():
    # CPython with wgpu and a GPU adapter (in CI: Mesa's lavapipe, a CPU Vulkan driver); the
    # imports stay inside the factory for MicroPython, where they raise ImportError
    try:
        import wgpu  # noqa: F401
    except ImportError:
        raise ImportError("wgpu is not installed (pip install ember[gpu])")
    from ember.accel.wgpu import Wgpu
    return Wgpu()  # RuntimeError when no adapter is found


def _candle():
    # CPython with Hugging Face Candle's binding (candle-nn) and numpy, which serves the ops the
    # binding lacks; the imports stay inside the factory for MicroPython
    try:
        import candle  # noqa: F401
    except ImportError:
        raise ImportError("candle is not installed (pip install ember[candle])")
    from ember.accel.candle import Candle
    return Candle()


def _torch():
    # CPython with torch: Torch("cpu") here and in CI; EMBER_TORCH_DEVICE=cuda runs the suites on the GPU
    try:
        import torch
    except ImportError:
        raise ImportError("torch is not installed (pip install ember[torch])")
    from ember.accel.torch import Torch
    # one intra-op thread: the suites run small ops, and torch's thread pool on a loaded 2-core
    # machine makes a 96x8 @ 8x32 matmul take 2.6 ms instead of 2.3 us (measured)
    torch.set_num_threads(1)
    import os
    return Torch(os.environ.get("EMBER_TORCH_DEVICE", "cpu"))


def _autodiff(factory):
    # Autodiff over another backend: the whole suite runs through the decorator, recording nothing
    # (no tensor requires grad), so every primitive's shape, dtype and value must pass through unchanged
    def make():
        from ember.accel.autodiff import Autodiff
        return Autodiff(factory())
    return make


def _fusion(factory):
    # Fusion over another backend: every op is recorded and runs as a generated kernel at the
    # test's read, so the suite checks each compiler (interpreter, C, WGSL) against the reference
    def make():
        from ember.accel.fusion import Fusion
        return Fusion(factory())
    return make


# (name, factory): a factory returns a device or raises ImportError/RuntimeError saying why not.
# Names stay plain (no parentheses) so that pytest -k can select them.
REGISTRY = [
    ("cpu", _cpu),
    ("cpu-c", _cpu_c),
    ("numpy", _numpy),
    ("wgpu", _wgpu),
]
if sys.implementation.name != "micropython":  # ember.accel is CPython only: not a MicroPython backend
    REGISTRY += [
        ("autodiff-cpu", _autodiff(_cpu)),
        ("autodiff-cpu-c", _autodiff(_cpu_c)),
        ("fusion-cpu", _fusion(_cpu)),
        ("fusion-cpu-c", _fusion(_cpu_c)),
        ("fusion-wgpu", _fusion(_wgpu)),
        ("candle", _candle),
        ("autodiff-candle", _autodiff(_candle)),
        ("torch", _torch),
        ("autodiff-torch", _autodiff(_torch)),
    ]

_cache = {}


def _probe():
    if not _cache:
        ok, missing = [], []
        for name, factory in REGISTRY:
            try:
                ok.append((name, factory()))
            except (ImportError, RuntimeError, OSError) as e:
                missing.append((name, "%s: %s" % (type(e).__name__, e)))
        _cache["ok"] = ok
        _cache["missing"] = missing
    return _cache


def available():
    """[(name, device)] for every backend that works here."""
    return _probe()["ok"]


def plain():
    """[(name, device)] for the available backends that are no decorators: what a test that wraps
    devices itself (``Autodiff(inner)``) takes as its inner devices."""
    from ember.backend import Decorator
    return [(n, d) for n, d in available() if not isinstance(d, Decorator)]


def inner_for_autodiff():
    """[(name, device)] for the available backends an ``Autodiff`` may wrap: every one that
    records no gradients itself (plain backends and ``Fusion`` over them)."""
    from ember.backend import grad_device
    return [(n, d) for n, d in available() if grad_device(d) is None]


def unavailable():
    """[(name, reason)] for every registered backend that does not."""
    return _probe()["missing"]


def reference():
    """The device expected values are computed on when numpy is absent: the pure-Python Cpu."""
    return ember.Cpu(kernels="python")
