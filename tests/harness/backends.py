"""The backends the test suites run on. Each entry builds a device or says why it cannot.

CI states which backends it provides with ``EMBER_REQUIRE_BACKENDS`` (read by conftest.py): a
required backend that is unavailable fails the run instead of being skipped silently.
"""
import ember


def _cpu():
    return ember.Cpu()


# (name, factory): a factory returns a device or raises ImportError/RuntimeError saying why not.
# Later issues append here: cpu-c (C kernels), numpy, wgpu, autodiff(...).
REGISTRY = [
    ("cpu", _cpu),
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


def unavailable():
    """[(name, reason)] for every registered backend that does not."""
    return _probe()["missing"]


def reference():
    """The device expected values are computed on when numpy is absent: the pure-Python Cpu."""
    return ember.Cpu()
