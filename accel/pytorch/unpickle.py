"""An allow-listed pickle interpreter for PyTorch checkpoints: ember's own opcode loop, never
``pickle.load``.

Only plain data (None, bools, ints, floats, strings, bytes, lists, tuples, dicts, sets) and the
globals in ``ALLOWED`` are built. A global names an ember function that rebuilds what torch would
(a lazy tensor, an ``OrderedDict``); nothing is ever imported and no object's own ``__reduce__``,
``__setstate__`` or constructor runs. ``INST``, ``OBJ``, ``EXT*``, text ``PERSID`` and out-of-band
buffers are refused, as is every length that claims more bytes than the pickle holds.
"""
import struct
from collections import OrderedDict

from ember.errors import RecordError

MAX_INT_BYTES = 16  # torch's largest int is the legacy magic number (10 bytes)
MAX_INT_DIGITS = 40


class Global:
    """An allow-listed global: a function ``fn(args)`` REDUCE may call, or a plain ``value``."""
    __slots__ = ("name", "fn", "value")

    def __init__(self, name, fn=None, value=None):
        self.name = name
        self.fn = fn
        self.value = value

    def __repr__(self):
        return "<allowed global %s>" % self.name


class StorageType:
    """A torch storage class (``torch.FloatStorage``): the dtype name of its elements and their size."""
    __slots__ = ("name", "dtype", "itemsize")

    def __init__(self, name, dtype, itemsize):
        self.name = name
        self.dtype = dtype
        self.itemsize = itemsize

    def __repr__(self):
        return "torch.%s" % self.name


class TorchDType:
    """A ``torch.<dtype>`` global (``_rebuild_tensor_v3`` names the dtype of an untyped storage)."""
    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


# torch storage class -> (torch dtype name, bytes per element)
STORAGES = {
    "FloatStorage": ("float32", 4), "DoubleStorage": ("float64", 8), "HalfStorage": ("float16", 2),
    "BFloat16Storage": ("bfloat16", 2), "LongStorage": ("int64", 8), "IntStorage": ("int32", 4),
    "ShortStorage": ("int16", 2), "CharStorage": ("int8", 1), "ByteStorage": ("uint8", 1),
    "BoolStorage": ("bool", 1), "ComplexFloatStorage": ("complex64", 8),
    "ComplexDoubleStorage": ("complex128", 16), "QInt8Storage": ("qint8", 1), "QUInt8Storage": ("quint8", 1),
    "QInt32Storage": ("qint32", 4), "UntypedStorage": ("untyped", 1),
}
TORCH_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                "uint16", "uint32", "uint64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2")
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint8": 1, "bool": 1, "uint16": 2, "uint32": 4, "uint64": 8, "complex64": 8,
            "complex128": 16, "float8_e4m3fn": 1, "float8_e5m2": 1}


def _ordered_dict(args):
    if args == ():
        return OrderedDict()
    if len(args) == 1 and type(args[0]) in (list, tuple):
        out = OrderedDict()
        for pair in args[0]:
            if type(pair) not in (tuple, list) or len(pair) != 2:
                raise ValueError("collections.OrderedDict expects (key, value) pairs")
            out[_key(pair[0])] = pair[1]
        return out
    raise ValueError("collections.OrderedDict takes () or a list of pairs, found %d arguments" % len(args))


def _size(args):
    if len(args) != 1 or type(args[0]) not in (tuple, list) or any(type(d) is not int for d in args[0]):
        raise ValueError("torch.Size expects one tuple of ints")
    return tuple(args[0])


def _encode(args):
    # protocol 2 spells bytes as _codecs.encode(text, "latin1")
    if len(args) != 2 or type(args[0]) is not str or args[1] not in ("latin1", "latin-1"):
        raise ValueError("_codecs.encode is allowed only as (str, 'latin1')")
    return args[0].encode("latin1")


def _set(args):
    if len(args) == 0:
        return set()
    if len(args) == 1 and type(args[0]) in (list, tuple):
        return set(_key(k) for k in args[0])
    raise ValueError("builtins.set takes () or one list")


def _bytearray(args):
    if len(args) == 0:
        return bytearray()
    if len(args) == 1 and type(args[0]) is bytes:
        return bytearray(args[0])
    raise ValueError("builtins.bytearray takes () or one bytes")


def allowed(rebuild):
    """The allow-list: ``"module name"`` -> ``Global``. ``rebuild`` maps the tensor-rebuild functions'
    names to ember functions of their argument tuple."""
    table = {
        "collections OrderedDict": Global("collections.OrderedDict", _ordered_dict),
        "torch Size": Global("torch.Size", _size),
        "_codecs encode": Global("_codecs.encode", _encode),
        "builtins set": Global("builtins.set", _set),
        "__builtin__ set": Global("builtins.set", _set),
        "builtins bytearray": Global("builtins.bytearray", _bytearray),
        "torch Tensor": Global("torch.Tensor", value=TensorClass("torch.Tensor")),
        "torch.nn.parameter Parameter": Global("torch.nn.parameter.Parameter",
                                               value=TensorClass("torch.nn.parameter.Parameter")),
    }
    for name in rebuild:
        table["torch._utils " + name] = Global("torch._utils." + name, rebuild[name])
    for name in STORAGES:
        dt, size = STORAGES[name]
        table["torch " + name] = Global("torch." + name, value=StorageType(name, dt, size))
    table["torch.storage UntypedStorage"] = table["torch UntypedStorage"]
    for dt in TORCH_DTYPES:
        table["torch " + dt] = Global("torch." + dt, value=TorchDType(dt))
    return table


HASHABLE = (str, int, float, bool, bytes, type(None))


def _key(k):
    """A dict key or set member: a scalar or a flat tuple of scalars (deep tuples could exhaust C's stack)."""
    if type(k) in HASHABLE:
        return k
    if type(k) is tuple and all(type(x) in HASHABLE for x in k):
        return k
    raise ValueError("a dict key must be a string, number or flat tuple, found %s" % type(k).__name__)


class TensorClass:
    """``torch.Tensor`` or ``torch.nn.Parameter`` named as a class (``_rebuild_from_type_v2``)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class Unpickler:
    """Interpret one pickle from ``data`` (bytes) starting at ``pos``.

    ``table`` is the allow-list (``allowed``); ``persistent(pid)`` turns a ``BINPERSID`` id (a tuple)
    into a storage. ``load()`` returns (object, position after STOP). Every refusal or damage is a
    ``RecordError`` naming ``where`` and the opcode's offset."""

    def __init__(self, data, where, table, persistent=None, pos=0, end=None):
        self.data = data
        self.where = where
        self.table = table
        self.persistent = persistent
        self.pos = pos
        self.end = len(data) if end is None else end

    def error(self, at, msg):
        return RecordError("%s: pickle byte %d: %s" % (self.where, at, msg))

    def _take(self, n, at, what):
        if n < 0 or n > self.end - self.pos:
            raise self.error(at, "%s claims %d bytes, only %d are left" % (what, n, self.end - self.pos))
        p = self.pos
        self.pos = p + n
        return self.data[p:p + n]

    def _line(self, at, what):
        stop = self.data.find(b"\n", self.pos, min(self.end, self.pos + 4096))
        if stop < 0:
            raise self.error(at, "%s: no end of line within 4096 bytes" % what)
        line = self.data[self.pos:stop]
        self.pos = stop + 1
        return line

    def _global(self, at, module, name):
        """The allow-listed function (a ``Global``) or value (a storage type, dtype...) named."""
        g = self.table.get(module + " " + name)
        if g is None:
            raise self.error(at, "global %s.%s is not allowed: a PyTorch weights file may only name "
                                 "tensor-rebuild functions, storage types, torch dtypes and "
                                 "collections.OrderedDict (refusing to run code from the file)"
                             % (_clip(module), _clip(name)))
        return g if g.fn is not None else g.value

    def load(self):
        try:
            return self._run()
        except RecordError:
            raise
        except (ValueError, TypeError, IndexError, KeyError, OverflowError, UnicodeDecodeError,
                struct.error, MemoryError, RecursionError) as e:
            raise self.error(self._op_at, "%s (%s)" % (e, type(e).__name__))

    def _run(self):
        data = self.data
        stack = []
        metastack = []
        memo = {}
        self._op_at = self.pos
        while True:
            at = self._op_at = self.pos
            if at >= self.end:
                raise self.error(at, "truncated: the pickle ends before its STOP opcode")
            op = data[at:at + 1]
            self.pos = at + 1
            if op == b".":  # STOP
                if len(stack) != 1 or metastack:
                    raise self.error(at, "STOP with %d objects on the stack (expected 1)" % len(stack))
                return stack[0], self.pos
            if op == b"\x80":  # PROTO
                proto = self._take(1, at, "PROTO")[0]
                if proto > 5:
                    raise self.error(at, "pickle protocol %d is not supported (0-5)" % proto)
            elif op == b"\x95":  # FRAME: only a length hint
                self._take(8, at, "FRAME")
            elif op == b"(":
                metastack.append(stack)
                stack = []
            elif op == b"0":
                if not stack:
                    raise self.error(at, "POP on an empty stack")
                stack.pop()
            elif op == b"1":
                stack = self._pop_mark(at, metastack)
            elif op == b"2":
                if not stack:
                    raise self.error(at, "DUP on an empty stack")
                stack.append(stack[-1])
            elif op == b"N":
                stack.append(None)
            elif op == b"\x88":
                stack.append(True)
            elif op == b"\x89":
                stack.append(False)
            elif op == b"K":
                stack.append(self._take(1, at, "BININT1")[0])
            elif op == b"M":
                stack.append(struct.unpack("<H", self._take(2, at, "BININT2"))[0])
            elif op == b"J":
                stack.append(struct.unpack("<i", self._take(4, at, "BININT"))[0])
            elif op == b"\x8a":
                n = self._take(1, at, "LONG1")[0]
                stack.append(self._long(at, n))
            elif op == b"\x8b":
                n = struct.unpack("<i", self._take(4, at, "LONG4"))[0]
                stack.append(self._long(at, n))
            elif op in (b"I", b"L"):
                stack.append(self._text_int(at, op))
            elif op == b"G":
                stack.append(struct.unpack(">d", self._take(8, at, "BINFLOAT"))[0])
            elif op == b"F":
                line = self._line(at, "FLOAT")
                if len(line) > 64:
                    raise self.error(at, "FLOAT text of %d characters" % len(line))
                stack.append(float(line.decode("ascii")))
            elif op == b"X":
                n = struct.unpack("<I", self._take(4, at, "BINUNICODE"))[0]
                stack.append(str(self._take(n, at, "BINUNICODE"), "utf-8", "surrogatepass"))
            elif op == b"\x8c":
                n = self._take(1, at, "SHORT_BINUNICODE")[0]
                stack.append(str(self._take(n, at, "SHORT_BINUNICODE"), "utf-8", "surrogatepass"))
            elif op == b"\x8d":
                n = struct.unpack("<Q", self._take(8, at, "BINUNICODE8"))[0]
                stack.append(str(self._take(n, at, "BINUNICODE8"), "utf-8", "surrogatepass"))
            elif op == b"V":
                stack.append(self._line(at, "UNICODE").decode("raw-unicode-escape"))
            elif op == b"T":
                n = struct.unpack("<i", self._take(4, at, "BINSTRING"))[0]
                stack.append(self._take(n, at, "BINSTRING").decode("latin1"))
            elif op == b"U":
                n = self._take(1, at, "SHORT_BINSTRING")[0]
                stack.append(self._take(n, at, "SHORT_BINSTRING").decode("latin1"))
            elif op == b"B":
                n = struct.unpack("<I", self._take(4, at, "BINBYTES"))[0]
                stack.append(bytes(self._take(n, at, "BINBYTES")))
            elif op == b"C":
                n = self._take(1, at, "SHORT_BINBYTES")[0]
                stack.append(bytes(self._take(n, at, "SHORT_BINBYTES")))
            elif op == b"\x8e":
                n = struct.unpack("<Q", self._take(8, at, "BINBYTES8"))[0]
                stack.append(bytes(self._take(n, at, "BINBYTES8")))
            elif op == b"\x96":
                n = struct.unpack("<Q", self._take(8, at, "BYTEARRAY8"))[0]
                stack.append(bytearray(self._take(n, at, "BYTEARRAY8")))
            elif op == b"]":
                stack.append([])
            elif op == b")":
                stack.append(())
            elif op == b"}":
                stack.append({})
            elif op == b"\x8f":
                stack.append(set())
            elif op == b"l":
                items = stack
                stack = self._pop_mark(at, metastack)
                stack.append(items)
            elif op == b"t":
                items = stack
                stack = self._pop_mark(at, metastack)
                stack.append(tuple(items))
            elif op in (b"\x85", b"\x86", b"\x87"):
                n = op[0] - 0x84
                if len(stack) < n:
                    raise self.error(at, "TUPLE%d needs %d objects, the stack holds %d" % (n, n, len(stack)))
                items = tuple(stack[len(stack) - n:])
                del stack[len(stack) - n:]
                stack.append(items)
            elif op == b"\x91":  # FROZENSET
                items = stack
                stack = self._pop_mark(at, metastack)
                stack.append(frozenset(_key(k) for k in items))
            elif op == b"d":
                items = stack
                stack = self._pop_mark(at, metastack)
                stack.append(self._dict_from(at, {}, items))
            elif op == b"a":
                if len(stack) < 2:
                    raise self.error(at, "APPEND needs a list and a value")
                v = stack.pop()
                self._list_of(at, stack[-1]).append(v)
            elif op == b"e":
                items = stack
                stack = self._pop_mark(at, metastack)
                if not stack:
                    raise self.error(at, "APPENDS with no list below the mark")
                self._list_of(at, stack[-1]).extend(items)
            elif op == b"s":
                if len(stack) < 3:
                    raise self.error(at, "SETITEM needs a dict, a key and a value")
                v = stack.pop()
                k = stack.pop()
                self._dict_from(at, stack[-1], [k, v])
            elif op == b"u":
                items = stack
                stack = self._pop_mark(at, metastack)
                if not stack:
                    raise self.error(at, "SETITEMS with no dict below the mark")
                self._dict_from(at, stack[-1], items)
            elif op == b"\x90":  # ADDITEMS
                items = stack
                stack = self._pop_mark(at, metastack)
                if not stack or type(stack[-1]) is not set:
                    raise self.error(at, "ADDITEMS on something that is not a set")
                for k in items:
                    stack[-1].add(_key(k))
            elif op in (b"p", b"q", b"r", b"\x94"):
                if op == b"p":
                    idx = self._text_int(at, op)
                elif op == b"q":
                    idx = self._take(1, at, "BINPUT")[0]
                elif op == b"r":
                    idx = struct.unpack("<I", self._take(4, at, "LONG_BINPUT"))[0]
                else:
                    idx = len(memo)
                if not stack:
                    raise self.error(at, "memo PUT on an empty stack")
                memo[idx] = stack[-1]
            elif op in (b"g", b"h", b"j"):
                if op == b"g":
                    idx = self._text_int(at, op)
                elif op == b"h":
                    idx = self._take(1, at, "BINGET")[0]
                else:
                    idx = struct.unpack("<I", self._take(4, at, "LONG_BINGET"))[0]
                if idx not in memo:
                    raise self.error(at, "memo GET of %d, which was never PUT" % idx)
                stack.append(memo[idx])
            elif op == b"c":  # GLOBAL
                module = self._line(at, "GLOBAL").decode("utf-8")
                name = self._line(at, "GLOBAL").decode("utf-8")
                stack.append(self._global(at, module, name))
            elif op == b"\x93":  # STACK_GLOBAL
                if len(stack) < 2 or type(stack[-1]) is not str or type(stack[-2]) is not str:
                    raise self.error(at, "STACK_GLOBAL needs two strings on the stack")
                name = stack.pop()
                module = stack.pop()
                stack.append(self._global(at, module, name))
            elif op == b"R":  # REDUCE
                if len(stack) < 2:
                    raise self.error(at, "REDUCE needs a callable and its arguments")
                args = stack.pop()
                fn = stack.pop()
                stack.append(self._call(at, fn, args))
            elif op == b"\x81":  # NEWOBJ: only OrderedDict's cls.__new__(cls)
                if len(stack) < 2:
                    raise self.error(at, "NEWOBJ needs a class and its arguments")
                args = stack.pop()
                cls = stack.pop()
                if type(cls) is not Global or cls.fn is not _ordered_dict or args != ():
                    raise self.error(at, "NEWOBJ is allowed only as collections.OrderedDict with no "
                                         "arguments, found %s with %s" % (_what(cls), _what(args)))
                stack.append(OrderedDict())
            elif op == b"b":  # BUILD
                if len(stack) < 2:
                    raise self.error(at, "BUILD needs an object and its state")
                state = stack.pop()
                self._build(at, stack[-1], state)
            elif op == b"Q":  # BINPERSID
                if not stack:
                    raise self.error(at, "BINPERSID on an empty stack")
                pid = stack.pop()
                if self.persistent is None:
                    raise self.error(at, "a persistent id (BINPERSID) where none is expected")
                if type(pid) is not tuple:
                    raise self.error(at, "a persistent id must be a tuple, found %s" % _what(pid))
                stack.append(self.persistent(pid, self.error_at(at)))
            else:
                names = {b"i": "INST", b"o": "OBJ", b"\x82": "EXT1", b"\x83": "EXT2", b"\x84": "EXT4",
                         b"P": "PERSID", b"\x92": "NEWOBJ_EX", b"\x97": "NEXT_BUFFER",
                         b"\x98": "READONLY_BUFFER", b"S": "STRING"}
                if op in names:
                    raise self.error(at, "opcode %s is not allowed in a PyTorch weights file" % names[op])
                raise self.error(at, "unknown pickle opcode 0x%02x" % op[0])

    def error_at(self, at):
        return lambda msg: self.error(at, msg)

    def _pop_mark(self, at, metastack):
        if not metastack:
            raise self.error(at, "no MARK on the stack")
        return metastack.pop()

    def _long(self, at, n):
        if n < 0 or n > MAX_INT_BYTES:
            raise self.error(at, "an integer of %d bytes (ember reads at most %d)" % (n, MAX_INT_BYTES))
        return int.from_bytes(self._take(n, at, "LONG"), "little", signed=True)

    def _text_int(self, at, op):
        line = self._line(at, "text integer")
        if op == b"L" and line.endswith(b"L"):
            line = line[:-1]
        if len(line) > MAX_INT_DIGITS:
            raise self.error(at, "an integer of %d digits (ember reads at most %d)" % (len(line), MAX_INT_DIGITS))
        if line == b"00":
            return False
        if line == b"01":
            return True
        return int(line.decode("ascii"))

    def _list_of(self, at, v):
        if type(v) is not list:
            raise self.error(at, "APPEND to %s (only lists)" % _what(v))
        return v

    def _dict_from(self, at, d, items):
        if type(d) not in (dict, OrderedDict):
            raise self.error(at, "SETITEM on %s (only dicts)" % _what(d))
        if len(items) % 2:
            raise self.error(at, "an odd number of items (%d) for a dict" % len(items))
        for i in range(0, len(items), 2):
            d[_key(items[i])] = items[i + 1]
        return d

    def _call(self, at, fn, args):
        if type(fn) is not Global or fn.fn is None:
            raise self.error(at, "REDUCE may only call allow-listed functions, found %s" % _what(fn))
        if type(args) is not tuple:
            raise self.error(at, "REDUCE arguments must be a tuple, found %s" % _what(args))
        try:
            return fn.fn(args)
        except RecordError:
            raise
        except (ValueError, TypeError) as e:
            raise self.error(at, "%s: %s" % (fn.name, e))

    def _build(self, at, obj, state):
        # torch's state_dict is an OrderedDict with a _metadata attribute (version numbers per module)
        if type(obj) is OrderedDict and type(state) in (dict, OrderedDict):
            return
        raise self.error(at, "BUILD (setting the state of an object) is allowed only on an OrderedDict "
                             "with a dict state, found %s with %s" % (_what(obj), _what(state)))


def _what(v):
    if type(v) is Global:
        return v.name
    return type(v).__name__


def _clip(s, n=80):
    return s if len(s) <= n else s[:n] + "..."
