/* Elementwise kernels: strided copy, casts, unary and binary ops, where.
   Semantics follow ember's pure-Python Cpu backend exactly: float32 ops that Python computes in
   double (pow, exp, ...) are computed in double here too and rounded once; integers wrap. */
#include "k_common.h"

/* ---- strided copy ------------------------------------------------------------------------- */

#define COPY_ROW(NAME, T) \
    static void NAME(emb_i n, char **p, const emb_i *s, void *ctx) \
    { \
        const T *src = (const T *)p[0]; \
        T *dst = (T *)p[1]; \
        emb_i i, ss = s[0], ds = s[1]; \
        (void)ctx; \
        if (ss == 1 && ds == 1) { \
            for (i = 0; i < n; i++) dst[i] = src[i]; \
        } else if (ds == 1) { \
            for (i = 0; i < n; i++) dst[i] = src[i * ss]; \
        } else { \
            for (i = 0; i < n; i++) dst[i * ds] = src[i * ss]; \
        } \
    }
COPY_ROW(copy_row1, uint8_t)
COPY_ROW(copy_row4, uint32_t)
COPY_ROW(copy_row8, uint64_t)

void EMB_FN(copy_nd)(int elsize, int nd, const emb_i *shape, const void *src, const emb_i *sst,
                     void *dst, const emb_i *dst_st)
{
    emb_walk w;
    const emb_i *st[2];
    char *base[2];
    int es[2];
    st[0] = sst;
    st[1] = dst_st;
    if (!walk_init(&w, nd, shape, 2, st))
        return;
    base[0] = (char *)src;
    base[1] = (char *)dst;
    es[0] = es[1] = elsize;
    walk_run(&w, base, es, elsize == 1 ? copy_row1 : elsize == 4 ? copy_row4 : copy_row8, 0);
}

/* ---- casts ---------------------------------------------------------------------------------- */

/* float -> int64 as Python's int(v) followed by a two's-complement wrap; nan and inf give 0 */
static int64_t f2i(double v)
{
    double t;
    if (v != v || v == EMB_INF || v == -EMB_INF)
        return 0;
    t = trunc(v);
    if (t >= -9223372036854775808.0 && t < 9223372036854775808.0)
        return (int64_t)t;
    t = fmod(t, 18446744073709551616.0);
    if (t < 0)
        t += 18446744073709551616.0;
    return (int64_t)(uint64_t)t;
}

#define WRAP8(v) ((int8_t)(uint8_t)(uint64_t)(v))
#define WRAP32(v) ((int32_t)(uint32_t)(uint64_t)(v))

#define CAST_LOOP(TF, TT, EXPR) \
    { \
        const TF *s = (const TF *)src; \
        TT *d = (TT *)dst; \
        emb_i i; \
        for (i = 0; i < n; i++) { \
            TF v = s[i]; \
            d[i] = (TT)(EXPR); \
        } \
        return 0; \
    }

#define CAST_FROM_FLOAT(TF) \
    switch (to) { \
    case EMB_F32: CAST_LOOP(TF, float, (float)v) \
    case EMB_F64: CAST_LOOP(TF, double, (double)v) \
    case EMB_I8: CAST_LOOP(TF, int8_t, WRAP8(f2i((double)v))) \
    case EMB_I32: CAST_LOOP(TF, int32_t, WRAP32(f2i((double)v))) \
    case EMB_I64: CAST_LOOP(TF, int64_t, f2i((double)v)) \
    case EMB_U8: CAST_LOOP(TF, uint8_t, v != 0) \
    default: return -1; \
    }

#define CAST_FROM_INT(TF) \
    switch (to) { \
    case EMB_F32: CAST_LOOP(TF, float, (float)(double)v) \
    case EMB_F64: CAST_LOOP(TF, double, (double)v) \
    case EMB_I8: CAST_LOOP(TF, int8_t, WRAP8(v)) \
    case EMB_I32: CAST_LOOP(TF, int32_t, WRAP32(v)) \
    case EMB_I64: CAST_LOOP(TF, int64_t, v) \
    case EMB_U8: CAST_LOOP(TF, uint8_t, v != 0) \
    default: return -1; \
    }

int EMB_FN(cast)(int from, int to, emb_i n, const void *src, void *dst)
{
    switch (from) {
    case EMB_F32: CAST_FROM_FLOAT(float)
    case EMB_F64: CAST_FROM_FLOAT(double)
    case EMB_I8: CAST_FROM_INT(int8_t)
    case EMB_I32: CAST_FROM_INT(int32_t)
    case EMB_I64: CAST_FROM_INT(int64_t)
    case EMB_U8: CAST_FROM_INT(uint8_t)
    default: return -1;
    }
}

/* ---- scalar helpers with Python's semantics ---------------------------------------------------- */

/* Python's float a % b (the sign follows b); b == 0 gives nan */
static double py_mod(double a, double b)
{
    double m;
    if (b == 0.0)
        return EMB_NAN;
    m = fmod(a, b);
    if (m != 0.0) {
        if ((b < 0) != (m < 0))
            m += b;
    } else {
        m = copysign(0.0, b);
    }
    return m;
}

/* Python's float a // b (CPython's divmod algorithm); b == 0 gives a / b (inf or nan) */
static double py_floordiv(double a, double b)
{
    double mod, div, fd;
    if (b == 0.0)
        return a / b;
    mod = fmod(a, b);
    div = (a - mod) / b;
    if (mod != 0.0) {
        if ((b < 0) != (mod < 0))
            div -= 1.0;
    }
    if (div != 0.0) {
        fd = floor(div);
        if (div - fd > 0.5)
            fd += 1.0;
    } else {
        fd = copysign(0.0, a / b);
    }
    return fd;
}

static int64_t py_ifloordiv(int64_t a, int64_t b)
{
    int64_t q;
    if (b == 0)
        return 0;
    if (b == -1)
        return (int64_t)(0 - (uint64_t)a);
    q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t py_imod(int64_t a, int64_t b)
{
    int64_t r;
    if (b == 0 || b == -1)
        return 0;
    r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

/* a ** b wrapped to 64 bits; a negative exponent truncates like C: 0, except bases 1 and -1 */
static uint64_t py_ipow(int64_t a, int64_t b)
{
    uint64_t r = 1, x = (uint64_t)a;
    if (b < 0)
        return a == 1 ? 1 : a == -1 ? ((b & 1) ? (uint64_t)0 - 1 : 1) : 0;
    while (b) {
        if (b & 1)
            r *= x;
        x *= x;
        b >>= 1;
    }
    return r;
}

static uint64_t py_lshift(int64_t a, int64_t b)
{
    return (b >= 0 && b < 64) ? (uint64_t)a << b : 0;
}

static int64_t py_rshift(int64_t a, int64_t b)
{
    if (b >= 0 && b < 64)
        return a >> b; /* arithmetic shift on every compiler ember targets */
    return a < 0 ? -1 : 0;
}

static double py_sigmoid(double x)
{
    double e;
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    e = exp(x);
    return e / (1.0 + e);
}

static double py_rsqrt(double x)
{
    return 1.0 / sqrt(x);
}

/* first nan wins, then the larger (ties keep a) */
#define FMAXIMUM(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) >= (y) ? (x) : (y))
#define FMINIMUM(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) <= (y) ? (x) : (y))

/* ---- unary ----------------------------------------------------------------------------------- */

#define UN_LOOP(TI, TO, EXPR) \
    { \
        const TI *EMB_RESTRICT xs = (const TI *)x; \
        TO *EMB_RESTRICT os = (TO *)out; \
        emb_i i; \
        for (i = 0; i < n; i++) { \
            TI v = xs[i]; \
            os[i] = (TO)(EXPR); \
        } \
        return 0; \
    }

/* T is float or double; D computes the libm functions in double, as Python does */
#define UN_FLOAT(T, FLOOR, CEIL, TRUNC, RINT, FABS) \
    switch (op) { \
    case EMB_U_NEG: UN_LOOP(T, T, -v) \
    case EMB_U_ABS: UN_LOOP(T, T, FABS(v)) \
    case EMB_U_SIGN: UN_LOOP(T, T, v != v ? v : (T)((v > 0) - (v < 0))) \
    case EMB_U_EXP: UN_LOOP(T, T, exp((double)v)) \
    case EMB_U_LOG: UN_LOOP(T, T, log((double)v)) \
    case EMB_U_SQRT: UN_LOOP(T, T, sqrt((double)v)) \
    case EMB_U_RSQRT: UN_LOOP(T, T, py_rsqrt((double)v)) \
    case EMB_U_SIN: UN_LOOP(T, T, sin((double)v)) \
    case EMB_U_COS: UN_LOOP(T, T, cos((double)v)) \
    case EMB_U_TAN: UN_LOOP(T, T, tan((double)v)) \
    case EMB_U_ASIN: UN_LOOP(T, T, asin((double)v)) \
    case EMB_U_ACOS: UN_LOOP(T, T, acos((double)v)) \
    case EMB_U_ATAN: UN_LOOP(T, T, atan((double)v)) \
    case EMB_U_SINH: UN_LOOP(T, T, sinh((double)v)) \
    case EMB_U_COSH: UN_LOOP(T, T, cosh((double)v)) \
    case EMB_U_TANH: UN_LOOP(T, T, tanh((double)v)) \
    case EMB_U_ERF: UN_LOOP(T, T, erf((double)v)) \
    case EMB_U_SIGMOID: UN_LOOP(T, T, py_sigmoid((double)v)) \
    case EMB_U_EXPM1: UN_LOOP(T, T, expm1((double)v)) \
    case EMB_U_LOG1P: UN_LOOP(T, T, log1p((double)v)) \
    /* IEEE, as numpy and torch: ceil(-0.3) and trunc(-0.3) are -0.0; round is half to even */ \
    case EMB_U_FLOOR: UN_LOOP(T, T, FLOOR(v)) \
    case EMB_U_CEIL: UN_LOOP(T, T, CEIL(v)) \
    case EMB_U_ROUND: UN_LOOP(T, T, RINT(v)) \
    case EMB_U_TRUNC: UN_LOOP(T, T, TRUNC(v)) \
    case EMB_U_RECIPROCAL: UN_LOOP(T, T, (T)1 / v) \
    case EMB_U_ISNAN: UN_LOOP(T, uint8_t, v != v) \
    case EMB_U_ISINF: UN_LOOP(T, uint8_t, v == (T)EMB_INF || v == -(T)EMB_INF) \
    default: return -1; \
    }

#define UN_INT(T, UT) \
    switch (op) { \
    case EMB_U_NEG: UN_LOOP(T, T, (T)(UT)(0 - (UT)v)) \
    case EMB_U_ABS: UN_LOOP(T, T, v < 0 ? (T)(UT)(0 - (UT)v) : v) \
    case EMB_U_SIGN: UN_LOOP(T, T, (v > 0) - (v < 0)) \
    case EMB_U_BITWISE_NOT: UN_LOOP(T, T, ~v) \
    case EMB_U_FLOOR: case EMB_U_CEIL: case EMB_U_ROUND: case EMB_U_TRUNC: UN_LOOP(T, T, v) \
    case EMB_U_ISNAN: case EMB_U_ISINF: UN_LOOP(T, uint8_t, v && 0) \
    case EMB_U_LOGICAL_NOT: UN_LOOP(T, uint8_t, v == 0) \
    default: return -1; \
    }

int EMB_FN(unary)(int op, int dtype, emb_i n, const void *x, void *out)
{
    switch (dtype) {
    case EMB_F32: UN_FLOAT(float, floorf, ceilf, truncf, nearbyintf, fabsf)
    case EMB_F64: UN_FLOAT(double, floor, ceil, trunc, nearbyint, fabs)
    case EMB_I8: UN_INT(int8_t, uint8_t)
    case EMB_I32: UN_INT(int32_t, uint32_t)
    case EMB_I64: UN_INT(int64_t, uint64_t)
    case EMB_U8:
        switch (op) {
        case EMB_U_LOGICAL_NOT: case EMB_U_BITWISE_NOT: UN_LOOP(uint8_t, uint8_t, !v)
        case EMB_U_ISNAN: case EMB_U_ISINF: UN_LOOP(uint8_t, uint8_t, v && 0)
        default: return -1;
        }
    default: return -1;
    }
}

/* ---- binary ---------------------------------------------------------------------------------- */

#define BIN_ROW(NAME, T, TO, EXPR) \
    static void NAME(emb_i n, char **p, const emb_i *s, void *ctx) \
    { \
        const T *EMB_RESTRICT a = (const T *)p[0]; \
        const T *EMB_RESTRICT b = (const T *)p[1]; \
        TO *EMB_RESTRICT o = (TO *)p[2]; \
        emb_i i, sa = s[0], sb = s[1]; \
        (void)ctx; \
        if (sa == 1 && sb == 1) { \
            for (i = 0; i < n; i++) { T x = a[i], y = b[i]; o[i] = (TO)(EXPR); } \
        } else if (sa == 1 && sb == 0) { \
            T y = b[0]; \
            for (i = 0; i < n; i++) { T x = a[i]; o[i] = (TO)(EXPR); } \
        } else if (sa == 0 && sb == 1) { \
            T x = a[0]; \
            for (i = 0; i < n; i++) { T y = b[i]; o[i] = (TO)(EXPR); } \
        } else { \
            for (i = 0; i < n; i++) { T x = a[i * sa], y = b[i * sb]; o[i] = (TO)(EXPR); } \
        } \
    }

#define BIN_COMPARE(P, T) \
    BIN_ROW(P##_eq, T, uint8_t, x == y) \
    BIN_ROW(P##_ne, T, uint8_t, x != y) \
    BIN_ROW(P##_lt, T, uint8_t, x < y) \
    BIN_ROW(P##_le, T, uint8_t, x <= y) \
    BIN_ROW(P##_gt, T, uint8_t, x > y) \
    BIN_ROW(P##_ge, T, uint8_t, x >= y)

#define BIN_FLOAT(P, T) \
    BIN_ROW(P##_add, T, T, x + y) \
    BIN_ROW(P##_sub, T, T, x - y) \
    BIN_ROW(P##_mul, T, T, x * y) \
    BIN_ROW(P##_div, T, T, x / y) \
    BIN_ROW(P##_pow, T, T, pow((double)x, (double)y)) \
    BIN_ROW(P##_maximum, T, T, FMAXIMUM(x, y)) \
    BIN_ROW(P##_minimum, T, T, FMINIMUM(x, y)) \
    BIN_ROW(P##_floordiv, T, T, py_floordiv((double)x, (double)y)) \
    BIN_ROW(P##_mod, T, T, py_mod((double)x, (double)y)) \
    BIN_ROW(P##_atan2, T, T, atan2((double)x, (double)y)) \
    BIN_COMPARE(P, T)

#define BIN_INT(P, T, UT) \
    BIN_ROW(P##_add, T, T, (T)(UT)((UT)x + (UT)y)) \
    BIN_ROW(P##_sub, T, T, (T)(UT)((UT)x - (UT)y)) \
    BIN_ROW(P##_mul, T, T, (T)(UT)((UT)x * (UT)y)) \
    BIN_ROW(P##_pow, T, T, (T)(UT)py_ipow(x, y)) \
    BIN_ROW(P##_maximum, T, T, x >= y ? x : y) \
    BIN_ROW(P##_minimum, T, T, x <= y ? x : y) \
    BIN_ROW(P##_floordiv, T, T, (T)(UT)(uint64_t)py_ifloordiv(x, y)) \
    BIN_ROW(P##_mod, T, T, (T)(UT)(uint64_t)py_imod(x, y)) \
    BIN_ROW(P##_and, T, T, x & y) \
    BIN_ROW(P##_or, T, T, x | y) \
    BIN_ROW(P##_xor, T, T, x ^ y) \
    BIN_ROW(P##_lshift, T, T, (T)(UT)py_lshift(x, y)) \
    BIN_ROW(P##_rshift, T, T, (T)py_rshift(x, y)) \
    BIN_COMPARE(P, T)

BIN_FLOAT(f32, float)
BIN_FLOAT(f64, double)
BIN_INT(i8, int8_t, uint8_t)
BIN_INT(i32, int32_t, uint32_t)
BIN_INT(i64, int64_t, uint64_t)
BIN_ROW(u8_and, uint8_t, uint8_t, x & y)
BIN_ROW(u8_or, uint8_t, uint8_t, x | y)
BIN_ROW(u8_xor, uint8_t, uint8_t, x ^ y)
BIN_COMPARE(u8, uint8_t)

#define FLOAT_TABLE(P) \
    { P##_add, P##_sub, P##_mul, P##_div, P##_pow, P##_maximum, P##_minimum, P##_floordiv, P##_mod, \
      P##_atan2, P##_eq, P##_ne, P##_lt, P##_le, P##_gt, P##_ge, 0, 0, 0, 0, 0 }
#define INT_TABLE(P) \
    { P##_add, P##_sub, P##_mul, 0, P##_pow, P##_maximum, P##_minimum, P##_floordiv, P##_mod, 0, \
      P##_eq, P##_ne, P##_lt, P##_le, P##_gt, P##_ge, P##_and, P##_or, P##_xor, P##_lshift, P##_rshift }

static const emb_row_fn binary_rows[6][EMB_B_COUNT] = {
    FLOAT_TABLE(f32), FLOAT_TABLE(f64), INT_TABLE(i8), INT_TABLE(i32), INT_TABLE(i64),
    { 0, 0, 0, 0, 0, u8_or, u8_and, 0, 0, 0, u8_eq, u8_ne, u8_lt, u8_le, u8_gt, u8_ge,
      u8_and, u8_or, u8_xor, 0, 0 },
};

int EMB_FN(binary)(int op, int dtype, int nd, const emb_i *shape, const void *a, const emb_i *sa,
                   const void *b, const emb_i *sb, void *out)
{
    emb_walk w;
    emb_i ost[EMB_MAXDIM];
    const emb_i *st[3];
    char *base[3];
    int es[3];
    emb_row_fn fn;
    if (dtype < 0 || dtype > EMB_U8 || op < 0 || op >= EMB_B_COUNT || nd > EMB_MAXDIM)
        return -1;
    fn = binary_rows[dtype][op];
    if (!fn)
        return -1;
    contiguous_strides(nd, shape, ost);
    st[0] = sa;
    st[1] = sb;
    st[2] = ost;
    if (!walk_init(&w, nd, shape, 3, st))
        return 0;
    base[0] = (char *)a;
    base[1] = (char *)b;
    base[2] = (char *)out;
    es[0] = es[1] = dtype_size(dtype);
    es[2] = (op >= EMB_B_EQ && op <= EMB_B_GE) ? 1 : es[0];
    walk_run(&w, base, es, fn, 0);
    return 0;
}

/* ---- where ----------------------------------------------------------------------------------- */

#define WHERE_ROW(NAME, T) \
    static void NAME(emb_i n, char **p, const emb_i *s, void *ctx) \
    { \
        const uint8_t *c = (const uint8_t *)p[0]; \
        const T *a = (const T *)p[1]; \
        const T *b = (const T *)p[2]; \
        T *o = (T *)p[3]; \
        emb_i i, sc = s[0], sa = s[1], sb = s[2]; \
        (void)ctx; \
        if (sc == 1 && sa == 1 && sb == 1) { \
            for (i = 0; i < n; i++) o[i] = c[i] ? a[i] : b[i]; \
        } else { \
            for (i = 0; i < n; i++) o[i] = c[i * sc] ? a[i * sa] : b[i * sb]; \
        } \
    }
WHERE_ROW(where_row1, uint8_t)
WHERE_ROW(where_row4, uint32_t)
WHERE_ROW(where_row8, uint64_t)

void EMB_FN(where)(int elsize, int nd, const emb_i *shape, const uint8_t *c, const emb_i *sc,
                   const void *a, const emb_i *sa, const void *b, const emb_i *sb, void *out)
{
    emb_walk w;
    emb_i ost[EMB_MAXDIM];
    const emb_i *st[4];
    char *base[4];
    int es[4];
    contiguous_strides(nd, shape, ost);
    st[0] = sc;
    st[1] = sa;
    st[2] = sb;
    st[3] = ost;
    if (!walk_init(&w, nd, shape, 4, st))
        return;
    base[0] = (char *)c;
    base[1] = (char *)a;
    base[2] = (char *)b;
    base[3] = (char *)out;
    es[0] = 1;
    es[1] = es[2] = es[3] = elsize;
    walk_run(&w, base, es, elsize == 1 ? where_row1 : elsize == 4 ? where_row4 : where_row8, 0);
}
