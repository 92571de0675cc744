"""ember's dtype rules and integer semantics, written out independently of ember's own code.

The cases use these to state the result dtype they expect (the contract in docs/architecture.md,
section 3) and, through the ``np_*`` helpers, numpy references with ember's integer semantics:
two's-complement wrap, ``x // 0 == x % 0 == 0``, ``int ** negative`` truncating like C.
"""

KIND = {"bool": 0, "int8": 1, "int32": 1, "int64": 1,
        "float16": 2, "bfloat16": 2, "float32": 2, "float64": 2}
RANK = {"bool": 0, "int8": 1, "int32": 2, "int64": 3,
        "float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}
SHORT = {"bool": "b", "int8": "i8", "int32": "i32", "int64": "i64",
         "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}
LONG = {}
for _long, _short in SHORT.items():
    LONG[_short] = _long

ARITH = ("add", "sub", "mul", "floordiv", "mod", "pow")
KEEP_BOOL = ("maximum", "minimum", "and", "or", "xor")


def promote(a, b):
    """Two tensors' common dtype (short names): higher kind wins, then the wider type."""
    la, lb = LONG[a], LONG[b]
    if KIND[la] != KIND[lb]:
        return a if KIND[la] > KIND[lb] else b
    if set((la, lb)) == set(("float16", "bfloat16")):
        return "f32"
    return a if RANK[la] >= RANK[lb] else b


def with_scalar(dtype, scalar):
    """A tensor of ``dtype`` meeting a Python scalar: the scalar lifts only the kind."""
    kind = 0 if type(scalar) is bool else 1 if type(scalar) is int else 2
    if kind <= KIND[LONG[dtype]]:
        return dtype
    return "i64" if kind == 1 else "f32"


def result(op, dtype):
    """The dtype ``op`` gives for operands already promoted to ``dtype``."""
    if op == "div":
        return dtype if KIND[LONG[dtype]] == 2 else "f32"
    if dtype == "b" and op in ARITH:
        return "i64"
    return dtype


def is_int(dtype):
    return KIND[LONG[dtype]] == 1


def is_float(dtype):
    return KIND[LONG[dtype]] == 2


# -- integer semantics for numpy references, via Python ints -------------------------------------

def wrap64(v):
    return ((v + (1 << 63)) % (1 << 64)) - (1 << 63)


def _floordiv(a, b):
    return a // b if b else 0


def _mod(a, b):
    return a % b if b else 0


def _pow(a, b):
    if b < 0:
        if a == 1:
            return 1
        if a == -1:
            return -1 if b % 2 else 1
        return 0
    return pow(a, b, 1 << 64)


INT_FUNCS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": _floordiv,
    "mod": _mod,
    "pow": _pow,
    "maximum": max,
    "minimum": min,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}


def np_int_binary(np, op, a, b):
    """``a op b`` elementwise on Python ints, wrapped to 64 bits (the case's dtype wraps further)."""
    fn = INT_FUNCS[op]
    a = np.asarray(a).astype(np.int64).astype(object)
    b = np.asarray(b).astype(np.int64).astype(object)
    out = np.frompyfunc(lambda x, y: wrap64(fn(int(x), int(y))), 2, 1)(a, b)
    return np.asarray(out).astype(np.int64)


def np_float_binary(np, op, a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op == "pow":
        return np.power(a, b)
    if op == "floordiv":
        return np.floor_divide(a, b)
    if op == "mod":
        return np.remainder(a, b)
    if op == "maximum":
        return np.maximum(a, b)
    if op == "minimum":
        return np.minimum(a, b)
    raise ValueError(op)


def np_binary(np, op, a, b, out):
    """numpy's ``a op b`` under ember's semantics for result dtype ``out`` (a short name)."""
    if out == "b":
        a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
        return {"maximum": np.logical_or, "minimum": np.logical_and, "and": np.logical_and,
                "or": np.logical_or, "xor": np.logical_xor}[op](a, b)
    if is_float(out):
        return np_float_binary(np, op, a, b)
    return np_int_binary(np, op, a, b)


def np_erf(np, x):
    import math
    x = np.asarray(x, dtype=np.float64)
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x.copy()
