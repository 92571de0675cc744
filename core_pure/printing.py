"""``repr`` of a tensor: its values (abbreviated past 1000 elements), shape, dtype and device."""

from .tensor import _nest

_EDGE = 3
_LIMIT = 1000


def _fmt_floats(values):
    finite = [abs(v) for v in values if v == v and v not in (float("inf"), float("-inf"))]
    big = finite and max(finite) >= 1e8
    small = finite and min([v for v in finite if v] or [1.0]) < 1e-4
    pattern = "%.4e" if big or small else "%.4f"

    def fmt(v):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return pattern % v
    return fmt


def _render(nested, shape, fmt, indent, abbreviate):
    if not shape:
        return fmt(nested)
    n = shape[0]
    idx = list(range(n))
    if abbreviate and n > 2 * _EDGE:
        idx = list(range(_EDGE)) + [None] + list(range(n - _EDGE, n))
    if len(shape) == 1:
        return "[" + ", ".join("..." if i is None else fmt(nested[i]) for i in idx) + "]"
    sep = ",\n" + " " * (indent + 1)
    if len(shape) > 2:
        sep = ",\n\n" + " " * (indent + 1)
    parts = ["..." if i is None else _render(nested[i], shape[1:], fmt, indent + 1, abbreviate) for i in idx]
    return "[" + sep.join(parts) + "]"


def tensor_repr(t):
    values = t.device.to_list(t._data)
    kind = t.dtype.kind
    if kind == "f":
        fmt = _fmt_floats(values)
    elif kind == "b":
        fmt = lambda v: "True" if v else "False"  # noqa: E731
    else:
        fmt = str
    nested = _nest(values, t.shape)
    body = _render(nested, t.shape, fmt, len("tensor("), len(values) > _LIMIT)
    return "tensor(%s, shape=%s, dtype=%s, device=%r)" % (body, t.shape, t.dtype.name, t.device)
