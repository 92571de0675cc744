"""An open PyTorch checkpoint: its object tree with lazy tensors, the flat state dict ember loads,
and each tensor read from the file only when asked for."""
import re
from array import array
from collections import OrderedDict

import ember
from ember import dtypes
from ember.errors import ArgumentError, RecordError

from . import unpickle
from .archive import LegacyCheckpoint, Storage, ZipCheckpoint

NATIVE = {"float32": dtypes.float32, "float64": dtypes.float64, "float16": dtypes.float16,
          "bfloat16": dtypes.bfloat16, "int64": dtypes.int64, "int32": dtypes.int32, "int8": dtypes.int8,
          "uint8": dtypes.uint8, "bool": dtypes.bool_}
# torch dtypes ember has no twin for, read widened to one that holds every value: (array code, ember dtype)
WIDENED = {"int16": ("h", dtypes.int32), "uint16": ("H", dtypes.int32), "uint32": ("I", dtypes.int64)}
WRAPPERS = ("state_dict", "model_state_dict", "model", "module", "net", "network")
MAX_DIMS = 64
MAX_DEPTH = 64


class TensorRef:
    """A tensor of the checkpoint, not read yet: ``storage``, element ``offset``, ``size``, ``stride``
    and the torch dtype name; ``dtype`` and ``shape`` are what ``read`` gives in ember."""
    __slots__ = ("storage", "offset", "size", "stride", "torch_dtype", "dtype", "numel", "span")

    def __init__(self, storage, offset, size, stride, torch_dtype, err):
        if type(storage) is not Storage:
            raise err("a tensor's storage must come from a persistent id, found %s" % type(storage).__name__)
        for what, v in (("size", size), ("stride", stride)):
            if type(v) not in (tuple, list) or len(v) > MAX_DIMS or any(type(d) is not int or d < 0 for d in v):
                raise err("a tensor's %s must be a tuple of at most %d ints >= 0, found %s"
                          % (what, MAX_DIMS, _short(v)))
        if len(size) != len(stride):
            raise err("a tensor's size %s and stride %s have different lengths" % (_short(size), _short(stride)))
        if type(offset) is not int or offset < 0:
            raise err("a tensor's storage offset must be an int >= 0, found %s" % _short(offset))
        if torch_dtype in WIDENED:
            dt = WIDENED[torch_dtype][1]
        elif torch_dtype in NATIVE:
            dt = NATIVE[torch_dtype]
        else:
            raise err("a tensor of torch.%s: ember has no such dtype (it reads %s)"
                      % (torch_dtype, ", ".join(sorted(NATIVE) + sorted(WIDENED))))
        itemsize = unpickle.ITEMSIZE[torch_dtype]
        n, last = 1, 0
        for d, s in zip(size, stride):
            n *= d
            last += (d - 1) * s
        if n and (offset + last + 1) * itemsize > storage.nbytes:
            raise err("a tensor of size %s, stride %s at offset %d reads past its storage %s (%d bytes)"
                      % (_short(size), _short(stride), offset, storage.key, storage.nbytes))
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)
        self.torch_dtype, self.dtype, self.numel = torch_dtype, dt, n
        self.span = (last + 1) if n else 0

    @property
    def shape(self):
        """The tensor's size (a tuple)."""
        return self.size

    def contiguous(self):
        """Whether the elements lie row-major without gaps (read as one span)."""
        want = 1
        for d, s in zip(reversed(self.size), reversed(self.stride)):
            if d != 1 and s != want:
                return False
            want *= d
        return True

    def __repr__(self):
        return "<torch tensor %s %s, not read>" % (self.torch_dtype, self.size)


def _tensor_v2(err):
    def rebuild(args):
        if len(args) not in (6, 7):
            raise ValueError("expects 6 or 7 arguments, found %d" % len(args))
        storage = args[0]
        if type(storage) is Storage and storage.dtype == "untyped":
            raise ValueError("an untyped storage needs _rebuild_tensor_v3 (which names its dtype)")
        return TensorRef(storage, args[1], args[2], args[3], getattr(storage, "dtype", None), err)
    return rebuild


def _tensor_v3(err):
    def rebuild(args):
        if len(args) not in (7, 8):
            raise ValueError("expects 7 or 8 arguments, found %d" % len(args))
        dt = args[6]
        if type(dt) is not unpickle.TorchDType:
            raise ValueError("the 7th argument must be a torch dtype, found %s" % type(dt).__name__)
        return TensorRef(args[0], args[1], args[2], args[3], dt.dtype, err)
    return rebuild


def _parameter(args):
    if len(args) not in (3, 4) or type(args[0]) is not TensorRef:
        raise ValueError("expects (tensor, requires_grad, hooks[, state])")
    return args[0]


def _from_type(args):
    # torch._tensor._rebuild_from_type_v2(func, new_type, args, state): a tensor subclass's rebuild
    if len(args) != 4 or type(args[0]) is not unpickle.Global or args[0].fn is None or type(args[2]) is not tuple:
        raise ValueError("expects (rebuild function, tensor class, arguments, state)")
    if type(args[1]) is not unpickle.TensorClass:
        raise ValueError("the class must be torch.Tensor or torch.nn.Parameter")
    out = args[0].fn(args[2])
    if type(out) is not TensorRef:
        raise ValueError("the rebuild function must build a tensor")
    return out


def _table(where):
    err = lambda msg: RecordError("%s: %s" % (where, msg))  # noqa: E731
    table = unpickle.allowed({"_rebuild_tensor_v2": _tensor_v2(err), "_rebuild_tensor_v3": _tensor_v3(err),
                              "_rebuild_parameter": _parameter, "_rebuild_parameter_with_state": _parameter})
    table["torch._tensor _rebuild_from_type_v2"] = unpickle.Global("torch._tensor._rebuild_from_type_v2", _from_type)
    return table


class Entry:
    """One tensor of the flat state dict: ``name``, ember ``dtype`` and ``shape``; ``ref`` locates it."""
    __slots__ = ("name", "dtype", "shape", "ref")

    def __init__(self, name, ref):
        self.name, self.ref, self.dtype, self.shape = name, ref, ref.dtype, ref.size

    def numel(self):
        """The number of elements."""
        return self.ref.numel

    def __repr__(self):
        return "Entry(%r, %s, %s)" % (self.name, self.dtype.name, self.shape)


class Checkpoint:
    """A PyTorch checkpoint opened by ``ember.accel.pytorch.open``: ``obj`` (what ``torch.load``
    would return, tensors left unread), ``entries`` (the flat state dict ember loads, after key
    selection and remapping), ``read(name)`` for one tensor. Works as ``Module.load``'s source.

    >>> with pytorch.open("resnet18.pth") as ck:
    ...     w = ck.read("fc.weight", dtype=ember.float32)
    """

    def __init__(self, path, f, kind, obj, entries, extras):
        self.path, self._f, self.format, self.obj = path, f, kind, obj
        self.entries = entries
        self.extras = extras  # dotted name -> a plain value beside the tensors in the selected part
        self.metadata = {"format": "pytorch " + kind}
        self._by_name = {}
        for e in entries:
            self._by_name[e.name] = e

    def names(self):
        """The tensor names, in the checkpoint's order."""
        return [e.name for e in self.entries]

    def __contains__(self, name):
        return name in self._by_name

    def __len__(self):
        return len(self.entries)

    def entry(self, name):
        """The ``Entry`` of ``name``; a missing name is a ``RecordError`` listing some that exist."""
        e = self._by_name.get(name)
        if e is None:
            raise RecordError("pytorch.read: %s: no tensor named %r (the checkpoint holds %d: %s)"
                              % (self.path, name, len(self.entries), ", ".join(self.names()[:5]) or "none"))
        return e

    def read(self, name, device=None, dtype=None):
        """The tensor ``name`` on ``device`` (the default when None), cast to ``dtype`` if given;
        only its bytes are read from the file."""
        e = self.entry(name)
        if self._f is None:
            raise RecordError("pytorch.read: %s: the checkpoint is closed" % self.path)
        t = _read(self._f, e.ref, device)
        if dtype is not None:
            want = dtypes.get(dtype, "pytorch.read")
            if want is not t.dtype:
                t = t.to(want)
        return t

    def state_dict(self, device=None, dtype=None):
        """An ``OrderedDict`` name -> ember Tensor of every entry, read one at a time."""
        out = OrderedDict()
        for e in self.entries:
            out[e.name] = self.read(e.name, device, dtype)
        return out

    def close(self):
        """Close the file (``with`` does it); closing twice is fine."""
        f, self._f = self._f, None
        if f is not None:
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<ember.accel.pytorch.Checkpoint %r (%s): %d tensors%s>" % (
            self.path, self.format, len(self.entries), "" if self._f else ", closed")


def _read(f, ref, device):
    n, itemsize = ref.numel, unpickle.ITEMSIZE[ref.torch_dtype]
    start = ref.storage.offset + ref.offset * itemsize
    if n == 0:
        buf = b""
    elif ref.contiguous():
        f.seek(start)
        buf = f.read(n * itemsize)
    else:
        f.seek(start)
        buf = _gather(f.read(ref.span * itemsize), ref.size, ref.stride, itemsize)
    if len(buf) != n * itemsize:
        raise RecordError("pytorch.read: truncated: a tensor needs %d bytes, the file gave %d" % (n * itemsize, len(buf)))
    if ref.torch_dtype in WIDENED:
        code, dt = WIDENED[ref.torch_dtype]
        a = array(code)
        a.frombytes(buf)
        t = ember.tensor(a.tolist() if n else [], dtype=dt, device=device)
        return t.reshape(ref.size)
    return ember.tensor(buf, dtype=ref.dtype, shape=ref.size, device=device)


def _gather(raw, size, stride, itemsize):
    """The row-major bytes of a strided view of ``raw`` (elements of ``itemsize`` bytes)."""
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        flat = np.frombuffer(raw, dtype=np.dtype("V%d" % itemsize))
        view = np.lib.stride_tricks.as_strided(flat, shape=size, strides=[s * itemsize for s in stride])
        return np.ascontiguousarray(view).tobytes()
    out = bytearray()
    mv = memoryview(raw)
    index = [0] * len(size)
    total = 1
    for d in size:
        total *= d
    for _ in range(total):
        p = 0
        for i, s in zip(index, stride):
            p += i * s
        out += mv[p * itemsize:(p + 1) * itemsize]
        k = len(size) - 1
        while k >= 0:
            index[k] += 1
            if index[k] < size[k]:
                break
            index[k] = 0
            k -= 1
    return bytes(out)


def _select(obj, key, where):
    """The part of the object that holds the state dict: ``key`` (dotted) when given, else down
    through wrapper keys (``state_dict``, ``model``...) while the mapping holds no tensor itself."""
    if key is not None:
        for part in key.split("."):
            if isinstance(obj, dict) and part in obj:
                obj = obj[part]
            elif type(obj) in (list, tuple) and part.isdigit() and int(part) < len(obj):
                obj = obj[int(part)]
            else:
                raise RecordError("%s: no %r in the checkpoint (at %r; found: %s)"
                                  % (where, key, part, ", ".join(str(k) for k in list(obj)[:8])
                                     if isinstance(obj, (dict, list, tuple)) else type(obj).__name__))
        return obj
    while isinstance(obj, dict) and not any(type(v) is TensorRef for v in obj.values()):
        inner = [w for w in WRAPPERS if isinstance(obj.get(w), dict)]
        if not inner:
            break
        obj = obj[inner[0]]
    return obj


def _flatten(obj, where):
    """[(dotted name, TensorRef)] and {dotted name: plain value}, iteratively (a pickle can nest deep
    or refer to itself)."""
    tensors, extras, seen = [], {}, set()
    stack = [("", obj, 0)]
    while stack:
        name, v, depth = stack.pop()
        if type(v) is TensorRef:
            tensors.append((name, v))
        elif isinstance(v, (dict, list, tuple)):
            if id(v) in seen:
                continue
            if depth >= MAX_DEPTH:
                raise RecordError("%s: containers nest deeper than %d at %r" % (where, MAX_DEPTH, name[:100]))
            seen.add(id(v))
            items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
            for k, x in reversed(items):
                stack.append(((name + "." if name else "") + str(k), x, depth + 1))
        else:
            extras[name] = v
    return tensors, extras


def remap(names, rules):
    """Apply ``rules`` [(regex, replacement or None)] in order to each name: the new names
    (None where a rule dropped it). ``re.sub`` semantics: ``(r"^encoder\\.", "enc.")``."""
    compiled = []
    for rule in rules or ():
        if type(rule) not in (tuple, list) or len(rule) != 2 or type(rule[0]) is not str \
                or not (rule[1] is None or type(rule[1]) is str):
            raise ArgumentError("pytorch: a key rule is (regex, replacement or None), found %r" % (rule,))
        try:
            compiled.append((re.compile(rule[0]), rule[1]))
        except re.error as e:
            raise ArgumentError("pytorch: key rule %r is not a valid regex (%s)" % (rule[0], e))
    out = []
    for n in names:
        for pattern, repl in compiled:
            if n is None:
                break
            if repl is None:
                n = None if pattern.search(n) else n
            else:
                n = pattern.sub(repl, n)
        out.append(n)
    return out


def open_checkpoint(path, key=None, rules=None, strip_prefix="module."):
    """Open the checkpoint at ``path`` (zip or legacy) and read its pickle; no tensor is read."""
    from ember.record.reader import fspath
    path = fspath(path, "pytorch.open")
    f = open(path, "rb")
    try:
        size = f.seek(0, 2)
        f.seek(0)
        head = f.read(4)
        where = "pytorch.open: %s" % path
        table = _table(where)
        if head == b"PK\x03\x04":
            kind, box = "zip", ZipCheckpoint(path, f, size, where)
            start, data = 0, box.pickle
        elif head[:1] == b"\x80":
            kind, box = "legacy", LegacyCheckpoint(path, f, size, where, table)
            start, data = box.pickle_start, box.pickle
        else:
            from ember.accel.cli.formats import sniff
            raise RecordError("%s: not a PyTorch checkpoint (found: %s)" % (where, sniff(path)))
        try:
            obj, end = unpickle.Unpickler(data, where, table, box.persistent, start).load()
            box.locate(end)
        finally:
            if kind == "legacy":
                box.close()
        found, extras = _flatten(_select(obj, key, where), where)
        for name, ref in found:  # a stride-0 view could claim far more bytes than the file holds
            if ref.numel * unpickle.ITEMSIZE[ref.torch_dtype] > size:
                raise RecordError("%s: tensor %r of size %s would take %d bytes, more than the file's %d"
                                  % (where, name[:100], _short(ref.size), ref.numel * unpickle.ITEMSIZE[ref.torch_dtype], size))
        names = [n for n, _ in found]
        if strip_prefix and names and all(n.startswith(strip_prefix) for n in names):
            names = [n[len(strip_prefix):] for n in names]
        entries, taken = [], {}
        for old, new, (_, ref) in zip([n for n, _ in found], remap(names, rules), found):
            if new is None:
                continue
            if new in taken:
                raise RecordError("%s: tensors %r and %r both map to %r" % (where, taken[new], old, new))
            taken[new] = old
            entries.append(Entry(new, ref))
        return Checkpoint(path, f, kind, obj, entries, extras)
    except BaseException:
        f.close()
        raise


def _short(v):
    r = repr(v) if type(v) in (int, bool, type(None)) else type(v).__name__
    if type(v) in (tuple, list) and len(v) <= 8 and all(type(x) is int for x in v):
        r = repr(tuple(v))
    return r[:80]
