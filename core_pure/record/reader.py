"""Reading records: the header once, then each tensor's bytes only when asked for."""
import struct

from .. import dtypes
from ..creation import tensor as _tensor
from ..device import resolve
from ..errors import ArgumentTypeError
from ..tensor import Tensor
from . import format as fmt


def fspath(path, op):
    if type(path) is str:
        return path
    try:
        import os
        p = os.fspath(path)  # pathlib.Path on CPython; MicroPython has no fspath
    except (AttributeError, TypeError, ImportError):
        p = None
    if type(p) is not str:
        raise ArgumentTypeError("%s: expected a path string, found %s" % (op, type(path).__name__))
    return p


def _read_exact(f, n, path, what, op):
    data = f.read(n)
    got = 0 if data is None else len(data)
    if got != n:
        raise fmt.error(op, path, "truncated: %s needs %d bytes, the file has %d left" % (what, n, got))
    return data


class Reader:
    """An open record: ``metadata`` (dict), ``entries`` (``[Entry]`` in the header's order) and
    ``read(name)`` for one tensor. Use as a context manager, or call ``close()``."""

    def __init__(self, path, f, file_size, header_size, metadata, entries):
        self.path = path
        self._f = f
        self.file_size = file_size
        self.header_size = header_size  # the JSON's bytes, padding included (N)
        self.data_start = 8 + header_size  # absolute file offset of the data
        self.data_size = file_size - 8 - header_size
        self.metadata = metadata
        self.entries = entries
        self._by_name = {}
        for e in entries:
            self._by_name[e.name] = e

    def names(self):
        """The tensor names in the file, in file order."""
        return [e.name for e in self.entries]

    def entry(self, name):
        """The ``Entry`` (dtype, shape, byte range) of tensor ``name``; a missing name raises ``RecordError``."""
        e = self._by_name.get(name) if type(name) is str else None
        if e is None:
            raise fmt.error("record.read", self.path, "no tensor named %r (the file holds %d: %s)"
                            % (name, len(self.entries), _preview(self.names())))
        return e

    def __contains__(self, name):
        return name in self._by_name

    def __len__(self):
        return len(self.entries)

    def read(self, name, device=None, dtype=None):
        """The tensor ``name`` on ``device`` (the default device when None), cast to ``dtype`` if given.

        Seeks to the tensor and reads exactly its bytes: one tensor's bytes are in memory at a time.
        """
        e = self.entry(name)
        dev = resolve(device, "record.read")
        want = dtypes.get(dtype) if dtype is not None else None
        if self._f is None:
            raise fmt.error("record.read", self.path, "the reader is closed")
        self._f.seek(self.data_start + e.start)
        buf = _read_exact(self._f, e.nbytes, self.path, "tensor %r" % e.name, "record.read")
        t = _decode(buf, e, dev)
        buf = None
        if want is not None and want is not t.dtype:
            t = t.to(want)
        return t

    def read_all(self, device=None):
        """``[(name, tensor)]`` in the header's order, read one tensor at a time."""
        return [(e.name, self.read(e.name, device)) for e in self.entries]

    def close(self):
        """Close the file (``with ember.record.open(...)`` does it); closing twice is fine."""
        f, self._f = self._f, None
        if f is not None:
            f.close()

    @property
    def closed(self):
        """Whether the file is closed."""
        return self._f is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<ember.record.Reader %r: %d tensors%s>" % (self.path, len(self.entries),
                                                         "" if self._f else ", closed")


def _preview(names, k=5):
    if len(names) <= k:
        return ", ".join(names) if names else "none"
    return ", ".join(names[:k]) + ", ..."


def _decode(buf, e, dev):
    fdt = e.file_dtype
    if fdt == "BOOL":
        # through int8: MicroPython's struct has no '?' (any nonzero byte is True, as in numpy)
        return _tensor(buf, dtype=dtypes.int8, shape=e.shape, device=dev).to(dtypes.bool_)
    if fdt in fmt.WIDENED:
        size, code, dt = fmt.WIDENED[fdt]
        flat = list(struct.unpack("<%d%s" % (len(buf) // size, code), buf))
        return Tensor(dev.from_list(flat, e.shape, dt), e.shape, dt, dev)
    return _tensor(buf, dtype=e.dtype, shape=e.shape, device=dev)


def open_reader(path):
    """Open the record at ``path``: reads and checks the header, not the tensors.

    Any malformed, truncated or hostile content is a ``RecordError`` naming the file and the key;
    a file that cannot be opened is the ``OSError`` of ``open``.
    """
    op = "record.open"
    path = fspath(path, op)
    f = open(path, "rb")
    try:
        size = f.seek(0, 2)
        if size is None:
            size = f.tell()
        f.seek(0)
        head = f.read(8)
        if head is None or len(head) < 8:
            raise fmt.error(op, path, "truncated: %d bytes, a safetensors file starts with an 8-byte "
                            "header length" % (0 if head is None else len(head)))
        n = int.from_bytes(head, "little")
        if n > fmt.MAX_HEADER_SIZE:
            raise fmt.error(op, path, "header length %d is larger than the %d-byte limit"
                            % (n, fmt.MAX_HEADER_SIZE))
        if n > size - 8:
            raise fmt.error(op, path, "truncated: header length %d runs past the end of the file "
                            "(%d bytes after the length)" % (n, size - 8))
        if n < 2:
            raise fmt.error(op, path, "header length %d is too small for a JSON object" % n)
        try:
            raw = _read_exact(f, n, path, "the header", op)
            metadata, entries = fmt.parse_header(raw, path, size - 8 - n, op)
        except MemoryError:
            raw = None
            raise fmt.error(op, path, "a header of %d bytes does not fit in memory" % n)
        raw = None
        return Reader(path, f, size, n, metadata, entries)
    except BaseException:
        f.close()
        raise


def read(path, device=None):
    """``[(name, tensor)]`` of the record at ``path``, in the header's order, on ``device``."""
    with open_reader(path) as r:
        return r.read_all(device)


class Info:
    """What ``inspect`` finds: ``path``, ``metadata``, ``entries`` and sizes, with a table as ``str``."""

    def __init__(self, reader):
        self.path = reader.path
        self.metadata = reader.metadata
        self.entries = reader.entries
        self.file_size = reader.file_size
        self.header_size = reader.header_size
        self.data_size = reader.data_size

    def names(self):
        """The tensor names in the file, in file order."""
        return [e.name for e in self.entries]

    def as_dict(self):
        """The summary as plain dicts and lists (for JSON)."""
        return {
            "path": self.path,
            "metadata": dict(self.metadata),
            "file_size": self.file_size,
            "header_size": self.header_size,
            "data_size": self.data_size,
            "tensors": [{"name": e.name, "dtype": e.dtype.name, "file_dtype": e.file_dtype,
                         "shape": list(e.shape), "nbytes": e.nbytes, "data_offsets": [e.start, e.end]}
                        for e in self.entries],
        }

    def __str__(self):
        rows = [("name", "dtype", "shape", "bytes")]
        total = 0
        for e in self.entries:
            dt = e.file_dtype if e.file_dtype == fmt.FROM_EMBER.get(e.dtype.name) \
                else "%s (read as %s)" % (e.file_dtype, e.dtype.name)
            rows.append((e.name, dt, "[%s]" % ", ".join([str(d) for d in e.shape]), str(e.nbytes)))
            total += e.numel()
        widths = [max([len(r[i]) for r in rows]) for i in range(4)]
        lines = ["%s: %d tensors, %d values, %d bytes of data, %d-byte header"
                 % (self.path, len(self.entries), total, self.data_size, self.header_size)]
        for r in rows:
            cells = [r[i] + " " * (widths[i] - len(r[i])) for i in range(3)]
            cells.append(" " * (widths[3] - len(r[3])) + r[3])
            lines.append("  ".join(cells).rstrip())
        if self.metadata:
            lines.append("metadata:")
            for k in sorted(self.metadata):
                v = self.metadata[k]
                if len(v) > 60:
                    v = v[:57] + "..."
                lines.append("  %s: %s" % (k, v))
        return "\n".join(lines)

    def __repr__(self):
        return "<ember.record.Info %r: %d tensors>" % (self.path, len(self.entries))


def inspect(path):
    """Names, dtypes, shapes, byte sizes and metadata of the record at ``path``; reads no tensor data."""
    with open_reader(path) as r:
        return Info(r)
