"""How the Torch device stores each ember dtype, and the data-in/data-out primitives.

A Torch-device array is a plain ``torch.Tensor`` with ``requires_grad`` False (ember's own
``Autodiff`` records gradients; torch's autograd never runs). Every ember dtype has a torch dtype of
its own, bfloat16 included, so no marker is needed. Values come in rounded as the Cpu backend rounds
them: floats to float32 first, then to float16 or bfloat16 (round to nearest even each time).
"""
import ctypes

import torch

from ember import dtypes

# ember dtype -> torch dtype
TORCH = {
    dtypes.bool_: torch.bool,
    dtypes.int8: torch.int8,
    dtypes.uint8: torch.uint8,
    dtypes.int32: torch.int32,
    dtypes.int64: torch.int64,
    dtypes.float16: torch.float16,
    dtypes.bfloat16: torch.bfloat16,
    dtypes.float32: torch.float32,
    dtypes.float64: torch.float64,
}
EMBER = {t: e for e, t in TORCH.items()}

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
I64, BOOL = torch.int64, torch.bool
LOW = (torch.float16, torch.bfloat16)
SUPPORTED = "bool, int8, uint8, int32, int64, float16, bfloat16, float32 or float64"


def version(a):
    """torch's count of in-place writes to ``a`` (shared by its views), or None for an inference
    tensor, which keeps none: what tells a tensor seen before from the same tensor written since."""
    try:
        return a._version
    except RuntimeError:
        return None


def ember_dtype(x):
    """The ember dtype a Torch-device array holds."""
    return EMBER[x.dtype]


def round_float(x, dt):
    """A float tensor ``x`` in the float torch dtype ``dt``, rounded as the Cpu backend rounds:
    a float64 value goes to float32 first, then to float16 or bfloat16."""
    if x.dtype is dt:
        return x
    if dt in LOW and x.dtype is not F32:
        x = x.to(F32)
    if dt is F16:
        return to_f16(x)
    return x.to(dt)


def to_f16(x32):
    """float32 to float16, nan payloads kept as the Cpu (and the F16C instruction) keeps them:
    sign and the top 10 mantissa bits (0x200 where those are all 0). torch's CPU conversion makes
    every nan 0x7E00."""
    out = x32.to(F16)
    nan = torch.isnan(x32)
    if x32.device.type == "cpu" and not bool(nan.any()):
        return out
    b = x32.view(torch.int32)
    m = (b >> 13) & 0x3FF
    h = ((b >> 16) & 0x8000) | 0x7C00 | torch.where(m == 0, 0x200, m)
    return torch.where(nan, h.to(torch.int16).view(F16), out)


_TWO64 = 18446744073709551616.0
_TWO63 = 9223372036854775808.0


def from_float(x, dt):
    """Cast a float tensor to the integer torch dtype ``dt`` by ember's rule: truncate toward zero,
    nan and inf give 0, values beyond the dtype wrap (two's complement, modulo 2**64 beyond int64).
    torch's own cast leaves nan, inf and out-of-range values undefined (x86 gives INT_MIN)."""
    t = torch.trunc(x.to(F64))
    t = torch.where(torch.isfinite(t), t, 0.0)
    big = t.abs() >= _TWO63
    if t.device.type != "cpu" or bool(big.any()):  # on a GPU always: a test would be a sync
        w = torch.fmod(t, _TWO64)  # exact: integral floats
        w = torch.where(w >= _TWO63, w - _TWO64, w)
        w = torch.where(w < -_TWO63, w + _TWO64, w)
        t = torch.where(big, w, t)
    out = t.to(I64)
    return out if dt is I64 else out.to(dt)


def from_f16(x16):
    """float16 to float32, nan payloads kept (torch's CPU conversion makes every nan 0x7FFFFFFF)."""
    out = x16.to(F32)
    nan = torch.isnan(x16)
    if x16.device.type == "cpu" and not bool(nan.any()):
        return out
    h = x16.view(torch.int16).to(torch.int32)
    b = ((h & 0x8000) << 16) | 0x7F800000 | ((h & 0x3FF) << 13)
    return torch.where(nan, b.view(F32), out)


def cast(x, dtype):
    """The primitive ``cast``: ``x`` in ember ``dtype`` with §3's rules."""
    dt = TORCH[dtype]
    if x.dtype is dt:
        return x
    if dtype.kind == "f":
        if not x.is_floating_point():
            x = x.to(F64 if dt is F64 else F32)
        elif x.dtype is F16:
            x = from_f16(x)
        return round_float(x, dt)  # float64 to float16/bfloat16 through float32, as the Cpu
    if dtype.kind == "b":
        return x != 0
    if x.is_floating_point():
        return from_float(x, dt)
    return x.to(dt)  # integer narrowing wraps, bool gives 0/1


def from_list(flat, shape, dtype, device):
    """Python numbers as a tensor of ``shape`` on ``device``, rounded to ``dtype`` as the Cpu rounds."""
    dt = TORCH[dtype]
    kind = dtype.kind
    out = None
    if kind == "f":
        try:
            out = torch.tensor(flat, dtype=F64 if dt is F64 else F32)
        except (OverflowError, RuntimeError, TypeError, ValueError):
            out = None  # an int beyond float64: the Cpu's own rounding
        if out is not None and dt in LOW:
            out = out.to(dt)
    elif kind == "i":
        vals = flat
        for v in flat:
            if type(v) is not int:  # floats truncate, nan gives 0: the Cpu's rule
                vals = dtypes.round_values(list(flat), dtypes.int64)
                break
        try:
            out = torch.tensor(vals, dtype=I64)
        except (OverflowError, RuntimeError, ValueError):
            out = None  # beyond int64: wrapped on the host below
        if out is not None and dt is not I64:
            out = out.to(dt)  # narrowing wraps, as the Cpu does
    if out is None:
        out = torch.tensor(dtypes.round_values(list(flat), dtype), dtype=dt)
    out = out.reshape(shape)
    return out if device.type == "cpu" else out.to(device)


def full(shape, value, dtype, device):
    """The primitive ``full``: ``value`` rounded to ``dtype`` (-0.0 keeps its sign)."""
    v = dtypes.round_values([value], dtype)[0]
    return torch.full(shape, v, dtype=TORCH[dtype], device=device)


def _host_bytes(x):
    """The bytes of a tensor, row-major, in the host's (little-endian) order."""
    c = x.detach().reshape(-1)
    if c.device.type != "cpu":
        c = c.cpu()
    c = c.contiguous()
    n = c.numel() * c.element_size()
    return ctypes.string_at(c.data_ptr(), n) if n else b""


def to_bytes(x):
    """The primitive ``to_bytes``: little-endian, row-major (bool as one byte 0/1; bfloat16 and
    float16 as their 16-bit patterns)."""
    if x.dtype is BOOL:
        x = x.to(torch.uint8)
    return _host_bytes(x)


def from_bytes(buf, shape, dtype, device):
    """The primitive ``from_bytes``: a tensor holding a copy of ``buf`` (later writes to a mutable
    buffer never reach it)."""
    dt = TORCH[dtype]
    if not len(buf):
        return torch.empty(shape, dtype=dt, device=device)
    raw = torch.frombuffer(bytearray(buf), dtype=torch.uint8 if dt is BOOL else dt)
    if dt is BOOL:
        raw = raw != 0
    raw = raw.reshape(shape)
    return raw if device.type == "cpu" else raw.to(device)


def to_list(x):
    """The primitive ``to_list``: the values as a flat row-major list (a sync point)."""
    return x.reshape(-1).tolist()
