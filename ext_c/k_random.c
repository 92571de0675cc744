/* Random draws for the C-backed Cpu: the stream of ember's Generator (core_pure/rng.py), bit for bit.

   xoshiro128++ on 32-bit words; a uniform is lo + (w >> 8) * ((hi - lo) * 2^-24); normals are
   Box-Muller on pairs of uniforms with the second value of a pair kept as the spare; randint is
   rejection sampling on one word (spans below 2^32) or the top bits of two (spans up to 2^64).
   Every value is computed in double exactly as the Python code computes it, one IEEE operation
   at a time, then stored in the output's type as the Cpu's arrays store a Python float.

   Portable C99 like the k_*.c kernels, but one build for every ISA (the stream is serial, vectors
   would not help). Two things keep the values IEEE's: no product is fused into the add after it
   (``rounded`` below: build_ckernels.py passes -ffp-contract=fast, under which clang contracts
   whatever a pragma says, and aarch64 has FMA in its baseline), and libm's own log, sqrt, cos and
   sin, called through pointers so the compiler neither merges sin and cos into sincos nor swaps in
   a vector libm. Nothing is built with -ffast-math. */
#include "kernels.h"
#include "api.h"

#define EMB_2POW_M24 5.9604644775390625e-08
#define EMB_TWO_PI 6.283185307179586

/* x rounded to a double here, so an add after it cannot be fused with the product that made x */
static inline double rounded(double x)
{
    volatile double v = x;
    return v;
}

static double (*volatile emb_log)(double) = log;
static double (*volatile emb_sqrt)(double) = sqrt;
static double (*volatile emb_cos)(double) = cos;
static double (*volatile emb_sin)(double) = sin;

static inline uint32_t next_u32(uint32_t *s)
{
    uint32_t r = s[0] + s[3];
    uint32_t t = s[1] << 9;
    r = ((r << 7) | (r >> 25)) + s[0];
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 11) | (s[3] >> 21);
    return r;
}

/* out[i] = v in the output's type: a float as array('f') or array('d') stores a double, an int
   wrapped to its width (two's complement), a bool as 0 or 1 */
static inline void put_double(int dtype, void *out, int64_t i, double v)
{
    if (dtype == EMB_F32)
        ((float *)out)[i] = (float)v;
    else
        ((double *)out)[i] = v;
}

static int float_type(int dtype)
{
    return dtype == EMB_F32 || dtype == EMB_F64;
}

int emb_random_uniform(int dtype, int64_t n, uintptr_t state, double lo, double hi, uintptr_t out)
{
    uint32_t *s = (uint32_t *)state;
    uint32_t st[4];
    double span = (hi - lo) * EMB_2POW_M24;
    int64_t i;
    if (!float_type(dtype))
        return -1;
    st[0] = s[0], st[1] = s[1], st[2] = s[2], st[3] = s[3];
    if (dtype == EMB_F32) {
        float *o = (float *)out;
        for (i = 0; i < n; i++)
            o[i] = (float)(lo + rounded((double)(next_u32(st) >> 8) * span));
    } else {
        double *o = (double *)out;
        for (i = 0; i < n; i++)
            o[i] = lo + rounded((double)(next_u32(st) >> 8) * span);
    }
    s[0] = st[0], s[1] = st[1], s[2] = st[2], s[3] = st[3];
    return 0;
}

int emb_random_normal(int dtype, int64_t n, uintptr_t state, uintptr_t spare, double mean, double std,
                      uintptr_t out)
{
    uint32_t *s = (uint32_t *)state;
    double *sp = (double *)spare; /* {1.0 when a spare is held, its value} */
    int64_t i = 0;
    if (!float_type(dtype))
        return -1;
    if (sp[0] != 0.0 && n) {
        put_double(dtype, (void *)out, i++, mean + rounded(std * sp[1]));
        sp[0] = 0.0;
    }
    while (i < n) {
        double u1 = (double)((next_u32(s) >> 8) + 1) * EMB_2POW_M24; /* in (0, 1]: log stays finite */
        double u2 = (double)(next_u32(s) >> 8) * EMB_2POW_M24;
        double r = emb_sqrt(-2.0 * emb_log(u1));
        double a = EMB_TWO_PI * u2;
        put_double(dtype, (void *)out, i++, mean + rounded(std * r * emb_cos(a)));
        if (i < n) {
            put_double(dtype, (void *)out, i++, mean + rounded(std * r * emb_sin(a)));
        } else {
            sp[0] = 1.0;
            sp[1] = r * emb_sin(a);
        }
    }
    return 0;
}

static inline void put_int(int dtype, void *out, int64_t i, uint64_t v)
{
    switch (dtype) {
    case EMB_I64: ((int64_t *)out)[i] = (int64_t)v; break;
    case EMB_I32: ((int32_t *)out)[i] = (int32_t)(uint32_t)v; break;
    case EMB_I8: ((int8_t *)out)[i] = (int8_t)(uint8_t)v; break;
    case EMB_F64: ((double *)out)[i] = (double)(int64_t)v; break;
    default: ((float *)out)[i] = (float)(double)(int64_t)v; break; /* via double, as a Python int is */
    }
}

/* lo + a draw in [0, span), lo and lo + span - 1 within int64 (the caller checks): the value is
   exact in int64, so its wrap to a narrower int is the low bits of the uint64 sum */
int emb_random_randint(int dtype, int64_t n, uintptr_t state, int64_t lo, uint64_t span, uintptr_t out)
{
    uint32_t *s = (uint32_t *)state;
    uint64_t base = (uint64_t)lo;
    int64_t i;
    if (span == 0 || !(dtype == EMB_I64 || dtype == EMB_I32 || dtype == EMB_I8 || float_type(dtype)))
        return -1;
    if (span <= 0xFFFFFFFFu) {
        uint64_t limit = 0x100000000ull - (0x100000000ull % span);
        uint32_t m = (uint32_t)span;
        for (i = 0; i < n; i++) {
            uint32_t v;
            do
                v = next_u32(s);
            while ((uint64_t)v >= limit);
            put_int(dtype, (void *)out, i, base + (uint64_t)(v % m));
        }
    } else {
        int bits = 64;
        while (!((span >> (bits - 1)) & 1))
            bits--;
        for (i = 0; i < n; i++) {
            uint64_t v;
            do {
                uint64_t hi = next_u32(s);
                v = ((hi << 32) | next_u32(s)) >> (64 - bits);
            } while (v >= span);
            put_int(dtype, (void *)out, i, base + v);
        }
    }
    return 0;
}

/* u < p for u = k 2^-24 is k < p 2^24 (exact scaling), so k < ceil(p 2^24): an integer compare, no
   branch to mispredict in the loops */
static uint32_t below(double p)
{
    double x = p * 16777216.0;
    uint32_t k;
    if (!(x > 0.0))
        return 0;
    if (x >= 16777216.0)
        return 16777216u;
    k = (uint32_t)x;
    return k + ((double)k < x);
}

#define EMB_BERNOULLI(T)                                                                           \
    {                                                                                              \
        T *o = (T *)out;                                                                           \
        for (i = 0; i < n; i++)                                                                    \
            o[i] = (T)((next_u32(st) >> 8) < lim);                                                 \
    }                                                                                              \
    break;
/* a float 1.0 or 0.0 made from its bits, masked by the compare (a union: C99's type pun): the
   compiler would branch on (float)b */
#define EMB_BERNOULLI_BITS(T, U, ONE)                                                              \
    {                                                                                              \
        T *o = (T *)out;                                                                           \
        for (i = 0; i < n; i++) {                                                                  \
            union { U u; T f; } v;                                                                 \
            v.u = ((U)0 - (U)((next_u32(st) >> 8) < lim)) & (ONE);                                 \
            o[i] = v.f;                                                                            \
        }                                                                                          \
    }                                                                                              \
    break;

int emb_random_bernoulli(int dtype, int64_t n, uintptr_t state, double p, uintptr_t out)
{
    uint32_t *s = (uint32_t *)state;
    uint32_t st[4], lim = below(p);
    int64_t i;
    st[0] = s[0], st[1] = s[1], st[2] = s[2], st[3] = s[3];
    switch (dtype) {
    case EMB_U8: case EMB_I8: EMB_BERNOULLI(uint8_t)
    case EMB_I32: EMB_BERNOULLI(int32_t)
    case EMB_I64: EMB_BERNOULLI(int64_t)
    case EMB_F64: EMB_BERNOULLI_BITS(double, uint64_t, 0x3FF0000000000000ull)
    case EMB_F32: EMB_BERNOULLI_BITS(float, uint32_t, 0x3F800000u)
    default: return -1;
    }
    s[0] = st[0], s[1] = st[1], s[2] = st[2], s[3] = st[3];
    return 0;
}
