"""The safetensors layout, as ember reads and writes it.

A file is ``[u64 little-endian N][N bytes of UTF-8 JSON][data]``. The JSON object maps each tensor
name to ``{"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}`` (offsets relative to
the start of the data, half-open) and may hold ``"__metadata__"``, an object of strings. The
tensors tile the data exactly: no gap, no overlap, nothing after the last one.
"""
from .. import dtypes
from ..errors import RecordError
from . import _json

FORMAT_VERSION = 1
MAX_HEADER_SIZE = 100000000  # bytes; the safetensors library refuses larger headers too
MAX_DIMS = 64
METADATA_KEY = "__metadata__"
# metadata keys ember writes itself (a caller's values for them are replaced)
VERSION_KEY = "ember_format_version"
PRECISION_KEY = "ember_precision"
RESERVED = (VERSION_KEY, PRECISION_KEY)

# safetensors dtype name -> ember dtype, for the dtypes ember stores as they are
TO_EMBER = {
    "F64": dtypes.float64, "F32": dtypes.float32, "F16": dtypes.float16, "BF16": dtypes.bfloat16,
    "I64": dtypes.int64, "I32": dtypes.int32, "I8": dtypes.int8, "U8": dtypes.uint8, "BOOL": dtypes.bool_,
}
FROM_EMBER = {}
for _name in TO_EMBER:
    FROM_EMBER[TO_EMBER[_name].name] = _name
# dtypes ember has no twin for, read widened to an ember dtype that holds every value exactly:
# safetensors name -> (bytes per element, struct code, ember dtype)
WIDENED = {
    "I16": (2, "h", dtypes.int32),
    "U16": (2, "H", dtypes.int32),
    "U32": (4, "I", dtypes.int64),
}
READABLE = ("F64", "F32", "F16", "BF16", "I64", "I32", "I8", "BOOL", "U8", "I16", "U16", "U32")


def itemsize(file_dtype):
    """Bytes per element of a safetensors dtype ember reads."""
    if file_dtype in WIDENED:
        return WIDENED[file_dtype][0]
    return TO_EMBER[file_dtype].itemsize


class Entry:
    """One tensor of a record: ``name``, ember ``dtype``, ``shape`` (a tuple) and the half-open byte
    range ``start:end`` relative to the start of the data. ``file_dtype`` is the safetensors name
    (``"F32"``); it differs from ``dtype`` only for widened dtypes (``"U16"`` is read as int32).
    Unpacks like a tuple: ``name, dtype, shape, start, end = entry``."""
    __slots__ = ("name", "dtype", "shape", "start", "end", "file_dtype")

    def __init__(self, name, dtype, shape, start, end, file_dtype=None):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(shape)
        self.start = start
        self.end = end
        self.file_dtype = file_dtype or FROM_EMBER[dtype.name]

    @property
    def nbytes(self):
        """The size of the tensor's data in the file, in bytes."""
        return self.end - self.start

    def numel(self):
        """The number of elements (the product of ``shape``)."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __iter__(self):
        return iter((self.name, self.dtype, self.shape, self.start, self.end))

    def __eq__(self, other):
        return (type(other) is Entry and self.name == other.name and self.dtype is other.dtype
                and self.shape == other.shape and self.start == other.start and self.end == other.end
                and self.file_dtype == other.file_dtype)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash((self.name, self.start, self.end))

    def __repr__(self):
        return "Entry(%r, %r, %r, %d, %d)" % (self.name, self.dtype, self.shape, self.start, self.end)


def error(op, path, msg):
    return RecordError("%s: %s: %s" % (op, path, msg))


def _kind(v):
    if v is None:
        return "null"
    t = type(v)
    if t is bool:
        return "a boolean"
    if t is int or t is float:
        return "a number"
    if t is str:
        return "a string"
    if t is list:
        return "an array"
    if t is dict:
        return "an object"
    return t.__name__


def _int(v):
    return type(v) is int  # bool is not int here (type(True) is bool)


def parse_header(raw, path, data_size, op="record.open"):
    """``(metadata dict, [Entry] in header order)`` from the header bytes, or a RecordError.

    ``data_size`` is the number of bytes after the header; the entries must tile it exactly.
    """
    try:
        text = raw.decode("utf-8")
    except (UnicodeError, ValueError):
        raise error(op, path, "the header is not valid UTF-8")
    try:
        header, order = _json.loads(text)
    except _json.JsonError as e:
        raise error(op, path, "the header is not valid JSON: %s" % e)
    text = None
    if type(header) is not dict:
        raise error(op, path, "the header is %s, expected a JSON object" % _kind(header))
    metadata = {}
    if METADATA_KEY in header:
        m = header[METADATA_KEY]
        if m is not None:
            if type(m) is not dict:
                raise error(op, path, "'__metadata__' is %s, expected an object of strings" % _kind(m))
            for k in sorted(m):
                v = m[k]
                if type(v) is not str:
                    raise error(op, path, "'__metadata__' key %r is %s, expected a string" % (k, _kind(v)))
                metadata[k] = v
    _check_version(metadata, path, op)
    entries = []
    for name in order:
        if name == METADATA_KEY:
            continue
        entries.append(_entry(name, header[name], path, data_size, op))
    _check_tiling(entries, path, data_size, op)
    return metadata, entries


def _check_version(metadata, path, op):
    v = metadata.get(VERSION_KEY)
    if v is None:
        return
    if not v or len(v) > 9 or [c for c in v if c not in "0123456789"]:
        raise error(op, path, "'__metadata__' key %r is %r, expected a decimal integer" % (VERSION_KEY, v))
    if int(v) > FORMAT_VERSION:
        raise error(op, path, "written by a newer ember (%s %s); this ember reads up to %d"
                    % (VERSION_KEY, v, FORMAT_VERSION))


def _entry(name, info, path, data_size, op):
    where = "tensor %r" % name
    if type(info) is not dict:
        raise error(op, path, "%s is %s, expected an object with dtype, shape and data_offsets"
                    % (where, _kind(info)))
    for key in ("dtype", "shape", "data_offsets"):
        if key not in info:
            raise error(op, path, "%s has no %r" % (where, key))
    fdt = info["dtype"]
    if type(fdt) is not str or fdt not in READABLE:
        raise error(op, path, "%s: dtype %s is not one ember reads (%s)"
                    % (where, repr(fdt) if type(fdt) is str else _kind(fdt), " ".join(READABLE)))
    shape = info["shape"]
    if type(shape) is not list:
        raise error(op, path, "%s: shape is %s, expected an array of integers" % (where, _kind(shape)))
    if len(shape) > MAX_DIMS:
        raise error(op, path, "%s: shape has %d dims, more than %d" % (where, len(shape), MAX_DIMS))
    for d in shape:
        if not _int(d) or d < 0:
            raise error(op, path, "%s: shape %s holds %s, expected integers >= 0"
                        % (where, _short(shape), repr(d) if _int(d) else _kind(d)))
    # as safetensors and numpy: the sizes multiply within int64 even when a 0 makes the tensor empty
    span = 1
    for d in shape:
        span *= d if d else 1
    if span >= 1 << 63:
        raise error(op, path, "%s: shape %s: its nonzero dims multiply to 2^63 or more, expected a "
                    "product below 2^63" % (where, _short(shape)))
    offs = info["data_offsets"]
    if type(offs) is not list or len(offs) != 2 or not _int(offs[0]) or not _int(offs[1]):
        raise error(op, path, "%s: data_offsets is %s, expected [begin, end] integers"
                    % (where, _short(offs) if type(offs) is list else _kind(offs)))
    start, end = offs
    if start < 0 or end < start or end > data_size:
        raise error(op, path, "%s: data_offsets [%d, %d] are outside the %d bytes of data (is the file "
                    "truncated?)" % (where, start, end, data_size))
    # exact arithmetic is cheap: at most MAX_DIMS dims of at most _json.MAX_NUMBER digits each
    numel = itemsize(fdt)
    for d in shape:
        numel *= d
    if numel != end - start:
        raise error(op, path, "%s: shape %s of %s needs %s bytes, data_offsets [%d, %d] hold %d"
                    % (where, _short(shape), fdt, numel if numel < 10 ** 30 else "more than 10^30",
                       start, end, end - start))
    dt = WIDENED[fdt][2] if fdt in WIDENED else TO_EMBER[fdt]
    return Entry(name, dt, shape, start, end, fdt)


def _short(v):
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_tiling(entries, path, data_size, op):
    # safetensors' rule: sorted by offsets, the tensors cover the data with no gap and no overlap
    ordered = sorted(entries, key=lambda e: (e.start, e.end))
    pos = 0
    prev = None
    for e in ordered:
        if e.start > pos:
            raise error(op, path, "gap of %d bytes before tensor %r (data_offsets [%d, %d]%s)"
                        % (e.start - pos, e.name, e.start, e.end,
                           ", after tensor %r" % prev.name if prev else ""))
        if e.start < pos:
            raise error(op, path, "tensor %r (data_offsets [%d, %d]) overlaps tensor %r ([%d, %d])"
                        % (e.name, e.start, e.end, prev.name, prev.start, prev.end))
        pos = e.end
        prev = e
    if pos != data_size:
        raise error(op, path, "%d bytes of data follow the last tensor%s (the file has %d bytes of data, "
                    "the tensors cover %d)" % (data_size - pos, " %r" % prev.name if prev else "",
                                               data_size, pos))


# -- writing ------------------------------------------------------------------------------------

def json_string(s):
    """``s`` as a JSON string literal; non-ASCII stays UTF-8 (as the safetensors library writes)."""
    if '"' not in s and "\\" not in s and (not s or min(s) >= " "):
        return '"' + s + '"'
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c < " ":
            out.append("\\u%04x" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def build_header(metadata_items, entries):
    """The padded header bytes: ``metadata_items`` sorted (key, value) pairs, entries in order."""
    parts = ["{", json_string(METADATA_KEY), ":{"]
    for i, (k, v) in enumerate(metadata_items):
        if i:
            parts.append(",")
        parts.append(json_string(k))
        parts.append(":")
        parts.append(json_string(v))
    parts.append("}")
    for e in entries:
        parts.append(",")
        parts.append(json_string(e.name))
        parts.append(':{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}'
                     % (e.file_dtype, ",".join([str(d) for d in e.shape]), e.start, e.end))
    parts.append("}")
    raw = "".join(parts).encode("utf-8")
    pad = (8 - (8 + len(raw)) % 8) % 8
    return raw + b" " * pad
