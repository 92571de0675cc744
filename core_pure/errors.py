"""ember's errors: each class is also the builtin a Python user would catch.

Every message names the op and what was expected against what was found, e.g.
``matmul: expected a.shape[-1] == b.shape[-2], found (2, 3) @ (4, 5)``.

On CPython each class subclasses ``EmberError`` and its builtins; ``ShapeError`` is also a
``RuntimeError``, which PyTorch raises for shape problems. MicroPython cannot give a class two
exception bases, so there each class subclasses only its first builtin and ``EmberError`` is the
tuple of them all: ``except ember.EmberError`` and ``isinstance(e, ember.EmberError)`` work on both.
"""

# (name, builtins, what it means)
_KINDS = (
    ("ShapeError", (ValueError, RuntimeError), "Shapes that cannot meet in an op (broadcasting, matmul, reshape, cat...)."),
    ("DTypeError", TypeError, "A dtype an op does not accept, or an unknown dtype name."),
    ("DeviceError", ValueError, "Tensors on devices that cannot meet in one op."),
    ("IndexOutOfRange", IndexError, "An index or dim outside a tensor's bounds."),
    ("ArgumentError", ValueError, "A value an op does not accept (stride 0, unknown mode, ...)."),
    ("ArgumentTypeError", TypeError, "An argument of the wrong Python type (a string where a tensor belongs, ...)."),
    ("RecordError", ValueError, "A weights file that is corrupt, truncated, hostile or does not fit the module."),
    ("OutOfMemoryError", MemoryError, "A device (or its memory pool's cap) has no room for a new buffer."),
    ("DeployError", ValueError, "A model, record or board that the deployment path cannot serve, named."),
)


def _build():
    class EmberError(Exception):
        """Base of every error ember raises on purpose."""

    classes = {}
    try:
        for name, builtin, doc in _KINDS:
            bases = builtin if type(builtin) is tuple else (builtin,)
            classes[name] = type(name, (EmberError,) + bases, {"__doc__": doc})
        return EmberError, classes
    except TypeError:  # MicroPython: "multiple bases have instance lay-out conflict"
        for name, builtin, doc in _KINDS:
            classes[name] = type(name, (builtin[0] if type(builtin) is tuple else builtin,), {})
        return tuple(classes[name] for name, _, _ in _KINDS), classes


EmberError, _classes = _build()
ShapeError = _classes["ShapeError"]
DTypeError = _classes["DTypeError"]
DeviceError = _classes["DeviceError"]
IndexOutOfRange = _classes["IndexOutOfRange"]
ArgumentError = _classes["ArgumentError"]
ArgumentTypeError = _classes["ArgumentTypeError"]
RecordError = _classes["RecordError"]
OutOfMemoryError = _classes["OutOfMemoryError"]
DeployError = _classes["DeployError"]


class checking:
    """``with checking():`` around a device read whose only use is to decide whether to raise (class
    indices in range). A captured step (``ember.accel.compile``) may contain such reads: it skips
    them on replay, where the device primitives' own index checks still raise."""

    depth = 0

    def __enter__(self):
        checking.depth += 1
        return self

    def __exit__(self, *exc):
        checking.depth -= 1
        return False
