"""The disk cache of compiled fused kernels, safe to share between processes.

A module is named by a hash of its C source, the compiler flags, the Python ABI and cffi's version,
and lives as ``<dir>/_ember_fk_<hash><EXT_SUFFIX>`` next to a ``.sha256`` of its bytes. The
directory is ``$EMBER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ember/fusion``, else
``~/.cache/ember/fusion``.

- **Build**: in a private temporary directory inside the cache directory, then the checksum and
  the module are each moved into place with ``os.replace`` (atomic), so a reader sees a whole file or
  none. Two processes building the same module both succeed; the last rename wins and either file
  is good.
- **Load**: a module whose checksum is missing or wrong, or that fails to import, is rebuilt, never
  trusted.
- **Unwritable directory**: one warning, then a private temporary directory for this process.

``STATS`` counts builds and loads (the tests read it to see a second process compile nothing).
"""
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
import warnings

STATS = {"compiled": 0, "loaded": 0, "rebuilt": 0}
_lock = threading.Lock()
_modules = {}  # name -> loaded module (one import per process)
_state = {"dir": None}


class BuildError(Exception):
    """The C compiler is unavailable or failed (the caller falls back to the interpreter)."""


def default_dir():
    env = os.environ.get("EMBER_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ember", "fusion")


def _writable(path):
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-", delete=True)
        probe.close()
        return True
    except OSError:
        return False


def cache_dir():
    """The directory in use: the configured one, or (once warned) a private temporary one."""
    wanted = default_dir()
    current = _state["dir"]
    if current is not None and current[0] == wanted:
        return current[1]
    path = wanted
    if not _writable(wanted):
        path = tempfile.mkdtemp(prefix="ember-fusion-")
        warnings.warn("ember fusion: the kernel cache directory %r is not writable; compiled kernels "
                      "go to %r for this process (set EMBER_CACHE_DIR to a writable directory)"
                      % (wanted, path), RuntimeWarning, stacklevel=3)
    _state["dir"] = (wanted, path)
    return path


def module_name(source, flags):
    h = hashlib.sha256()
    for part in (source, " ".join(flags), sys.implementation.cache_tag or "", _suffix(), _cffi_version()):
        h.update(part.encode())
        h.update(b"\0")
    return "_ember_fk_" + h.hexdigest()[:24]


def _suffix():
    return sysconfig.get_config_var("EXT_SUFFIX") or importlib.machinery.EXTENSION_SUFFIXES[0]


def _cffi_version():
    try:
        import cffi
    except ImportError:
        return ""
    return cffi.__version__


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _import(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _try_load(name, path):
    """The module at ``path`` when its checksum matches and it imports, else None."""
    try:
        with open(path + ".sha256") as f:
            want = f.read().strip()
        if _digest(path) != want:
            return None
        return _import(name, path)
    except (OSError, ImportError, ValueError):
        return None


def _build(name, source, flags, directory, cdef):
    try:
        import cffi
    except ImportError as e:
        raise BuildError("cffi is not installed (%s)" % (e,))
    tmp = tempfile.mkdtemp(prefix=".build-", dir=directory)
    try:
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        ffi.set_source(name, source, extra_compile_args=list(flags), extra_link_args=["-pthread"],
                       libraries=["m"])
        try:
            built = ffi.compile(tmpdir=tmp, verbose=False)
        except Exception as e:  # distutils' CompileError/LinkError, cffi's VerificationError, OSError
            raise BuildError("%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1] if str(e) else ""))
        final = os.path.join(directory, name + _suffix())
        with open(os.path.join(tmp, "sum"), "w") as f:
            f.write(_digest(built))
        os.replace(os.path.join(tmp, "sum"), final + ".sha256")
        os.replace(built, final)
        STATS["compiled"] += 1
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load(source, flags, cdef):
    """The compiled module of ``source``: from this process, from disk, or built now."""
    name = module_name(source, flags)
    with _lock:
        module = _modules.get(name)
        if module is not None:
            return module
        directory = cache_dir()
        path = os.path.join(directory, name + _suffix())
        module = _try_load(name, path) if os.path.exists(path) else None
        if module is None:
            if os.path.exists(path):
                STATS["rebuilt"] += 1
            path = _build(name, source, flags, directory, cdef)
            module = _try_load(name, path)
            if module is None:  # a concurrent builder's file replaced ours mid-way: load what is there
                module = _import(name, path)
        else:
            STATS["loaded"] += 1
        _modules[name] = module
        return module
