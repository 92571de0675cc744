"""Small helpers the op families share: dtypes by ONNX code, static values, axes."""
import ember
from ember.errors import RecordError

# TensorProto.DataType codes ember holds (uint16/int16 -> int32, uint32/uint64 -> int64 at load)
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "int32", 5: "int32", 6: "int32", 7: "int64", 9: "bool",
           10: "float16", 11: "float64", 12: "int64", 13: "int64", 16: "bfloat16"}


def onnx_dtype(code, n):
    name = _DTYPES.get(code)
    if name is None:
        n.fail("expected an element type ember holds (%s), found TensorProto type %s"
               % (", ".join(sorted(set(_DTYPES.values()))), code))
    return getattr(ember, name)


_INTS = {}  # id(tensor) -> (tensor, values): a replay's bound shape constants are read once


def ints(t):
    """The values of a small int tensor as a list of Python ints (None stays None). The values of a
    tensor of at most 16 elements are remembered (the tensor kept beside them, so its id stays
    its own): the ops never write into their inputs, and a replay passes the same constant
    Reshape targets and Slice bounds every call."""
    if t is None:
        return None
    got = _INTS.get(id(t))
    if got is not None and got[0] is t:
        return list(got[1])
    out = [int(v) for v in t.reshape(-1).tolist()]
    if len(out) <= 16:
        if len(_INTS) >= 1024:
            _INTS.clear()
        _INTS[id(t)] = (t, tuple(out))
    return out


def floats(t):
    if t is None:
        return None
    return [float(v) for v in t.reshape(-1).tolist()]


def axis(a, rank, n):
    if not -rank <= a < max(rank, 1):
        n.fail("expected an axis in %d..%d, found %d" % (-rank, rank - 1, a))
    return a + rank if a < 0 else a


def sized(dims, n):
    """``dims`` (a list of ints) checked before an op allocates them: a hostile file's
    ConstantOfShape([2**40]) is an error, not an out-of-memory crash at load."""
    from ..reader import MAX_ELEMENTS
    total = 1
    for d in dims:
        if d < 0:
            n.fail("expected dims >= 0, found %s" % list(dims))
        total *= d
        if total > MAX_ELEMENTS:
            raise RecordError("onnx: node %s: an output of dims %s holds more than %d elements (a hostile or too "
                              "large file)" % (n.label(), list(dims), MAX_ELEMENTS))
    return dims


def scalar_like(v, x):
    return ember.full((), v, dtype=x.dtype, device=x.device)


def int64(values, device):
    return ember.tensor(values, dtype=ember.int64, device=device)
