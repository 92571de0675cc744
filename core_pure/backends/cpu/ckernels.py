"""The optional C kernels (``ember._ckernels``, built from ``ext_c/`` by cffi): loading and settings.

Everything here is safe to import anywhere, MicroPython included: the compiled module is imported
only when ``ember.Cpu()`` first asks for it, and its absence is a normal outcome (a pure wheel, no
compiler, a board) that ``reason()`` explains.

Settings, read once when the kernels load:

- ``EMBER_NO_C=1``: ``ember.Cpu()`` stays pure Python (``ember.Cpu(kernels="c")`` still gets C).
- ``EMBER_NUM_THREADS=n``: threads for large matmul, conv, pooling and elementwise work (default:
  the cores this process may use). ``set_num_threads(n)`` changes it later.
"""

_state = {}  # "lib", "ffi", "reason", "threads", "disabled"

ISA_NAMES = ("baseline", "avx2", "avx512")


def _env(name):
    # MicroPython's os has no environ; CPython's may be absent in embedded interpreters
    try:
        import os
        return os.environ.get(name)
    except (ImportError, AttributeError):
        return None


def _default_threads(lib):
    try:
        import os
        return max(1, len(os.sched_getaffinity(0)))
    except (ImportError, AttributeError, OSError):
        return max(1, lib.emb_hardware_threads())


def _load():
    if "lib" in _state or "reason" in _state:
        return
    try:
        from ... import _ckernels
    except ImportError as e:
        _state["reason"] = "ember._ckernels is not built or does not load (%s)" % (e,)
        return
    lib = _ckernels.lib
    lib.emb_isa()  # pick the instruction set once, before any thread can race to do it
    threads = _default_threads(lib)
    raw = _env("EMBER_NUM_THREADS")
    if raw:
        try:
            threads = max(1, int(raw))
        except ValueError:
            pass  # a malformed value keeps the default, as OMP_NUM_THREADS does
    _state["lib"] = lib
    _state["ffi"] = _ckernels.ffi
    _state["threads"] = threads
    _state["disabled"] = _env("EMBER_NO_C") not in (None, "", "0")


def native():
    """``(lib, ffi)`` of the compiled module, or ``(None, None)`` when it is unavailable."""
    _load()
    return _state.get("lib"), _state.get("ffi")


def available():
    """True when the C kernels load here."""
    return native()[0] is not None


def disabled():
    """True when EMBER_NO_C asks ``ember.Cpu()`` to stay pure Python."""
    _load()
    return bool(_state.get("disabled"))


def reason():
    """Why the C kernels are unavailable (None when they are available)."""
    _load()
    return _state.get("reason")


def num_threads():
    _load()
    return _state.get("threads", 1)


def set_num_threads(n):
    """Threads the C kernels may use from now on (at least 1); returns the previous count."""
    _load()
    previous = _state.get("threads", 1)
    _state["threads"] = max(1, int(n))
    return previous


def isa():
    """The instruction set the kernels run with: "baseline", "avx2" or "avx512" (None without C)."""
    lib = native()[0]
    return None if lib is None else ISA_NAMES[lib.emb_isa()]


def set_isa(name):
    """Run the kernels built for ``name`` (one of ISA_NAMES, up to what the CPU has); for tests and
    benchmarks. Returns the previous name."""
    lib = native()[0]
    if lib is None:
        raise ImportError(reason())
    previous = ISA_NAMES[lib.emb_isa()]
    if name not in ISA_NAMES or lib.emb_set_isa(ISA_NAMES.index(name)) < 0:
        raise ValueError("set_isa: expected one of %s supported by this CPU, found %r"
                         % (ISA_NAMES[:lib.emb_best_isa() + 1], name))
    return previous


def device_class():
    """The C-backed Cpu device class (a subclass of Cpu); raises ImportError when unavailable."""
    lib = native()[0]
    if lib is None:
        raise ImportError(reason())
    from .cdevice import CpuC
    return CpuC


def _built_file():
    """The compiled module's file next to the package (``_ckernels.abi3.so``, ``.pyd``...), or None."""
    import os
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name in os.listdir(here):
        if name.startswith("_ckernels.") and not name.endswith(".py"):
            return os.path.join(here, name)
    return None


def warn_if_broken():
    """On CPython: warn once when the C kernels ship with this ember but do not load, saying why
    and how to fix it. A pure install (no compiled file) and ``EMBER_NO_C=1`` stay silent."""
    import sys
    if sys.implementation.name == "micropython" or _env("EMBER_NO_C") not in (None, "", "0"):
        return
    try:
        path = _built_file()
    except OSError:
        return
    if path is None or available():
        return
    why = reason()
    fix = ("pip install cffi (the wheels with C kernels depend on it)" if "_cffi_backend" in why
           else "reinstall ember for this Python and platform (pip install --force-reinstall ember), "
                "or rebuild in a checkout with make venv")
    try:  # CPython's; the audit of board imports wants every such import guarded
        import warnings
    except ImportError:
        return
    warnings.warn("ember: the C kernels (%s) are present but do not load: %s. ember.Cpu() runs pure "
                  "Python, about 1000x slower on a large matmul. Fix: %s; EMBER_NO_C=1 silences this."
                  % (path, why, fix), RuntimeWarning, stacklevel=3)
