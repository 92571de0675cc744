"""Room for a new tensor: what the host has free, and the check creation ops make before they build.

A request that cannot fit is refused at once with ``OutOfMemoryError`` naming its size, instead of
filling lists for minutes until the interpreter's ``MemoryError`` or the kernel's OOM killer ends it.
The check is an estimate (docs/architecture.md §6): the result's bytes against ``device.capacity()``,
plus, for ops that first build a Python list on the host, that list against the host's free memory.
"""
import gc
import sys

from .errors import OutOfMemoryError

_MICRO = sys.implementation.name == "micropython"
# where the host does not say what it has free: a limit no real request reaches (1 TiB)
UNKNOWN_LIMIT = 1 << 40
# below this many bytes a request is not checked (on CPython reading /proc costs microseconds)
CHECKED_FROM = 1 << 20 if not _MICRO else 1 << 10
# a host list's cost per element beyond the result: a slot and a boxed number (64-bit CPython; a
# board's pointers are 4 bytes and its floats 16)
LIST_BYTES = 32 if not _MICRO else 20


def _meminfo_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path):
    try:
        with open(path) as f:
            text = f.read().strip()
        return None if text == "max" else int(text)
    except (OSError, ValueError):
        return None


def _cgroup_room():
    # cgroup v2 (containers): the group's limit less what it uses
    limit = _read_int("/sys/fs/cgroup/memory.max")
    if limit is None:
        return None
    used = _read_int("/sys/fs/cgroup/memory.current") or 0
    return max(limit - used, 0)


def _address_space_room():
    # ``ulimit -v``: the process's address-space limit less its current size
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft < 0 or soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[0])
        import os
        size = pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        size = 0
    return max(soft - size, 0)


def _micro_free():
    if not hasattr(gc, "mem_free"):
        return UNKNOWN_LIMIT
    if sys.platform == "webassembly":
        return 2 << 30  # the wasm port's heap grows by itself, up to wasm's 2 GiB
    return gc.mem_free()


def host_free_bytes():
    """Bytes of host memory a new buffer may take now: Linux's MemAvailable, lowered by a cgroup or
    ``ulimit -v`` limit; ``gc.mem_free()`` on MicroPython; ``UNKNOWN_LIMIT`` where the host says nothing."""
    if _MICRO:
        return _micro_free()
    room = None
    for r in (_meminfo_available(), _cgroup_room(), _address_space_room()):
        if r is not None and (room is None or r < room):
            room = r
    return UNKNOWN_LIMIT if room is None else room


def _size(n):
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d bytes" % n


def _refuse(op, what, need, where, room):
    raise OutOfMemoryError("%s: out of memory: %s needs %s (%d bytes) but %s has about %s free"
                           % (op, what, _size(need), need, where, _size(room)))


def _short_of(need, room_fn):
    if need < CHECKED_FROM:
        return None
    room = room_fn()
    if need <= room:
        return None
    if _MICRO:  # garbage may hold what the request needs
        gc.collect()
        room = room_fn()
        if need <= room:
            return None
    return room


def reserve(device, n, dtype, op, host_list=False):
    """Raise ``OutOfMemoryError`` unless ``n`` elements of ``dtype`` fit on ``device`` (and, when
    the op builds them as a host list first, in the host's memory as a list)."""
    need = n * dtype.itemsize
    room = _short_of(need, device.capacity)
    if room is not None:
        _refuse(op, "%d elements of %s" % (n, dtype.name), need, device.capacity_source(), room)
    if host_list:
        need = n * LIST_BYTES
        room = _short_of(need, host_free_bytes)
        if room is not None:
            _refuse(op, "a host list of %d values" % n, need, "the host", room)
