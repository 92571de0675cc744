"""Autotuning (F5): the first time a kernel family meets a problem size on an adapter, time its
variants and keep the fastest, in memory and on disk.

The key is (adapter, op, dtype, each dim rounded up to a power of two, a checksum of the
candidates' names), so one tuning serves a range of sizes, and a choice made among other variants
(an older ember's) is made again. The cache is ``$XDG_CACHE_HOME/ember/autotune.json`` (``~/.cache/ember/...``
without it). ``EMBER_AUTOTUNE=0`` disables tuning: every call takes the variant's sound default.
Problems under ``MIN_FLOPS`` are not tuned either (launch overhead dominates them). A variant
that fails to compile on the adapter, or whose result differs from the direct kernel's, is
recorded as unusable and never timed.
"""
import json
import os
import time
import warnings
import zlib

MIN_FLOPS = 1 << 27  # 512^3 multiply-adds
_memory = {}
_loaded = []
_warned = []  # cache paths found corrupt (each warned about once)
tunings = []  # (key, {variant: seconds or None}) of the tunings done in this process


def enabled():
    return os.environ.get("EMBER_AUTOTUNE", "1") not in ("0", "", "false", "no")


def cache_path():
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "ember", "autotune.json")


def _pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def key_for(adapter, op, dtype, dims, candidates=None):
    """The cache key; ``candidates`` (variant names) end it as a checksum when given."""
    key = "%s|%s|%s|%s" % (adapter, op, dtype.name, "x".join(str(_pow2(d)) for d in dims))
    if candidates is not None:
        key += "|%08x" % (zlib.crc32(",".join(sorted(candidates)).encode()) & 0xFFFFFFFF)
    return key


def cached(adapter, op, dtype, dims):
    """The choice kept (in this process or on disk) for ``op`` at ``dims``, whatever candidates it
    was made among; an ``op`` ending in "+" matches every op it begins (a fused product's, tuned
    per epilogue as "matmul+<checksum>"). None where there is none."""
    _load()
    head, _, tail = key_for(adapter, "\0", dtype, dims).partition("\0")
    for key, name in _memory.items():
        if not key.startswith(head):
            continue
        kop, _, rest = key[len(head):].partition("|")
        if (kop == op or op.endswith("+") and kop.startswith(op)) and ("|" + rest + "|").startswith(tail + "|"):
            return name
    return None


def _read(path):
    """The cache file's choices, ``{}`` when there is none; a corrupt file (not JSON, nested too
    deeply, not an object of names) is treated as empty, with one warning per path."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError:
        return {}
    except (ValueError, RecursionError) as e:
        data = e
    if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
        return data
    if path not in _warned:
        _warned.append(path)
        warnings.warn("ember autotune: ignoring the corrupt cache %s (%s); it is rewritten on the next tuning"
                      % (path, data if isinstance(data, Exception) else "not an object of variant names"),
                      RuntimeWarning, stacklevel=3)
    return {}


def _load():
    path = cache_path()
    if _loaded and _loaded[0] == path:
        return
    _memory.clear()
    _memory.update(_read(path))
    _loaded[:] = [path]


def _save(key, name):
    path = cache_path()
    data = _read(path)
    data[key] = name
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: the choice still holds for this process


def _timed(rt, run):
    """Seconds per ``run()``: by the GPU's timestamps where the adapter has them and no one else
    is timing (the best of 3 rounds: what the kernel itself takes), else by the wall clock around
    a synchronized batch (which adds the submit and the wait)."""
    run()  # warm up (and compile)
    rt.sync()
    t0 = time.perf_counter()
    run()
    rt.sync()
    once = time.perf_counter() - t0
    reps = max(1, min(10, int(0.05 / max(once, 1e-6))))
    if "timestamp-query" in rt.features and rt.timer is None:
        rounds = []
        for _ in range(3):
            rt.start_timing()
            for _ in range(reps):
                run()
            rounds.append(sum(rt.stop_timing()) / reps)
        return min(rounds)
    t0 = time.perf_counter()
    for _ in range(reps):
        run()
    rt.sync()
    return (time.perf_counter() - t0) / reps


def choose(dev, op, dtype, dims, run, candidates, default, check):
    """The variant name for this problem: the cached choice, else the fastest after timing
    ``run(variant)`` for each of ``candidates`` that passes ``check(name)``; ``default`` when
    tuning is off or the problem is small."""
    flops = 1
    for d in dims:
        flops *= d
    if not enabled() or flops < MIN_FLOPS or len(candidates) < 2:
        return default
    _load()
    key = key_for(dev.rt.label, op, dtype, dims, candidates)
    name = _memory.get(key)
    if name in candidates:
        return name
    from .matmul_kernels import _BY_NAME
    times = {}
    for cand in candidates:
        try:
            ok = check(cand)
        except Exception:  # a variant this adapter cannot compile
            ok = False
        if not ok:
            times[cand] = None
            continue
        times[cand] = _timed(dev.rt, lambda: run(_BY_NAME[cand]))
    good = {k: t for k, t in times.items() if t is not None}
    best = min(good, key=good.get) if good else default
    tunings.append((key, times))
    _memory[key] = best
    _save(key, best)
    return best
