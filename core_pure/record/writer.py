"""Writing records: the header from shapes alone, then each tensor's bytes in turn, atomically."""
import os

from .. import dtypes
from ..errors import ArgumentError, ArgumentTypeError, EmberError, RecordError
from ..tensor import Tensor
from . import format as fmt
from .reader import fspath

PRECISIONS = {"f32": dtypes.float32, "f16": dtypes.float16, "bf16": dtypes.bfloat16}
# precisions that label the record without casting anything: "int8" is ember.quant's (its int8
# weights and float32 scales are written as they are)
LABELS = ("int8",)
_PRECISION_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}

_counter = [0]


def _precision(precision):
    """(short name or None, target float dtype or None)."""
    if precision is None:
        return None, None
    if type(precision) is str and precision in LABELS:
        return precision, None
    if type(precision) is str and precision in PRECISIONS:
        return precision, PRECISIONS[precision]
    if type(precision) is dtypes.DType and precision.name in _PRECISION_NAMES:
        name = _PRECISION_NAMES[precision.name]
        return name, PRECISIONS[name]
    raise ArgumentError("record.write: precision must be None, 'f32', 'f16', 'bf16' or 'int8', found %r"
                        % (precision,))


def _items(named_tensors):
    if type(named_tensors) is dict:
        raise ArgumentTypeError("record.write: expected a list of (name, tensor) pairs, found a dict "
                                "(its order is not kept on MicroPython); pass list(d.items())")
    try:
        items = list(named_tensors)
    except TypeError:
        raise ArgumentTypeError("record.write: expected a list of (name, tensor) pairs, found %s"
                                % type(named_tensors).__name__)
    seen = {}
    out = []
    for i, pair in enumerate(items):
        if type(pair) not in (tuple, list) or len(pair) != 2:
            raise ArgumentTypeError("record.write: item %d is %r, expected a (name, tensor) pair" % (i, pair))
        name, t = pair
        if type(name) is not str:
            raise ArgumentTypeError("record.write: item %d has a name of type %s, expected a string"
                                    % (i, type(name).__name__))
        if not name:
            raise ArgumentError("record.write: item %d has an empty name" % i)
        if name == fmt.METADATA_KEY:
            raise ArgumentError("record.write: %r is reserved for the metadata, not a tensor name" % name)
        _utf8(name, "tensor name")
        if name in seen:
            raise ArgumentError("record.write: the name %r appears twice (items %d and %d)" % (name, seen[name], i))
        if not isinstance(t, Tensor):
            raise ArgumentTypeError("record.write: %r is a %s, expected an ember.Tensor" % (name, type(t).__name__))
        seen[name] = i
        out.append((name, t))
    return out


def _utf8(s, what):
    try:
        s.encode("utf-8")
    except UnicodeError:
        raise ArgumentError("record.write: %s %r cannot be encoded as UTF-8" % (what, s))


def _metadata(metadata, precision_name):
    meta = {}
    if metadata is not None:
        if type(metadata) is not dict:
            raise ArgumentTypeError("record.write: metadata must be a dict of str to str, found %s"
                                    % type(metadata).__name__)
        for k in metadata:
            v = metadata[k]
            if type(k) is not str:
                raise ArgumentTypeError("record.write: metadata must map str to str; found a key of type %s"
                                        % type(k).__name__)
            if type(v) is not str:
                raise ArgumentTypeError("record.write: metadata must map str to str; key %r has a value of "
                                        "type %s" % (k, type(v).__name__))
            _utf8(k, "metadata key")
            _utf8(v, "metadata value")
            if k not in fmt.RESERVED:
                meta[k] = v
    meta[fmt.VERSION_KEY] = str(fmt.FORMAT_VERSION)
    if precision_name is not None:
        meta[fmt.PRECISION_KEY] = precision_name
    if "format" not in meta:
        meta["format"] = "pt"  # PyTorch names and layouts; Hugging Face loaders require this key
    return [(k, meta[k]) for k in sorted(meta)]


def _plan(items, target):
    """[Entry] in the caller's order, with offsets of the data layout: widest dtypes first.

    Sorting the data by element size (as the safetensors library does) aligns every tensor to its
    own element size without gaps, which numpy and torch need to view the bytes in place.
    """
    out_dtypes = []
    for _, t in items:
        out_dtypes.append(target if target is not None and t.dtype.kind == "f" else t.dtype)
    layout = sorted(range(len(items)), key=lambda i: (-out_dtypes[i].itemsize, i))
    entries = [None] * len(items)
    pos = 0
    for i in layout:
        name, t = items[i]
        dt = out_dtypes[i]
        n = t.numel() * dt.itemsize
        entries[i] = fmt.Entry(name, dt, t.shape, pos, pos + n)
        pos += n
    return entries, layout


def _tensor_bytes(t, dt):
    if t.dtype is not dt:
        t = t.to(dt)
    if dt is dtypes.bool_:
        # through int8 (0 or 1 per byte): MicroPython's struct has no '?'
        return t.to(dtypes.int8).to_bytes()
    return t.to_bytes()


def _temp_name(path):
    _counter[0] += 1
    stamp = 0
    try:
        import time
        stamp = time.time_ns()
    except (ImportError, AttributeError):
        pass
    pid = os.getpid() if hasattr(os, "getpid") else 0
    return "%s.%x-%x-%d.tmp" % (path, pid, stamp & 0xFFFFFFFFFFFF, _counter[0])


def _replace(src, dst):
    if hasattr(os, "replace"):
        os.replace(src, dst)  # atomic, also over an existing file on Windows
        return
    try:
        os.rename(src, dst)  # POSIX and littlefs replace the target atomically
    except OSError:
        # FAT refuses to rename over a file: remove it first (not atomic; the new data is complete
        # in src at this point, so a power cut here loses only the name)
        try:
            os.stat(dst)
        except OSError:
            raise
        os.remove(dst)
        os.rename(src, dst)


def _sync_dir(path):
    # make the rename itself durable where the platform allows (POSIX CPython)
    if not (hasattr(os, "fsync") and hasattr(os, "O_RDONLY")):
        return
    cut = path.rfind("/")
    folder = path[:cut] if cut > 0 else ("/" if cut == 0 else ".")
    try:
        fd = os.open(folder, os.O_RDONLY)
    except (OSError, AttributeError):
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write(path, named_tensors, metadata=None, precision=None):
    """Write ``named_tensors`` (a list of ``(name, tensor)``) to the safetensors file ``path``.

    ``metadata``: a dict of str to str, stored in ``__metadata__`` beside ember's own keys
    (``ember_format_version``; ``ember_precision`` when ``precision`` is given; ``format: pt`` unless
    given). ``precision``: None keeps every dtype; ``"f32"``, ``"f16"`` or ``"bf16"`` casts float
    tensors (ints and bools are kept); ``"int8"`` casts nothing and labels a record of int8-quantized
    layers (``ember.quant.save`` writes it; at least one tensor must be int8). The header keeps the
    caller's order of names; the data is laid out widest dtype first. Tensors are written one at a
    time to a temporary file beside ``path``, which is flushed, synced and renamed over ``path``: on
    any error it is removed and an existing ``path`` is left as it was.
    """
    op = "record.write"
    path = fspath(path, op)
    precision_name, target = _precision(precision)
    items = _items(named_tensors)
    if precision_name in LABELS and not [t for _, t in items if t.dtype is dtypes.int8]:
        raise ArgumentError("%s: precision %r labels a quantized record, but no tensor is int8"
                            % (op, precision_name))
    meta = _metadata(metadata, precision_name)
    entries, layout = _plan(items, target)
    header = fmt.build_header(meta, entries)
    tmp = _temp_name(path)
    try:
        f = open(tmp, "wb")
    except OSError as e:
        raise _naming(e, path, op)
    try:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        header = None
        for i in layout:
            e = entries[i]
            data = _tensor_bytes(items[i][1], e.dtype)
            if len(data) != e.nbytes:
                raise RecordError("%s: %s: tensor %r gave %d bytes, expected %d for shape %s of %s"
                                  % (op, path, e.name, len(data), e.nbytes, e.shape, e.dtype.name))
            f.write(data)
            data = None
        f.flush()
        if hasattr(os, "fsync") and hasattr(f, "fileno"):
            os.fsync(f.fileno())
        f.close()
        f = None
        _replace(tmp, path)
    except BaseException as e:
        if f is not None:
            try:
                f.close()
            except Exception:
                pass
        try:
            os.remove(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and not isinstance(e, EmberError):
            raise _naming(e, path, op)
        raise
    _sync_dir(path)


def _naming(e, path, op):
    """An ``OSError`` met while writing the temporary file, as the same error naming ``path``, the file
    the caller asked for (the temporary name means nothing to them)."""
    reason = getattr(e, "strerror", None) or str(e)
    return type(e)(e.args[0] if e.args else None, "%s: cannot write %s: %s" % (op, path, reason))
