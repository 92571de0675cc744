"""``ember.accel.Candle()``: the contract's primitives over Hugging Face Candle's tensors."""
from ember.accel.numpy.device import NumPy
from ember.backend import Backend

from . import elementwise as _ew
from . import linalg as _linalg
from . import movement as _mv
from . import reduce as _reduce
from .exchange import CandleArray, download, numel, scalar, upload
from .host import host


class Candle(Backend):
    """A CPU device on ``candle.Tensor``s (candle-nn 0.4.2): matmul, elementwise arithmetic,
    comparisons, where, sums, max/min, gather and the movement ops run in candle; what the binding
    lacks runs on the host through the NumPy device (docs/candle.md lists which, and why).

    >>> dev = ember.accel.Candle()
    >>> x = ember.randn(64, 784, device=dev)
    >>> (x @ x.T).shape
    (64, 64)

    Each tensor's array is a ``CandleArray`` (``exchange.py``): the candle tensor and the ember
    dtype; bool lives in candle's u8, int8 and int32 in its i64. All instances are the same device.
    """

    name = "Candle"

    # data in and out: built or read by the NumPy device, moved exactly (exchange.py)
    @staticmethod
    def from_list(flat, shape, dtype):
        """The primitive ``from_list``: Python numbers rounded to ``dtype`` as a Candle array."""
        return upload(NumPy.from_list(flat, shape, dtype), dtype)

    @staticmethod
    def from_bytes(buf, shape, dtype):
        """The primitive ``from_bytes``: little-endian bytes (safetensors' layout) as a Candle array."""
        return upload(NumPy.from_bytes(buf, shape, dtype), dtype)

    @staticmethod
    def to_list(x):
        """The primitive ``to_list``: the values as a flat row-major list."""
        return NumPy.to_list(download(x))

    @staticmethod
    def to_bytes(x):
        """The primitive ``to_bytes``: the values little-endian, row-major."""
        return NumPy.to_bytes(download(x))

    @staticmethod
    def full(shape, value, dtype):
        """The primitive ``full``: one uploaded element broadcast to ``shape`` (a stride-0 view)."""
        if numel(shape) == 0:
            return upload(NumPy.full(shape, value, dtype), dtype)
        return CandleArray(scalar(value, dtype, tuple(shape)), dtype)

    reshape = staticmethod(_mv.reshape)
    permute = staticmethod(_mv.permute)
    expand = staticmethod(_mv.expand)
    slice = staticmethod(_mv.slice_)
    slice_assign = staticmethod(host("slice_assign"))
    cat = staticmethod(_mv.cat)

    unary = staticmethod(_ew.unary)
    binary = staticmethod(_ew.binary)
    where = staticmethod(_ew.where)
    cast = staticmethod(_ew.cast)

    reduce = staticmethod(_reduce.reduce)
    scan = staticmethod(host("scan"))
    sort = staticmethod(host("sort"))
    matmul = staticmethod(_linalg.matmul)
    conv = staticmethod(_linalg.conv)
    pool = staticmethod(_linalg.pool)
    gather = staticmethod(_mv.gather)
    scatter = staticmethod(host("scatter"))
