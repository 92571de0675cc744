"""Tensors of other libraries (PyTorch, numpy, anything with DLPack or ``__array__``) as ember
tensors, for ``Module.load_state_dict``: the core calls ``to_ember`` for a value that is not an
ember Tensor."""
from ember.errors import ArgumentTypeError
from ember.tensor import Tensor

# numpy dtypes ember has no twin for -> the dtype that holds every value
_WIDEN = {"int16": "int32", "uint16": "int32", "uint32": "int64"}


def to_ember(value, name="tensor", op="to_ember"):
    """``value`` as an ember Tensor (a copy or a shared view on the NumPy device); anything that is
    not array-like is an ``ArgumentTypeError`` naming ``name``."""
    if type(value) is Tensor:
        return value
    if type(value) not in (list, tuple) and not (hasattr(value, "__dlpack__") or hasattr(value, "__array__")) \
            and hasattr(value, "tolist") and hasattr(value, "shape"):  # another array type: its values
        import ember
        return ember.tensor(value.tolist()).reshape(tuple(value.shape))
    if not (hasattr(value, "__dlpack__") or hasattr(value, "__array__")) or type(value) in (list, tuple):
        raise ArgumentTypeError("%s: expected a Tensor for %r (or a numpy array, a PyTorch tensor), found %s"
                                % (op, name, type(value).__name__))
    import numpy as np
    from ember.accel.numpy.interop import from_dlpack, from_numpy
    detach = getattr(value, "detach", None)
    if callable(detach):  # a torch tensor that requires grad refuses DLPack export
        value = detach()
    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack__"):
        a = np.asarray(value)
        if a.dtype.name in _WIDEN:
            a = a.astype(_WIDEN[a.dtype.name])
        return from_numpy(a)
    if str(getattr(value, "dtype", "")).replace("torch.", "") in _WIDEN:
        value = value.to(dtype=_torch().int32 if str(value.dtype) != "torch.uint32" else _torch().int64)
    return from_dlpack(value)


def _torch():
    import sys
    return sys.modules["torch"]  # a torch tensor was passed in: torch is imported already
