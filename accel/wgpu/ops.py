"""What each elementwise op computes on the GPU, per dtype: the compute type, the WGSL expression,
the library functions it calls and the result dtype.

Compute types follow the Cpu backend's rounding: ``+ - *`` (and neg, abs, comparisons, max/min,
floor...) run in the dtype's own precision, where IEEE gives the correctly rounded result (float16
and bfloat16 values compute in f32, which is exact for these). Every other float op runs in f64 and
rounds once to the dtype, as the Cpu backend computes in double and rounds. Integers compute in
i32 (int8, uint8, int32) or i64 and wrap; int8 and uint8 results wrap to 8 bits when stored.
"""
from ember import dtypes
from ember.ops import ROUNDING

FLOAT_FUNCS = {
    "exp": "m_exp", "log": "m_log", "sin": "m_sin", "cos": "m_cos", "tan": "m_tan", "asin": "m_asin",
    "acos": "m_acos", "atan": "m_atan", "sinh": "m_sinh", "cosh": "m_cosh", "tanh": "m_tanh",
    "erf": "m_erf", "sigmoid": "m_sigmoid", "expm1": "m_expm1", "log1p": "m_log1p", "sqrt": "m_sqrt",
    "rsqrt": "m_rsqrt",
}
_FUNC_LIB = {"m_sin": "m_trig", "m_cos": "m_trig", "m_tan": "m_trig", "m_acos": "m_asin",
             "m_sinh": "m_hyper", "m_cosh": "m_hyper", "m_tanh": "m_hyper", "m_rsqrt": "m_sqrt",
             "m_floordiv": "m_fmod", "m_mod": "m_fmod", "m_atan2": "m_atan"}
_ROUNDING = ROUNDING
_COMPARE = {"eq": "(%s == %s)", "ne": "!(%s == %s)", "lt": "(%s < %s)", "le": "(%s <= %s)",
            "gt": "(%s > %s)", "ge": "(%s >= %s)"}


class Recipe:
    """``ct``: compute type of the operands; ``fn(*names)``: the WGSL expression; ``libs``: library
    entries; ``out``: result dtype; ``is_bool_expr``: the expression is a WGSL bool."""

    __slots__ = ("ct", "fn", "libs", "out", "is_bool_expr")

    def __init__(self, ct, fn, libs, out, is_bool_expr=False):
        self.ct = ct
        self.fn = fn
        self.libs = tuple(libs)
        self.out = out
        self.is_bool_expr = is_bool_expr


def int_ct(dtype, has_i64):
    return "i64" if dtype is dtypes.int64 and has_i64 else "i32"


def float_cts(dtype, has_f64):
    """(native, high) compute types: the dtype's own precision, and the one for rounded-once ops."""
    native = "f64" if dtype is dtypes.float64 else "f32"
    return native, ("f64" if has_f64 else "f32")


def _lib(fn):
    return _FUNC_LIB.get(fn, fn)


def _bits(ct):
    return "64" if ct == "f64" else "32"


def _native_func(op):
    """WGSL's own single-precision function, used only on adapters without f64."""
    return {"rsqrt": "inverseSqrt", "sigmoid": None, "erf": None, "expm1": None, "log1p": None}.get(op, op)


def unary_recipe(op, dtype, has_f64, has_i64):
    kind = dtype.kind
    if op in ("isnan", "isinf"):
        ct = "f64" if dtype is dtypes.float64 else "f32"
        b = _bits(ct)
        return Recipe(ct, lambda a: "%s%s(%s)" % (op, b, a), ["bits" + b], dtypes.bool_, True)
    if op == "logical_not":
        return Recipe("u32", lambda a: "(1u - %s)" % a, [], dtypes.bool_)
    if kind == "b":  # bitwise_not of bool
        return Recipe("u32", lambda a: "(1u - %s)" % a, [], dtypes.bool_)
    if kind == "i":
        ct = int_ct(dtype, has_i64)
        if op == "neg":
            return Recipe(ct, lambda a: "(-%s)" % a, [], dtype)
        if op == "abs":
            return Recipe(ct, lambda a: "abs(%s)" % a, [], dtype)
        if op == "sign":
            return Recipe(ct, lambda a: "isign_%s(%s)" % (ct, a), ["isign_" + ct], dtype)
        if op == "bitwise_not":
            return Recipe(ct, lambda a: "(~%s)" % a, [], dtype)
        raise ValueError("unary: op %r is not defined on %s" % (op, dtype.name))
    native, high = float_cts(dtype, has_f64)
    if op == "neg":
        return Recipe(native, lambda a: "(-%s)" % a, [], dtype)
    if op == "abs":
        return Recipe(native, lambda a: "abs(%s)" % a, [], dtype)
    if op == "sign":
        return Recipe(native, lambda a: "fsign_%s(%s)" % (native, a), ["fsign_" + native], dtype)
    if op == "round":  # not WGSL's round(): see wgsl_lib's rint
        return Recipe(native, lambda a: "zsign_%s(rint_%s(%s), %s)" % (native, native, a, a),
                      ["zsign_" + native, "rint_" + native], dtype)
    if op in _ROUNDING:
        return Recipe(native, lambda a: "zsign_%s(%s(%s), %s)" % (native, op, a, a), ["zsign_" + native], dtype)
    if op == "reciprocal":
        one = "1.0lf" if high == "f64" else "1.0"
        return Recipe(high, lambda a: "(%s / %s)" % (one, a), [], dtype)
    fn = FLOAT_FUNCS.get(op)
    if fn is None:
        raise ValueError("unary: unknown op %r" % (op,))
    if high == "f64":
        return Recipe("f64", lambda a: "%s(%s)" % (fn, a), [_lib(fn)], dtype)
    native_fn = _native_func(op)
    if native_fn is None:
        raise ValueError("unary: %s needs shader-f64 on this adapter" % op)
    return Recipe("f32", lambda a: "%s(%s)" % (native_fn, a), [], dtype)


def binary_recipe(op, dtype, has_f64, has_i64):
    kind = dtype.kind
    cmp = _COMPARE.get(op)
    if kind == "b":
        if cmp is not None:
            return Recipe("u32", lambda a, b: cmp % (a, b), [], dtypes.bool_, True)
        sym = {"and": "&", "or": "|", "xor": "^", "maximum": "|", "minimum": "&"}[op]
        return Recipe("u32", lambda a, b: "(%s %s %s)" % (a, sym, b), [], dtype)
    if kind == "i":
        ct = int_ct(dtype, has_i64)
        if cmp is not None:
            return Recipe(ct, lambda a, b: cmp % (a, b), [], dtypes.bool_, True)
        sym = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^"}.get(op)
        if sym is not None:
            return Recipe(ct, lambda a, b: "(%s %s %s)" % (a, sym, b), [], dtype)
        if op in ("maximum", "minimum"):
            fn = "max" if op == "maximum" else "min"
            return Recipe(ct, lambda a, b: "%s(%s, %s)" % (fn, a, b), [], dtype)
        if op in ("floordiv", "mod", "pow"):
            name = {"floordiv": "ifloordiv", "mod": "imod", "pow": "ipow"}[op] + "_" + ct
            return Recipe(ct, lambda a, b: "%s(%s, %s)" % (name, a, b), [name], dtype)
        if op in ("lshift", "rshift"):
            name = ("ishl_" if op == "lshift" else "ishr_") + ct
            width = "%s(%d)" % (ct, dtype.bits)
            return Recipe(ct, lambda a, b: "%s(%s, %s, %s)" % (name, a, b, width), [name], dtype)
        raise ValueError("binary: op %r is not defined on %s" % (op, dtype.name))
    native, high = float_cts(dtype, has_f64)
    if cmp is not None:
        return Recipe(native, lambda a, b: cmp % (a, b), [], dtypes.bool_, True)
    sym = {"add": "+", "sub": "-", "mul": "*"}.get(op)
    if sym is not None:
        return Recipe(native, lambda a, b: "(%s %s %s)" % (a, sym, b), [], dtype)
    if op in ("maximum", "minimum"):
        fn = ("fmax_" if op == "maximum" else "fmin_") + native
        return Recipe(native, lambda a, b: "%s(%s, %s)" % (fn, a, b), ["fmax_" + native], dtype)
    if op == "div":
        return Recipe(high, lambda a, b: "(%s / %s)" % (a, b), [], dtype)
    fn = {"pow": "m_pow", "floordiv": "m_floordiv", "mod": "m_mod", "atan2": "m_atan2"}.get(op)
    if fn is None:
        raise ValueError("binary: op %r is not defined on %s" % (op, dtype.name))
    if high != "f64":
        raise ValueError("binary: %s on %s needs shader-f64 on this adapter" % (op, dtype.name))
    return Recipe("f64", lambda a, b: "%s(%s, %s)" % (fn, a, b), [_lib(fn)], dtype)


# -- loading and storing ---------------------------------------------------------------------------

def load(st, ct):
    """Template turning a stored value of WGSL type ``st`` into compute type ``ct``."""
    if st == ct:
        return "{}"
    if st == "f16" and ct == "f64":
        return "f64(f32({}))"
    return ct + "({})"


def store(ct, dtype, st, is_bool_expr=False):
    """(template, libs) converting a ``ct`` result to ``dtype`` stored as WGSL type ``st``."""
    if dtype is dtypes.bool_:
        if is_bool_expr:
            return "select(0u, 1u, {})", ()
        return ("{}" if ct == "u32" else "select(0u, 1u, {} != %s(0))" % ct), ()
    if dtype is dtypes.float16:
        if st == "f16":
            return ("f16({})" if ct == "f32" else "f16(f32({}))"), ()
        return ("rnd_f16({})" if ct == "f32" else "rnd_f16(f32({}))"), ("rnd_f16",)
    if dtype is dtypes.bfloat16:
        return ("rnd_bf16({})" if ct == "f32" else "rnd_bf16(to_f32({}))"), ("rnd_bf16", "to_f32")
    if dtype is dtypes.float32 and ct == "f64":
        return "to_f32({})", ("to_f32",)
    if dtype is dtypes.int8:
        return ("wrap8({})" if ct == "i32" else "wrap8(i32({}))"), ("wrap8",)
    if dtype is dtypes.uint8:
        return ("wrapu8({})" if ct == "i32" else "wrapu8(i32({}))"), ("wrapu8",)
    if ct == st:
        return "{}", ()
    return st + "({})", ()


def cast_expr(src, dst, st_src, st_dst, has_f64, has_i64):
    """(input binding type, compute type, expression on ``x0``, output binding type, store
    template, libs) of a cast.

    Casts between float32 storage (float32, bfloat16) and float64 move bits where a value may be a
    float32 subnormal: NVIDIA's driver flushes those to zero in any float32 instruction (seen on the
    H200, 2026-11-29), so they are read and written as u32 and converted by integer arithmetic.
    """
    if dst is dtypes.bool_:
        if src.kind == "f":  # from the bits: subnormals are true even where the driver flushes them
            if st_src == "f64":
                return "f64", "f64", "((bitcast<u64>(x0) << 1u) != 0lu)", "u32", "select(0u, 1u, {})", []
            if st_src == "f16":
                return "f16", "f32", "!(x0 == 0.0)", "u32", "select(0u, 1u, {})", []
            return "u32", "u32", "((x0 << 1u) != 0u)", "u32", "select(0u, 1u, {})", []
        return st_src, st_src, "(x0 != %s(0))" % st_src, "u32", "select(0u, 1u, {})", []
    if dst.kind == "f":
        if src.kind == "f" and has_f64:
            bits32 = st_src == "f32"
            if bits32 and dst is dtypes.float64:
                return "u32", "u32", "f32bits_to_f64(x0)", st_dst, "{}", ["f32bits"]
            if st_src == "f64" and dst is dtypes.float32:
                return "f64", "f64", "x0", "u32", "to_f32_bits({})", ["f32bits"]
            if dst is dtypes.bfloat16 and (bits32 or st_src == "f64"):
                expr = "x0" if bits32 else "to_f32_bits(x0)"
                return ("u32" if bits32 else "f64"), ("u32" if bits32 else "f64"), expr, "u32", "rnd_bf16_bits({})", ["f32bits"]
            if bits32 and st_dst == "f32" and dst is not dtypes.float16:  # float32 <-> bfloat16 values
                return "u32", "u32", "x0", "u32", "{}", []
        if src.kind == "f":
            ct = "f64" if st_src == "f64" else "f32"
        else:
            ct = "f64" if has_f64 else "f32"  # ints round to double first, as Python's float() does
        tpl, libs = store(ct, dst, st_dst)
        return st_src, ct, "x0", st_dst, tpl, list(libs)
    # to an integer type
    wide = "i64" if has_i64 else "i32"
    if src.kind == "f":
        if has_f64 and has_i64:
            ct = "f64"
            expr = "f2i64(x0)"
            libs = ["f2i64"]
        else:
            ct = "f32"
            expr = "i32(select(trunc(x0), 0.0, isnan32(x0) || isinf32(x0)))"
            libs = ["bits32"]
        res_ct = "i64" if has_f64 and has_i64 else "i32"
    else:
        ct = st_src if src is not dtypes.bool_ else "u32"
        expr = "%s(x0)" % wide if ct != wide else "x0"
        libs = []
        res_ct = wide
    tpl, more = store(res_ct, dst, st_dst)
    return st_src, ct, expr, st_dst, tpl, libs + list(more)
