"""Loading a safetensors record into a deployed model: tensor by tensor, each read straight into
its own array (int8 weights cost one byte each), every name, dtype, shape and offset checked."""
import json

from .tensor import RecordError, scratch

try:  # views of memory at an address: in-place reading of a ROMFS file (MicroPython only)
    import uctypes
except ImportError:
    uctypes = None
from .affine import _Affine
from .module import Module

MAX_HEADER = 1 << 20  # bytes: a board's record header is a few KB
BLOCK = 1024  # bytes: weight rows are read into arrays of about this size (a fragmented heap fits them)
_CODES = {"F32": ("f", 4), "I8": ("b", 1), "I32": ("i", 4)}


def header(f, path, size):
    """The header's JSON object and where the data begins."""
    head = f.read(8)
    if len(head) != 8:
        raise RecordError("%s: not a record: %d bytes long" % (path, size))
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER or 8 + n > size:
        raise RecordError("%s: header length %d does not fit a %d-byte file (limit %d)" % (path, n, size, MAX_HEADER))
    try:
        h = json.loads(f.read(n))
    except ValueError:
        raise RecordError("%s: the header is not valid JSON" % path)
    if type(h) is not dict:
        raise RecordError("%s: the header is not a JSON object" % path)
    m = h.get("__metadata__", {})
    if type(m) is not dict:
        raise RecordError("%s: '__metadata__' is a %s, expected an object of strings" % (path, type(m).__name__))
    return h, 8 + n


def in_place(f):
    """The address of the file's bytes when they can be read where they lie (a file in a ROMFS
    partition: flash mapped into memory), else None (an ordinary file, CPython)."""
    if uctypes is None:
        return None
    try:
        return uctypes.addressof(memoryview(f))
    except (TypeError, ValueError):
        return None


def _view(address, code, n):
    """``n`` int8 or float32 values at ``address``, read in place (no heap beyond the view)."""
    kind = uctypes.INT8 if code == "b" else uctypes.FLOAT32
    return uctypes.struct(address, {"v": (uctypes.ARRAY | 0, kind | n)}, uctypes.LITTLE_ENDIAN).v


def check(path, name, entry, base, size):
    """(typecode, item size, shape, element count, file position) of a header entry, every field
    checked against the file's ``size`` before anything is allocated for it."""
    dtype = entry.get("dtype") if type(entry) is dict else entry
    if type(dtype) is not str or dtype not in _CODES:  # a list or object would not even hash
        raise RecordError("%s: %r: expected dtype F32, I8 or I32, found %r" % (path, name, dtype))
    code, item = _CODES[dtype]
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if type(shape) is not list or [d for d in shape if type(d) is not int or d < 0]:
        raise RecordError("%s: %r: bad shape %r" % (path, name, shape))
    count = 1
    for d in shape:
        count *= d
    if (type(offsets) is not list or len(offsets) != 2 or [o for o in offsets if type(o) is not int]
            or offsets[1] - offsets[0] != count * item or offsets[0] < 0 or base + offsets[1] > size):
        raise RecordError("%s: %r: data_offsets %r do not hold %d %s values inside the file"
                          % (path, name, offsets, count, entry["dtype"]))
    return code, item, shape, count, base + offsets[0]


def read(f, path, name, entry, base, size, rows=False, address=None):
    """(array, shape) of one tensor: F32 as array('f'), I8 as array('b'), I32 as array('i'). With
    ``rows``, a list giving for each index of the first dim the buffer that holds its row (rows
    share buffers of about ``BLOCK`` bytes, consecutively); with ``address`` (see ``in_place``)
    int8 and aligned float32 rows all share one view of the file itself."""
    code, item, shape, count, start = check(path, name, entry, base, size)
    if rows and count and address is not None and code != "i" and (code == "b" or (address + start) % 4 == 0):
        return [_view(address + start, code, count)] * shape[0], tuple(shape)  # row r starts at r * k
    f.seek(start)
    if not rows or not shape or not count:
        a = _fill(f, scratch(code, count), item, path, name)
        return [a] if rows else a, tuple(shape)
    n = shape[0]
    k = count // n
    per = max(1, BLOCK // (k * item))
    parts = []
    for r in range(0, n, per):
        m = min(per, n - r)
        parts.extend([_fill(f, scratch(code, m * k), item, path, name)] * m)
    return parts, tuple(shape)


def _fill(f, a, item, path, name):
    if len(a) and f.readinto(a) != len(a) * item:
        raise RecordError("%s: %r: the file ends inside the tensor" % (path, name))
    return a


def load(model, path):
    """Fill ``model``'s layers from ``path``; any unknown, missing or misshapen tensor raises a
    ``RecordError`` naming it."""
    f = open(path, "rb")
    try:
        f.seek(0, 2)
        size = f.tell()
        f.seek(0)
        h, base = header(f, path, size)
        address = in_place(f)
        names = [k for k in h if k != "__metadata__"]
        names.sort(key=lambda k: _span(h[k]))  # in file order: one forward sweep over the flash
        end, prev, untiled = 0, None, None
        for name in names:
            layer, attr = _resolve(model, name, path)
            shape = tuple(check(path, name, h[name], base, size)[2])
            _expect(layer, attr, shape, h[name]["dtype"], path, name)  # before its buffers are made
            a, shape = read(f, path, name, h[name], base, size, name.endswith(".weight"), address)
            _set(layer, attr, a, shape, h[name]["dtype"], path, name)
            untiled = untiled or _untiled(h[name]["data_offsets"], end, name, prev, path)
            end, prev = h[name]["data_offsets"][1], name
        if base + end != size:
            untiled = untiled or ("%s: %d bytes of data follow the last tensor %r: the tensors must tile the data"
                                  % (path, size - base - end, prev))
    finally:
        f.close()
    _check_complete(model, path)  # first: a missing tensor also leaves a gap, and its name says more
    if untiled:
        raise RecordError(untiled)


def _span(entry):
    offsets = entry.get("data_offsets") if type(entry) is dict else None
    if type(offsets) is list and len(offsets) == 2 and type(offsets[0]) is int and type(offsets[1]) is int:
        return offsets[0], offsets[1]
    return 0, 0  # refused by check() when its turn comes


def _untiled(offsets, end, name, prev, path):
    """Why the tensor breaks safetensors' rule (in file order, each starts where the one before
    ends), or None. A gap is also what a repeated name leaves: MicroPython's json keeps the last
    of two equal keys."""
    if offsets[0] > end:
        return "%s: gap of %d bytes before %r (data_offsets %r): the tensors must tile the data" % (
            path, offsets[0] - end, name, offsets)
    if offsets[0] < end:
        return "%s: %r (data_offsets %r) overlaps %r, which ends at %d" % (path, name, offsets, prev, end)
    return None


def _resolve(model, name, path):
    parts = name.split(".")
    m = model
    for p in parts[:-1]:
        m = m.child(p) if isinstance(m, Module) else None
        if m is None:
            raise RecordError("%s: %r names no layer of %s" % (path, name, type(model).__name__))
    if not isinstance(m, _Affine) or parts[-1] not in _Affine.TENSORS:
        raise RecordError("%s: unexpected tensor %r for %s" % (path, name, type(model).__name__))
    return m, parts[-1]


def _expect(layer, attr, shape, dtype, path, name):
    out = layer.weight_shape()[0]
    want = {"weight": layer.weight_shape(), "bias": (out,), "weight_scale": (out,)}.get(attr, ())
    if shape != want:
        raise RecordError("%s: %r: expected shape %s, found %s" % (path, name, want, shape))
    if dtype != "F32" and (attr != "weight" or dtype != "I8"):
        raise RecordError("%s: %r: expected %s, found %s" % (path, name, "F32 or I8" if attr == "weight" else "F32",
                                                             dtype))


def _set(layer, attr, a, shape, dtype, path, name):
    if attr == "weight":
        layer.int8 = dtype == "I8"
        layer.weight_at = _row_starts(a, shape)
    if not shape:
        a = a[0]
        if not a > 0:  # also refuses nan
            raise RecordError("%s: %r: a scale must be positive, found %r" % (path, name, a))
    elif attr == "weight_scale":
        for v in a:
            if not v > 0:
                raise RecordError("%s: %r: every scale must be positive, found %r" % (path, name, v))
    setattr(layer, attr, a)
    layer._coef = None


def _row_starts(rows, shape):
    """Where each row begins in its buffer (rows sharing a buffer follow each other), or None when
    every row has a buffer of its own."""
    k = 1
    for d in shape[1:]:
        k *= d
    starts, at, prev = [], 0, None
    for buf in rows:
        at = at + k if buf is prev else 0
        prev = buf
        starts.append(at)
    return starts if [s for s in starts if s] else None


def _check_complete(model, path):
    stack = [("", model)]
    while stack:
        prefix, m = stack.pop()
        for name, c in m.named_children():
            stack.append((prefix + name + ".", c))
        if not isinstance(m, _Affine):
            continue
        missing = []
        if m.weight is None:
            missing.append("weight")
        if m.has_bias and m.bias is None:
            missing.append("bias")
        if m.weight is not None and m.int8 and m.weight_scale is None:
            missing.append("weight_scale")
        if missing:
            raise RecordError("%s: missing %s for %s" % (path, ", ".join(prefix + k for k in missing),
                                                         type(model).__name__))
        if m.bias is not None and not m.has_bias:
            raise RecordError("%s: unexpected %sbias: the layer was built with bias=False" % (path, prefix))
        if not m.int8 and (m.weight_scale is not None or m.input_scale is not None or m.output_scale is not None):
            raise RecordError("%s: %sweight is float32 but the record has int8 scales for it" % (path, prefix))
