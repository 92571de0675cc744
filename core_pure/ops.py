"""The op table: every primitive and op name, what each accepts and what dtype it gives.

One place says it, and everything else reads it: ``ember.backend`` exports the name tuples of the
contract (``UNARY_OPS``, ``BINARY_OPS``...), the frontend reads an op's trait to choose the dtype it
runs in, backends build their kernel tables from the names, and decorators call ``infer`` for the
shape and dtype of a primitive's result instead of re-deriving them. Adding an op name is one line
here plus its kernels.

Traits of a unary op (after the frontend's casts, a primitive sees only the dtypes its trait allows):
``same`` keeps the dtype (ints and floats); ``float`` is float only (the frontend casts ints to the
default float); ``rounding`` is float only and leaves ints unchanged (the frontend skips the call);
``integer`` takes bool and ints only; ``to_bool`` gives bool.

Traits of a binary op: ``arith`` keeps the dtype (two bools count as int64); ``to_float`` gives a
float (ints compute in the default float); ``extreme`` keeps the dtype, bool included; ``logical``
is logical on bool and bitwise on ints (floats are an error); ``shift`` takes ints (bools shift as
int64); ``compare`` gives bool. ``RING_OPS`` are exact modulo 2^bits, so an integer scalar may be
wrapped into the dtype before them.

Kept to plain tuples and dicts: a board loads this module with the core.
"""
from .shapes import conv_out_size

UNARY = (
    ("neg", "same"), ("abs", "same"), ("sign", "same"),
    ("exp", "float"), ("log", "float"), ("sqrt", "float"), ("rsqrt", "float"), ("sin", "float"),
    ("cos", "float"), ("tan", "float"), ("asin", "float"), ("acos", "float"), ("atan", "float"),
    ("sinh", "float"), ("cosh", "float"), ("tanh", "float"), ("erf", "float"), ("sigmoid", "float"),
    ("expm1", "float"), ("log1p", "float"),
    ("floor", "rounding"), ("ceil", "rounding"), ("round", "rounding"), ("trunc", "rounding"),
    ("reciprocal", "float"),
    ("bitwise_not", "integer"),
    ("isnan", "to_bool"), ("isinf", "to_bool"), ("logical_not", "to_bool"),
)
BINARY = (
    ("add", "arith"), ("sub", "arith"), ("mul", "arith"), ("div", "to_float"), ("pow", "arith"),
    ("maximum", "extreme"), ("minimum", "extreme"), ("floordiv", "arith"), ("mod", "arith"),
    ("atan2", "to_float"),
    ("eq", "compare"), ("ne", "compare"), ("lt", "compare"), ("le", "compare"), ("gt", "compare"),
    ("ge", "compare"),
    ("and", "logical"), ("or", "logical"), ("xor", "logical"),
    ("lshift", "shift"), ("rshift", "shift"),
)
UNARY_TRAIT = dict(UNARY)
BINARY_TRAIT = dict(BINARY)


def named(table, *traits):
    """The op names of ``table`` (``UNARY`` or ``BINARY``) whose trait is one of ``traits``, in order."""
    return tuple(name for name, trait in table if trait in traits)


UNARY_OPS = named(UNARY, "same", "float", "rounding", "integer", "to_bool")
BINARY_OPS = named(BINARY, "arith", "to_float", "extreme", "compare", "logical", "shift")
FLOAT_UNARY = named(UNARY, "float", "rounding")
ROUNDING = named(UNARY, "rounding")
TO_BOOL_UNARY = named(UNARY, "to_bool")
COMPARISONS = named(BINARY, "compare")
LOGICAL = named(BINARY, "logical")
SHIFTS = named(BINARY, "shift")
RING_OPS = ("add", "sub", "mul", "and", "or", "xor")
REDUCE_OPS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")
SCAN_OPS = ("cumsum", "cumprod", "cummax", "cummin", "cumargmax", "cumargmin")
POOL_OPS = ("max", "avg")
SCATTER_MODES = ("set", "add")

PRIMITIVES = (
    "from_list", "from_bytes", "to_list", "to_bytes", "full",
    "reshape", "permute", "expand", "slice", "slice_assign", "cat",
    "unary", "binary", "where", "cast",
    "reduce", "scan", "sort", "matmul", "conv", "pool", "gather", "scatter",
)
# primitives with a default on ``Backend`` (host work through the ones above); a backend may do better
OPTIONAL_PRIMITIVES = ("random",)

_SCALARS = (bool, int, float)


def _bool():
    from .dtypes import bool_
    return bool_


def _int64():
    from .dtypes import int64
    return int64


def _spatial(x, kernel, stride, padding, dilation):
    return tuple(conv_out_size(n, k, s, p, d) for n, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))


def _binary(op, a, b):
    x = b if type(a) in _SCALARS else a
    return x.shape, _bool() if BINARY_TRAIT[op] == "compare" else x.dtype


def _reduce(op, a, dim):
    dtype = _int64() if op == "argmax" or op == "argmin" else _bool() if op == "any" or op == "all" else a.dtype
    return a.shape[:dim] + (1,) + a.shape[dim + 1:], dtype


def _cat(arrays, dim):
    first = arrays[0]
    size = 0
    for x in arrays:
        size += x.shape[dim]
    return first.shape[:dim] + (size,) + first.shape[dim + 1:], first.dtype


_INFER = {
    "from_list": lambda flat, shape, dtype: (tuple(shape), dtype),
    "from_bytes": lambda buf, shape, dtype: (tuple(shape), dtype),
    "full": lambda shape, value, dtype: (tuple(shape), dtype),
    "to_list": lambda a: None,
    "to_bytes": lambda a: None,
    "reshape": lambda a, shape: (tuple(shape), a.dtype),
    "permute": lambda a, dims: (tuple(a.shape[d] for d in dims), a.dtype),
    "expand": lambda a, shape: (tuple(shape), a.dtype),
    "slice": lambda a, ranges: (tuple(len(range(*r)) for r in ranges), a.dtype),
    "slice_assign": lambda a, ranges, value: (a.shape, a.dtype),
    "cat": _cat,
    "unary": lambda op, a: (a.shape, _bool() if UNARY_TRAIT[op] == "to_bool" else a.dtype),
    "binary": _binary,
    "where": lambda cond, a, b: (a.shape, a.dtype),
    "cast": lambda a, dtype: (a.shape, dtype),
    "reduce": _reduce,
    "scan": lambda op, a, dim: (a.shape, _int64() if op.startswith("cumarg") else a.dtype),
    "sort": lambda a, dim, descending: (a.shape, a.dtype),
    "matmul": lambda a, b: (a.shape[:-1] + (b.shape[-1],), a.dtype),
    "conv": lambda x, w, stride, padding, dilation, groups:
        ((x.shape[0], w.shape[0]) + _spatial(x, w.shape[2:], stride, padding, dilation), x.dtype),
    "pool": lambda op, x, kernel, stride, padding, dilation:
        (x.shape[:2] + _spatial(x, kernel, stride, padding, dilation), x.dtype),
    "gather": lambda x, dim, index: (index.shape, x.dtype),
    "scatter": lambda x, dim, index, src, mode: (x.shape, x.dtype),
    "random": lambda kind, shape, dtype, generator, params: (tuple(shape), dtype),
}


def infer(primitive, *args):
    """``(shape, dtype)`` of what ``primitive`` returns for ``args`` (as the primitive takes them).

    An array argument is anything with ``shape`` and ``dtype`` (a decorator's own arrays are), a
    Python scalar stays one. ``sort`` gives its values' (shape, dtype); its indices are int64 of the
    same shape. ``to_list`` and ``to_bytes`` return host values: None.

    >>> infer("reduce", x, 1)          # x: shape (2, 3), float32
    ((2, 1), float32)
    """
    rule = _INFER.get(primitive)
    if rule is None:
        from .errors import ArgumentError
        raise ArgumentError("infer: expected one of the primitives %s, found %r" % (PRIMITIVES, primitive))
    return rule(*args)
