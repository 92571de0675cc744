"""How the Candle device stores each ember dtype, and the exact road between candle and the host.

A Candle-device array is a ``CandleArray``: a ``candle.Tensor`` and the ember dtype it holds.
Candle has f32, f64, f16, bf16, u8, u32 and i64; ember's bool lives in u8 (0 or 1) and int8 and
int32 in i64 (each value exact; ops that wrap run on the host, see docs/candle.md), so the ember dtype
travels beside the tensor.

The binding's own converters are lossy (``candle.tensor`` turns every numpy array into f32 or u32)
and slow (``Tensor.values`` builds nested lists), so every transfer goes through a safetensors file
on a memory file system (``/dev/shm`` where it exists): one ``write`` and candle's
``load_safetensors`` up, ``save_safetensors`` and one ``read`` down, exact for every dtype.
"""
import atexit
import json
import os
import shutil
import struct
import tempfile
import threading

import numpy as np

import candle
from ember import dtypes
from ember.shapes import numel  # noqa: F401  (the device's modules take it from here)
from ember.accel.numpy.arrays import BF16, NP, bf16_bits, bits_to_bf16, from_values

# ember dtype -> (candle dtype of the storage, safetensors tag, little-endian numpy layout)
STORE = {
    dtypes.float32: (candle.f32, "F32", np.dtype("<f4")),
    dtypes.float64: (candle.f64, "F64", np.dtype("<f8")),
    dtypes.float16: (candle.f16, "F16", np.dtype("<f2")),
    dtypes.bfloat16: (candle.bf16, "BF16", np.dtype("<u2")),
    dtypes.uint8: (candle.u8, "U8", np.dtype("u1")),
    dtypes.bool_: (candle.u8, "U8", np.dtype("u1")),
    dtypes.int64: (candle.i64, "I64", np.dtype("<i8")),
    dtypes.int32: (candle.i64, "I64", np.dtype("<i8")),
    dtypes.int8: (candle.i64, "I64", np.dtype("<i8")),
}
# the ember dtypes by how candle holds them
FLOATS = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)
HALVES = (dtypes.float16, dtypes.bfloat16)
BOOL = dtypes.bool_
I64 = dtypes.int64
F32 = dtypes.float32
F64 = dtypes.float64


_LAYOUT = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": "<u2", "U8": "u1", "I64": "<i8", "U32": "<u4"}


class CandleArray:
    """A ``candle.Tensor`` (``t``) holding the values of the ember dtype ``dtype``."""

    __slots__ = ("t", "dtype")

    def __init__(self, t, dtype):
        self.t = t
        self.dtype = dtype

    @property
    def shape(self):
        return tuple(self.t.shape)

    def __repr__(self):
        return "CandleArray(%r, %s)" % (self.t, self.dtype)


_dir = []
_lock = threading.Lock()


def _path():
    # one file per process and thread, removed after each transfer: transfers never meet, and no
    # copy of a large tensor stays in the memory file system
    with _lock:
        if not _dir:
            base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
            _dir.append(tempfile.mkdtemp(prefix="ember-candle-", dir=base))
            atexit.register(shutil.rmtree, _dir[0], True)
        elif not os.path.isdir(_dir[0]):  # a forked child whose parent has exited and cleaned up
            os.makedirs(_dir[0], exist_ok=True)
    return os.path.join(_dir[0], "%d-%d.safetensors" % (os.getpid(), threading.get_ident()))


def upload(a, dtype):
    """A NumPy-device array ``a`` of ember dtype ``dtype`` as a ``CandleArray`` (an exact copy)."""
    cdt, tag, layout = STORE[dtype]
    if dtype is dtypes.bfloat16:
        raw = bf16_bits(a)
    else:
        raw = np.ascontiguousarray(a, dtype=layout)
    data = raw.tobytes()
    header = json.dumps({"x": {"dtype": tag, "shape": list(a.shape), "data_offsets": [0, len(data)]}})
    header = header.encode() + b" " * (-len(header) % 8)
    path = _path()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    try:
        t = candle.utils.load_safetensors(path)["x"]
    finally:
        os.remove(path)
    return CandleArray(t, dtype)


def download(x):
    """The values of the ``CandleArray`` ``x`` as a NumPy-device array of its ember dtype."""
    path = _path()
    try:
        candle.utils.save_safetensors(path, {"x": x.t})
        with open(path, "rb") as f:
            raw = f.read()
    finally:
        if os.path.exists(path):
            os.remove(path)
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])["x"]
    flat = np.frombuffer(raw, dtype=_LAYOUT[head["dtype"]], offset=8 + n)
    shape = tuple(head["shape"])
    dtype = x.dtype
    if dtype is dtypes.bfloat16:
        return bits_to_bf16(flat).reshape(shape).view(BF16)
    if dtype is dtypes.bool_:
        return (flat != 0).reshape(shape)
    return flat.astype(NP[dtype]).reshape(shape)  # astype copies: the array owns its memory


def empty(*xs):
    """Whether any of the arrays has no element (candle refuses most ops on those)."""
    for x in xs:
        if type(x) is CandleArray and 0 in x.t.shape:
            return True
    return False


_scalars = {}


def scalar(value, dtype, shape):
    """``value`` (already of ``dtype``) as a candle tensor of ``shape`` (a stride-0 view of one
    uploaded element; the element is kept, so a repeated scalar uploads once)."""
    key = (dtype.name, type(value), value, str(value))  # str: 0.0 and -0.0 apart
    t = _scalars.get(key)
    if t is None:
        if len(_scalars) > 1024:
            _scalars.clear()
        t = upload(from_values([value], dtype).reshape(()), dtype).t
        _scalars[key] = t
    return t.broadcast_as(tuple(shape)) if shape else t
