"""``ember.accel.NumPy()``: the contract's primitives over numpy arrays (see docs/architecture.md §5)."""
import numpy as np

from ember import dtypes
from ember.backend import Backend

from . import elementwise as _ew
from . import linalg as _linalg
from . import movement as _mv
from . import random as _random
from . import reduce as _reduce
from .arrays import LE, NP, bf16_bits, bits_to_bf16, ember_dtype, from_values
from .arrays import full as _full


class NumPy(Backend):
    """A CPU device on numpy arrays: ember's semantics (the pure ``Cpu`` backend's values) at numpy speed.

    >>> dev = ember.accel.NumPy()
    >>> x = ember.randn(64, 784, device=dev)
    >>> x.numpy()            # a read-only view of the same memory, no copy

    Each tensor's array is a ``numpy.ndarray`` of the dtype's numpy type; bfloat16, which numpy
    lacks, is stored as float32 values rounded to bfloat16 (see ``arrays.BF16``). All instances
    are the same device: ``NumPy() == NumPy()``.
    """

    name = "NumPy"

    # data in and out
    @staticmethod
    def from_list(flat, shape, dtype):
        """The primitive ``from_list``: Python numbers as a numpy array of ``shape``, rounded to ``dtype``."""
        return from_values(flat, dtype).reshape(shape)

    @staticmethod
    def from_bytes(buf, shape, dtype):
        """The primitive ``from_bytes``: a numpy array over the little-endian bytes (bfloat16 and bool converted)."""
        if dtype is dtypes.bfloat16:
            return bits_to_bf16(np.frombuffer(buf, "<u2")).reshape(shape)
        if dtype is dtypes.bool_:
            return (np.frombuffer(buf, np.uint8) != 0).reshape(shape)
        a = np.frombuffer(buf, LE[dtype])
        if a.dtype != NP[dtype]:  # a big-endian host
            a = a.astype(NP[dtype])
        elif type(buf) is not bytes:  # a mutable buffer: copy, no later write may reach the tensor
            a = a.copy()
        return a.reshape(shape)

    @staticmethod
    def to_list(x):
        """The primitive ``to_list``: the values as a flat row-major list."""
        return x.ravel().tolist()

    @staticmethod
    def to_bytes(x):
        """The primitive ``to_bytes``: the values little-endian, row-major."""
        dtype = ember_dtype(x)
        if dtype is dtypes.bfloat16:
            return bf16_bits(x).tobytes()
        return np.asarray(x, dtype=LE[dtype]).tobytes()

    full = staticmethod(_full)

    # movement: numpy views where numpy can
    reshape = staticmethod(np.ndarray.reshape)  # the method itself: no Python frame per call
    permute = staticmethod(np.ndarray.transpose)
    expand = staticmethod(_mv.expand)
    slice = staticmethod(_mv.slice_)
    slice_assign = staticmethod(_mv.slice_assign)
    cat = staticmethod(_mv.cat)

    # elementwise
    unary = staticmethod(_ew.unary)
    binary = staticmethod(_ew.binary)
    where = staticmethod(_ew.where)
    cast = staticmethod(_ew.cast)

    # reductions, linear algebra, nn, indexing
    reduce = staticmethod(_reduce.reduce)
    scan = staticmethod(_reduce.scan)
    sort = staticmethod(_reduce.sort)
    matmul = staticmethod(_linalg.matmul)
    conv = staticmethod(_linalg.conv)
    pool = staticmethod(_linalg.pool)
    gather = staticmethod(_mv.gather)
    scatter = staticmethod(_mv.scatter)

    # random draws: the Generator's stream, as on every Cpu
    random = staticmethod(_random.random)
