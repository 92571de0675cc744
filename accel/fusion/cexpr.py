"""One C expression per IR node, with the pure Cpu's semantics (see cprelude.py for the helpers).

``node_expr(nodes, i, name, fast)`` returns ``(expr, flag)``: the C expression of node ``i`` (its
operands named by ``name(j)``) and, in fast mode, a C condition that is true where the fast
approximation may not hold (then the caller recomputes the block in exact mode), or None. Exact
mode differs only in where the guard is taken: float32 exp and erf give the same values in both
(an element's value never depends on its neighbours or on the loop computing it).
Float32 ``+ - * /``, sqrt, compares, rounding and casts are exact in float (each is correctly
rounded, so Python's double-then-round gives the same bits); what Python computes in double (pow,
floordiv, mod, libm functions) is computed in double and rounded once.
"""
import math
import struct

CTYPE = {"float32": "float", "float64": "double", "int8": "int8_t", "int32": "int32_t",
         "int64": "int64_t", "bool": "uint8_t"}
UTYPE = {"int8": "uint8_t", "int32": "uint32_t", "int64": "uint64_t"}
FAST = ("exp", "erf")  # float32 ops with a vectorizable approximation (cprelude.fk_expf, fk_erff)
_LIBM = ("exp", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "erf", "expm1",
         "log1p")
_DOUBLE_HELPERS = {"log": "fk_log", "rsqrt": "fk_rsqrt", "sigmoid": "fk_sigmoid"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_BITS = {"and": "&", "or": "|", "xor": "^"}


def f32_exact(v):
    """True when the float ``v`` is a float32 value (consts must be: the frontend rounds scalars)."""
    if v != v or v in (float("inf"), float("-inf")):
        return True
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0] == v
    except OverflowError:
        return False


def literal(value, dtype):
    """A C literal of ``value`` as ``dtype``."""
    t = CTYPE[dtype]
    if dtype in ("float32", "float64"):
        v = float(value)
        if v != v:
            return "((%s)NAN)" % t
        if math.isinf(v):
            return "((%s)%sINFINITY)" % (t, "-" if v < 0 else "")
        return "((%s)%s%s)" % (t, v.hex(), "f" if dtype == "float32" else "")
    if dtype == "bool":
        return "((uint8_t)%d)" % (1 if value else 0)
    v = int(value)
    if v == -(1 << 63):
        return "((int64_t)(-9223372036854775807LL - 1))"
    return "((%s)%dLL)" % (t, v)


def _float_unary(op, x, dtype, fast):
    f = dtype == "float32"
    t = CTYPE[dtype]
    if op == "neg":
        return "(-%s)" % x, None
    if op == "abs":
        return "%s(%s)" % ("fabsf" if f else "fabs", x), None
    if op == "sign":
        return "(%s != %s ? %s : (%s)((%s > 0) - (%s < 0)))" % (x, x, x, t, x, x), None
    if op == "sqrt":
        return "%s(%s)" % ("sqrtf" if f else "sqrt", x), None
    if op in ("floor", "ceil", "trunc"):
        return "%s%s(%s)" % (op, "f" if f else "", x), None
    if op == "round":
        return "%s(%s)" % ("nearbyintf" if f else "nearbyint", x), None
    if op == "reciprocal":
        return "((%s)1 / %s)" % (t, x), None
    if op == "isnan":
        return "((uint8_t)(%s != %s))" % (x, x), None
    if op == "isinf":
        return "((uint8_t)(%s == (%s)INFINITY || %s == -(%s)INFINITY))" % (x, t, x, t), None
    if op == "logical_not":
        return "((uint8_t)(%s == 0))" % x, None
    # float32 exp and erf are approximations (cprelude.py), the same value in every loop: the fast
    # body's exp has a guard (its block is then recomputed by the other body), the other body's
    # takes libm only where the guard fails, element by element
    if f and op == "exp":
        return ("fk_expf(%s)" % x, "!(%s <= 88.0f)" % x) if fast else ("fk_expf_each(%s)" % x, None)
    if f and op == "erf":
        return "fk_erff(%s)" % x, None  # right for every input, nan and inf included
    fn = _DOUBLE_HELPERS.get(op) or (op if op in _LIBM else None)
    if fn is None:
        raise ValueError("no C form for unary %s on %s" % (op, dtype))
    return "((%s)%s((double)%s))" % (t, fn, x), None


def _int_unary(op, x, dtype):
    if dtype == "bool":
        if op in ("logical_not", "bitwise_not"):
            return "((uint8_t)!%s)" % x
        if op in ("isnan", "isinf"):
            return "((uint8_t)0)"
        return x  # floor, ceil, round, trunc
    t, u = CTYPE[dtype], UTYPE[dtype]
    return {
        "neg": "((%s)(%s)(0 - (%s)%s))" % (t, u, u, x),
        "abs": "(%s < 0 ? (%s)(%s)(0 - (%s)%s) : %s)" % (x, t, u, u, x, x),
        "sign": "((%s)((%s > 0) - (%s < 0)))" % (t, x, x),
        "bitwise_not": "((%s)~%s)" % (t, x),
        "isnan": "((uint8_t)0)", "isinf": "((uint8_t)0)",
        "logical_not": "((uint8_t)(%s == 0))" % x,
    }.get(op, x)  # floor, ceil, round, trunc: integers are their own rounding


def _float_binary(op, x, y, dtype):
    t = CTYPE[dtype]
    if op in ("add", "sub", "mul", "div"):
        return "(%s %s %s)" % (x, {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op], y)
    if op == "pow":
        return "((%s)fk_pow((double)%s, (double)%s))" % (t, x, y)
    if op == "floordiv":
        return "((%s)fk_floordiv((double)%s, (double)%s))" % (t, x, y)
    if op == "mod":
        return "((%s)fk_mod((double)%s, (double)%s))" % (t, x, y)
    if op == "atan2":
        return "((%s)atan2((double)%s, (double)%s))" % (t, x, y)
    if op == "maximum":
        return "FK_MAXIMUM(%s, %s)" % (x, y)
    if op == "minimum":
        return "FK_MINIMUM(%s, %s)" % (x, y)
    raise ValueError("no C form for %s on %s" % (op, dtype))


def _int_binary(op, x, y, dtype):
    if dtype == "bool":
        sym = {"maximum": "|", "minimum": "&"}.get(op) or _BITS[op]
        return "((uint8_t)(%s %s %s))" % (x, sym, y)
    t, u = CTYPE[dtype], UTYPE[dtype]
    if op in ("add", "sub", "mul"):
        return "((%s)(%s)((%s)%s %s (%s)%s))" % (t, u, u, x, {"add": "+", "sub": "-", "mul": "*"}[op], u, y)
    if op in _BITS:
        return "((%s)(%s %s %s))" % (t, x, _BITS[op], y)
    if op == "maximum":
        return "(%s >= %s ? %s : %s)" % (x, y, x, y)
    if op == "minimum":
        return "(%s <= %s ? %s : %s)" % (x, y, x, y)
    helper = {"floordiv": "fk_ifloordiv", "mod": "fk_imod", "pow": "fk_ipow", "lshift": "fk_lshift"}.get(op)
    if helper is not None:
        return "((%s)(%s)(uint64_t)%s(%s, %s))" % (t, u, helper, x, y)
    if op == "rshift":
        return "((%s)fk_rshift(%s, %s))" % (t, x, y)
    raise ValueError("no C form for %s on %s" % (op, dtype))


def _cast(x, src, dst):
    if src == dst:
        return x
    t = CTYPE[dst]
    if dst == "bool":
        return "((uint8_t)(%s != 0))" % x
    if dst in ("float32", "float64"):
        if src in ("int8", "int32", "int64", "bool") and dst == "float32":
            return "((float)(double)%s)" % x  # as CPython: int to double, then to float
        return "((%s)%s)" % (t, x)
    if src in ("float32", "float64"):
        return "((%s)(%s)(uint64_t)fk_f2i((double)%s))" % (t, UTYPE[dst], x)
    if src == "bool":
        return "((%s)%s)" % (t, x)
    return "((%s)(%s)(uint64_t)%s)" % (t, UTYPE[dst], x)


def _exact_reciprocal(node, dtype):
    """1 / c where ``node`` is a float const c, a power of two whose reciprocal ``dtype`` holds
    exactly; else None."""
    if node[0] != "const" or node[1] != dtype:
        return None
    c = float(node[2])
    if c != c or c in (0.0, float("inf"), float("-inf")) or math.frexp(c)[0] not in (0.5, -0.5):
        return None
    try:
        inv = 1.0 / c
    except (OverflowError, ZeroDivisionError):
        return None
    if math.isinf(inv) or (dtype == "float32" and not f32_exact(inv)):
        return None
    if dtype == "float32" and abs(inv) >= 2.0 ** 128:
        return None
    return inv


def _scaled_erf_arg(nodes, j, name):
    """``erf(x / c)`` for a float32 const c: the C of ``x * (1/c)`` (a multiply where the division
    costs the GELU loop a tenth of its time), else None. The product is within 1.2e-7 of x / c
    relative, and erf's relative change is at most its argument's (x erf'(x) <= erf(x)), so the
    fast erf stays inside the tolerance."""
    node = nodes[j]
    if node[0] != "binary" or node[2] != "div" or node[1] != "float32":
        return None
    c = nodes[node[4]]
    if c[0] != "const" or c[1] != "float32":
        return None
    c = float(c[2])
    if c != c or c in (0.0, float("inf"), float("-inf")):
        return None
    inv = struct.unpack("<f", struct.pack("<f", 1.0 / c))[0] if abs(1.0 / c) < 3.4e38 else 0.0
    if not 2.0 ** -126 <= abs(inv) < float("inf"):
        return None
    return "(%s * %s)" % (name(node[3]), literal(inv, "float32"))


def node_expr(nodes, i, name, fast, load, row, acc, computed=None):
    """(C expression, fast-path guard or None) of ``nodes[i]``; ``load(k)``, ``row(j)`` and
    ``acc`` give the C of the leaves; ``computed(j)`` says whether node j's operands are at hand
    (a node read back from a row scratch has none), which lets a fast erf read them."""
    node = nodes[i]
    kind, dtype = node[0], node[1]
    if kind == "unary" and fast and node[2] == "erf" and computed is not None and computed(node[3]):
        arg = _scaled_erf_arg(nodes, node[3], name)
        if arg is not None:
            return "fk_erff(%s)" % arg, None
    if kind == "load":
        return load(node[2]), None
    if kind == "const":
        return literal(node[2], dtype), None
    if kind == "row":
        return row(node[2]), None
    if kind == "acc":
        return acc, None
    if kind == "unary":
        src = nodes[node[3]][1]
        if src in ("float32", "float64"):
            return _float_unary(node[2], name(node[3]), src, fast)
        return _int_unary(node[2], name(node[3]), src), None
    if kind == "binary":
        op, x, y = node[2], name(node[3]), name(node[4])
        src = nodes[node[3]][1]
        if op in _COMPARE:
            return "((uint8_t)(%s %s %s))" % (x, _COMPARE[op], y), None
        if src in ("float32", "float64"):
            inv = _exact_reciprocal(nodes[node[4]], src) if op == "div" else None
            if inv is not None:
                # x / 2^k and x * 2^-k are the same correctly rounded value: a multiply vectorizes
                # far cheaper than a division
                return "(%s * %s)" % (x, literal(inv, src)), None
            return _float_binary(op, x, y, src), None
        return _int_binary(op, x, y, src), None
    if kind == "where":
        return "(%s ? %s : %s)" % (name(node[2]), name(node[3]), name(node[4])), None
    return _cast(name(node[2]), nodes[node[2]][1], dtype), None


def supported(nodes):
    """Why the C generator cannot compile these nodes (None when it can)."""
    for i, node in enumerate(nodes):
        if node[0] == "const" and node[1] == "float32" and not f32_exact(float(node[2])):
            return "node %d: float32 const %r is not a float32 value" % (i, node[2])
        try:
            node_expr(nodes, i, lambda j: "v%d" % j, True, lambda k: "x", lambda j: "r", "a")
        except (ValueError, KeyError) as e:
            return "node %d: %s" % (i, e)
    return None
