"""IDX files (the format of MNIST and of ember's shipped digits), read and written with numpy.

An IDX file is ``0x00 0x00 <type> <ndim>``, then ``ndim`` big-endian uint32 sizes, then the values
big-endian in row-major order. ``read_idx`` takes plain or gzip-compressed files (told apart by
their first bytes, not their names) and raises ``DataError`` naming the file for anything that is
not a complete, well-formed IDX file: a wrong magic, an unknown type, a truncated header or body,
bytes past the end. It never reads more than the header says the file holds.
"""
import gzip
import os
import zlib

import numpy as np

from ember.errors import ArgumentError

from .errors import DataError

# type code -> big-endian numpy dtype
TYPES = {0x08: np.dtype("u1"), 0x09: np.dtype("i1"), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
         0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_CODES = {(dt.kind, dt.itemsize): code for code, dt in TYPES.items()}
_GZIP = b"\x1f\x8b"


def _open(path):
    with open(path, "rb") as f:
        head = f.read(2)
    return gzip.open(path, "rb") if head == _GZIP else open(path, "rb")


def _read(f, n, path, what):
    """Exactly ``n`` bytes, read in chunks: a hostile header's huge size allocates nothing."""
    parts, have = [], 0
    try:
        while have < n:
            chunk = f.read(min(n - have, 1 << 20))
            if not chunk:
                break
            parts.append(chunk)
            have += len(chunk)
    except (OSError, EOFError, zlib.error) as e:  # a corrupt gzip stream
        raise DataError("read_idx: %s: cannot decompress the %s: %s" % (path, what, e))
    if have != n:
        raise DataError("read_idx: %s: truncated %s: expected %d bytes, found %d" % (path, what, n, have))
    return b"".join(parts)


def read_idx(path):
    """The array an IDX file holds (native byte order), e.g. uint8 (60000, 28, 28) for MNIST images.

    >>> labels = read_idx("train-labels-idx1-ubyte.gz")    # uint8 (60000,)
    """
    path = os.fspath(path)
    try:
        f = _open(path)
    except OSError as e:
        raise DataError("read_idx: cannot open %s: %s" % (path, e.strerror or e))
    with f:
        magic = _read(f, 4, path, "header")
        if magic[0] != 0 or magic[1] != 0:
            raise DataError("read_idx: %s is not an IDX file: expected the magic 00 00 <type> <ndim>, found %s"
                            % (path, magic.hex(" ")))
        dtype = TYPES.get(magic[2])
        if dtype is None:
            raise DataError("read_idx: %s: unknown IDX type 0x%02x (expected one of %s)"
                            % (path, magic[2], ", ".join("0x%02x" % c for c in sorted(TYPES))))
        ndim = magic[3]
        if ndim == 0:
            raise DataError("read_idx: %s: an IDX file needs at least one dimension, found 0" % path)
        shape = tuple(int(d) for d in np.frombuffer(_read(f, 4 * ndim, path, "header"), ">u4"))
        size = dtype.itemsize
        for d in shape:
            size *= d
        body = _read(f, size, path, "data for shape %s" % (shape,))
        try:
            extra = f.read(1)
        except (OSError, EOFError, zlib.error) as e:
            raise DataError("read_idx: %s: cannot decompress the end of the file: %s" % (path, e))
        if extra:
            raise DataError("read_idx: %s: found bytes past the %d the header's shape %s declares"
                            % (path, size, shape))
    return np.frombuffer(body, dtype).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def write_idx(path, array):
    """Write ``array`` (uint8, int8, int16, int32, float32 or float64) as an IDX file, compressed
    when ``path`` ends in ``.gz``; the file appears complete or not at all (temporary file, rename)."""
    path = os.fspath(path)
    a = np.asarray(array)
    code = _CODES.get((a.dtype.kind, a.dtype.itemsize))
    if code is None or a.ndim == 0 or a.ndim > 255:
        raise ArgumentError("write_idx: expected a 1- to 255-d array of uint8, int8, int16, int32, float32 or "
                            "float64, found %s %s" % (a.dtype, a.shape))
    payload = bytes([0, 0, code, a.ndim]) + np.asarray(a.shape, ">u4").tobytes() + \
        np.ascontiguousarray(a, TYPES[code]).tobytes()
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        if path.endswith(".gz"):
            with open(tmp, "wb") as raw:
                # mtime 0: the same array always gives the same bytes
                with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
                    f.write(payload)
        else:
            with open(tmp, "wb") as f:
                f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


__all__ = ["read_idx", "write_idx", "TYPES"]
