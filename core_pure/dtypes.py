"""ember's dtypes, the promotion rule, and how each dtype's values are rounded.

A dtype is a small object with a ``kind`` (``"b"`` bool, ``"i"`` integer, ``"f"`` float) and a
``rank`` inside its kind; promotion takes the highest kind, then the highest rank in it.
"""
import struct
from array import array

from .errors import ArgumentError, DTypeError


class DType:
    """An element type: ``ember.float32``, ``ember.int64``, ``ember.bool``...

    ``name`` (``"float32"``), ``kind`` (``"b"``, ``"i"`` or ``"f"``) and ``bits``; integer dtypes
    also give their range as ``lo`` and ``hi``. Compare dtypes with ``is``.
    """
    __slots__ = ("name", "kind", "bits", "rank", "code", "lo", "hi")

    def __init__(self, name, kind, bits, rank, code, signed=True):
        self.name = name
        self.kind = kind
        self.bits = bits
        self.rank = rank
        self.code = code  # struct format character ("" where struct has none)
        if kind == "i" and not signed:
            self.lo = 0
            self.hi = (1 << bits) - 1
        elif kind == "i":
            self.lo = -(1 << (bits - 1))
            self.hi = (1 << (bits - 1)) - 1
        else:
            self.lo = self.hi = None

    @property
    def is_float(self):
        """Whether this is a floating-point dtype (its kind is 'f')."""
        return self.kind == "f"

    @property
    def itemsize(self):
        """Bytes per element (1 for bool)."""
        return self.bits // 8 if self.bits >= 8 else 1

    def __repr__(self):
        return "ember." + self.name


bool_ = DType("bool", "b", 8, 0, "B")  # "B": MicroPython's struct has no "?"
int8 = DType("int8", "i", 8, 1, "b")
uint8 = DType("uint8", "i", 8, 2, "B", signed=False)  # an integer kind whose values are 0..255
int32 = DType("int32", "i", 32, 3, "i")
int64 = DType("int64", "i", 64, 4, "q")
float16 = DType("float16", "f", 16, 1, "e")
bfloat16 = DType("bfloat16", "f", 16, 2, "")
float32 = DType("float32", "f", 32, 3, "f")
float64 = DType("float64", "f", 64, 4, "d")

ALL = (bool_, int8, uint8, int32, int64, float16, bfloat16, float32, float64)
_BY_NAME = {}
for _d in ALL:
    _BY_NAME[_d.name] = _d
_BY_NAME["float"] = float32
_BY_NAME["int"] = int64
_BY_NAME["long"] = int64
_BY_NAME["half"] = float16
_BY_NAME["double"] = float64

# PyTorch's legacy tensor type names (``x.type()``): "FloatTensor" is float32, and so on
_TYPE_NAMES = (("Bool", "bool"), ("Char", "int8"), ("Byte", "uint8"), ("Int", "int32"), ("Long", "int64"),
               ("Half", "float16"), ("BFloat16", "bfloat16"), ("Float", "float32"), ("Double", "float64"))


def tensor_type_name(dtype):
    """PyTorch's name of the tensor type of ``dtype``: ``"FloatTensor"`` for float32."""
    for prefix, name in _TYPE_NAMES:
        if name == dtype.name:
            return prefix + "Tensor"
    raise DTypeError("type: %s has no tensor type name" % dtype.name)


def from_tensor_type_name(text):
    """The dtype of a tensor type name (``"torch.LongTensor"``, ``"ember.FloatTensor"``, ``"LongTensor"``)."""
    short = text.rsplit(".", 1)[-1]
    for prefix, name in _TYPE_NAMES:
        if prefix + "Tensor" == short:
            return _BY_NAME[name]
    raise DTypeError("type: expected an ember dtype or a tensor type name such as 'torch.FloatTensor', found %r"
                     % (text,))


default_float = float32
default_int = int64


def get(dtype, op="dtype"):
    """The DType for a DType, a name (``"float32"``) or a Python type (``float``, ``int``, ``bool``)."""
    if type(dtype) is DType:
        return dtype
    if dtype is float:
        return default_float
    if dtype is int:
        return default_int
    if dtype is bool:
        return bool_
    if type(dtype) is str and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    raise DTypeError("%s: expected an ember dtype or one of %s, found %r" % (op, sorted(_BY_NAME), dtype))


def promote(a, b):
    """The dtype two tensors of dtypes ``a`` and ``b`` compute in."""
    if a is b:
        return a
    if a.kind != b.kind:
        order = "bif"
        return a if order.index(a.kind) > order.index(b.kind) else b
    if a.kind == "f" and {a.name, b.name} == {"float16", "bfloat16"}:
        return float32  # neither holds the other
    if a.kind == "i" and {a.name, b.name} == {"int8", "uint8"}:
        return int32  # neither holds the other (PyTorch gives int16, which ember lacks)
    return a if a.rank >= b.rank else b


def scalar_kind(value):
    t = type(value)
    if t is bool:
        return "b"
    if t is int:
        return "i"
    if t is float:
        return "f"
    return None


def promote_scalar(dtype, value, op="op"):
    """The dtype of ``tensor op value`` for a Python scalar: the scalar only lifts the kind."""
    kind = scalar_kind(value)
    if kind is None:
        raise DTypeError("%s: expected a tensor or a Python bool/int/float, found %s" % (op, type(value).__name__))
    if kind == dtype.kind or (kind == "b") or (kind == "i" and dtype.kind == "f"):
        return dtype
    return default_float if kind == "f" else default_int


def of_value(value):
    """The dtype ``ember.tensor(value)`` infers for a Python scalar."""
    kind = scalar_kind(value)
    if kind == "b":
        return bool_
    if kind == "i":
        return default_int
    if kind == "f":
        return default_float
    raise DTypeError("tensor: expected bool, int or float elements, found %s" % type(value).__name__)


def check_int(value, dtype, op):
    """``value`` when ``dtype`` is not an integer dtype or holds the Python int ``value``; else an
    ``ArgumentError`` naming both (docs/architecture.md §3: Python ints never wrap)."""
    if dtype.kind == "i" and type(value) is int and (value < dtype.lo or value > dtype.hi):
        raise ArgumentError("%s: the Python int %d does not fit %s (expected %d..%d)"
                            % (op, value, dtype.name, dtype.lo, dtype.hi))
    return value


def int_as_float(value):
    """A Python int as a float: ±inf beyond the host float's range (§3: a float dtype rounds it)."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def check_ints(values, dtype, op):
    """``check_int`` for every Python int of the list ``values`` (one pass of min and max when all fit)."""
    if dtype.kind != "i" or not values:
        return
    try:
        if min(values) >= dtype.lo and max(values) <= dtype.hi:
            return
    except TypeError:  # mixed types that do not compare: look at each
        pass
    for v in values:
        check_int(v, dtype, op)


# Rounding Python numbers into a dtype's value set. The Cpu backend stores each dtype's values as
# Python numbers that the dtype can hold exactly, so results match IEEE float32 (for + - * / sqrt,
# double rounding through float64 is exact) and integer ops wrap as two's complement.

def wrap_int(values, dtype):
    """Two's-complement wrap of Python ints into ``dtype``'s range (a no-op when all fit)."""
    if not values:
        return values
    lo, hi = dtype.lo, dtype.hi
    if min(values) >= lo and max(values) <= hi:
        return values
    m = 1 << dtype.bits
    return [((v - lo) % m) + lo for v in values]


def _f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _bits_f32(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


def f32_to_f16_bits(x):
    """IEEE half bits of the float32 ``x``, rounding to nearest even (no reliance on struct 'e')."""
    b = _f32_bits(x)
    sign = (b >> 16) & 0x8000
    exp = (b >> 23) & 0xFF
    man = b & 0x7FFFFF
    if exp == 0xFF:  # inf or nan
        return sign | 0x7C00 | (0x200 if man else 0)
    e = exp - 127 + 15
    if e >= 0x1F:
        return sign | 0x7C00
    if e <= 0:
        if e < -10:
            return sign
        man |= 0x800000
        shift = 14 - e
        half = man >> shift
        rest = man & ((1 << shift) - 1)
        mid = 1 << (shift - 1)
        if rest > mid or (rest == mid and half & 1):
            half += 1
        return sign | half
    half = (e << 10) | (man >> 13)
    rest = man & 0x1FFF
    if rest > 0x1000 or (rest == 0x1000 and half & 1):
        half += 1  # may carry into the exponent, up to inf: that is the correct rounding
    return sign | half


def f16_bits_to_float(h):
    sign = -1.0 if h & 0x8000 else 1.0
    exp = (h >> 10) & 0x1F
    man = h & 0x3FF
    if exp == 0:
        return sign * man * 2.0 ** -24
    if exp == 0x1F:
        return sign * float("inf") if man == 0 else float("nan")
    return sign * (1024 + man) * 2.0 ** (exp - 25)


def f32_to_bf16_bits(x):
    b = _f32_bits(x)
    if (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF):
        return (b >> 16) | 0x40  # keep nan a nan
    return (b + 0x7FFF + ((b >> 16) & 1)) >> 16


def bf16_bits_to_float(h):
    return _bits_f32(h << 16)


# A board whose float is single precision already holds float32 values: no rounding pass needed.
_HOST_WIDER_THAN_F32 = 1.0 + 2.0 ** -24 != 1.0


def _round_f32(values):
    if _HOST_WIDER_THAN_F32:
        return list(array("f", values))
    return [float(v) for v in values]


def round_values(values, dtype):
    """``values`` (a list of Python numbers) as ``dtype`` holds them: rounded, wrapped or cast."""
    kind = dtype.kind
    if kind == "f":
        if dtype is float64:
            return [float(v) for v in values]
        values = _round_f32(values)
        if dtype is float32:
            return values
        if dtype is float16:
            return [f16_bits_to_float(f32_to_f16_bits(v)) for v in values]
        return [bf16_bits_to_float(f32_to_bf16_bits(v)) for v in values]
    if kind == "i":
        return wrap_int([_to_int(v) for v in values], dtype)
    return [bool(v) for v in values]


def _to_int(v):
    # float -> int truncates toward zero as C does; nan and inf have no integer, they become 0
    if type(v) is float:
        if v != v or v in (float("inf"), float("-inf")):
            return 0
        return int(v)
    return int(v)
