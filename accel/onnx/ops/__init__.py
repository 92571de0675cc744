"""The ONNX operator table: one function per (op type, opset it arrived or changed in).

    @op("Softmax", since=13, attrs="axis")
    def softmax(n, x): ...

An op function takes the ``Node`` (its attributes through ``n.attr``) and the node's inputs as ember
tensors (None for an omitted optional input) and returns a tensor or a tuple of them. ``static``
names input slots whose values the op reads as numbers (a Reshape target, Slice bounds): an
initializer used only there is a constant, never a parameter. Importing this package fills the
table from the modules below, one family of ops each.
"""

TABLE = {}  # (domain, op_type) -> [(since, fn, attrs, static, check)], sorted by since


def op(op_type, since=1, attrs="", static=(), domain="", check=None):
    """Register the decorated function for ``op_type`` from opset ``since`` on."""
    def register(fn):
        rows = TABLE.setdefault((domain, op_type), [])
        rows.append((since, fn, frozenset(attrs.split()), tuple(static), check))
        rows.sort(key=lambda r: r[0])
        return fn
    return register


def lookup(domain, op_type, opset):
    """(fn, attrs, static, check) serving ``op_type`` at ``opset``, or None."""
    best = None
    for row in TABLE.get((domain, op_type), ()):
        if row[0] <= opset:
            best = row
    return None if best is None else best[1:]


def operator_names():
    return sorted(name for _, name in TABLE)


from . import elementwise, reduce, shape, nn, quant, control, misc, training, ml, vision, attention, signal, resize  # noqa: E402,F401,E501
