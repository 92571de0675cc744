"""The C every generated fused kernel starts with: Python's scalar semantics, fast float32 exp and
erf, and a tiny pthread ``parallel`` (the fallback of ember._ckernels' worker pool).

The helpers mirror ext_c/k_elementwise.c (which mirrors the pure Cpu): floats that Python computes
in double (pow, floordiv, mod, libm functions) are computed in double and rounded once; integers
wrap. ``fk_expf`` and ``fk_erff`` are vectorizable float32 approximations, accurate within the
conformance tolerance (float32 rtol 1e-6, atol 1e-7); outside exp's fast domain a caller flags the
element and the block is recomputed exactly (see cgen.py). fk_erff holds everywhere (nan gives nan).
"""

PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#define FK_MAXT 64
typedef int64_t fk_i;

static int64_t fk_f2i(double v)
{
    double t;
    if (v != v || v == INFINITY || v == -INFINITY)
        return 0;
    t = trunc(v);
    if (t >= -9223372036854775808.0 && t < 9223372036854775808.0)
        return (int64_t)t;
    t = fmod(t, 18446744073709551616.0);
    if (t < 0)
        t += 18446744073709551616.0;
    return (int64_t)(uint64_t)t;
}

static double fk_mod(double a, double b)
{
    double m;
    if (b == 0.0)
        return NAN;
    m = fmod(a, b);
    if (m != 0.0) {
        if ((b < 0) != (m < 0))
            m += b;
    } else {
        m = copysign(0.0, b);
    }
    return m;
}

static double fk_floordiv(double a, double b)
{
    double mod, div, fd;
    if (b == 0.0)
        return a / b;
    mod = fmod(a, b);
    div = (a - mod) / b;
    if (mod != 0.0 && (b < 0) != (mod < 0))
        div -= 1.0;
    if (div != 0.0) {
        fd = floor(div);
        if (div - fd > 0.5)
            fd += 1.0;
    } else {
        fd = copysign(0.0, a / b);
    }
    return fd;
}

static int64_t fk_ifloordiv(int64_t a, int64_t b)
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

static int64_t fk_imod(int64_t a, int64_t b)
{
    int64_t r;
    if (b == 0 || b == -1)
        return 0;
    r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

static uint64_t fk_ipow(int64_t a, int64_t b)
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

static uint64_t fk_lshift(int64_t a, int64_t b) { return (b >= 0 && b < 64) ? (uint64_t)a << b : 0; }
static int64_t fk_rshift(int64_t a, int64_t b) { return (b >= 0 && b < 64) ? a >> b : (a < 0 ? -1 : 0); }

/* libm's pow out of the optimizer's sight: with -fno-math-errno GCC turns pow(x, 0.5) in a
   vectorized loop into sqrt(x), which gives -0 at -0 and nan at -inf where pow (and the unfused
   primitive) gives +0 and +inf (found by tests/accel/test_capture_fuzz.py) */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((noipa))
#else
__attribute__((noinline))
#endif
static double fk_pow(double a, double b) { return pow(a, b); }

static double fk_sigmoid(double x)
{
    double e;
    if (x >= 0)
        return 1.0 / (1.0 + exp(-x));
    e = exp(x);
    return e / (1.0 + e);
}

static double fk_log(double x) { return x > 0 || x != x ? log(x) : (x == 0 ? -INFINITY : NAN); }
static double fk_sqrt(double x) { return x >= 0 || x != x ? sqrt(x) : NAN; }
static double fk_rsqrt(double x) { return 1.0 / fk_sqrt(x); }

#define FK_MAXIMUM(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) >= (y) ? (x) : (y))
#define FK_MINIMUM(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) <= (y) ? (x) : (y))

/* the approximations' own polynomial steps: one rounding each where the CPU fuses (IR ops are
   never contracted: -ffp-contract=off) */
#ifdef __FMA__
#define FK_FMA(a, b, c) __builtin_fmaf(a, b, c)
#else
#define FK_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* exp(x) for x in [-87.3, 88]: 2^n p(r), |r| <= ln2/2, p = 1 + r + r^2 (c2 + ... c5 r^3) of degree
   5, minimax for relative error (1.05e-7 before rounding; over every float32 x in [-104, 88] the
   result is within 0.19 of the conformance tolerance); below -87.3 it gives 0 (the true value is
   under 1.2e-38, inside atol). n comes from the bits of x log2e + 1.5 * 2^23, so the loop needs no
   float-to-int conversion and vectorizes. x is not clamped: the caller's guard sends x > 88 and nan
   to the exact path, and the last select gives 0 below -87.3 (-inf included) whatever p holds. */
static inline float fk_expf(float x)
{
    const float shifter = 12582912.0f;
    union { float f; uint32_t u; } t, scale;
    float n, r, p;
    t.f = FK_FMA(x, 1.44269504088896341f, shifter);
    n = t.f - shifter;
    r = FK_FMA(n, -1.42860682030941723e-6f, FK_FMA(n, -0.693145751953125f, x));
    p = FK_FMA(r, 0x1.10642ep-7f, 0x1.572a1ap-5f);
    p = FK_FMA(p, r, 0x1.5557acp-3f);
    p = FK_FMA(p, r, 0x1.fffdfcp-2f);
    p = FK_FMA(p, r, 1.0f);
    p = FK_FMA(p, r, 1.0f);
    scale.u = (t.u + (127u - 0x4B400000u)) << 23;
    return x < -87.3f ? 0.0f : p * scale.f;
}
/* exp(x) as every fused kernel gives it, element by element: fk_expf where its guard holds (x <=
   88), libm beyond (overflow, nan). A loop that cannot take the guard's block-wise fallback (a
   row's own value, a block recomputed because one of its elements failed the guard) calls this,
   so a value is the same whichever loop, phase or kernel computes it: a max's gradient compares
   the exp a kernel stored with the exp another recomputed. */
static inline float fk_expf_each(float x)
{
    return x <= 88.0f ? fk_expf(x) : (float)exp((double)x);
}

/* erf(x) as x P(x^2) / Q(x^2) on [-4, 4] (Eigen's fast erf: a few ulp), +-1 beyond. The ratio is
   computed for every x and the bounds chosen after it: two compares and selects, which GCC folds
   into the caller's ops (a GELU's + 1 becomes a masked add), where clamping x first compiled to
   nine mask ops a vector (the GELU loop 13-17% slower over 1M floats, bench/gelu_loop.c). Beyond
   +-4 the ratio may be inf or nan; the select drops it, and at +-4 it is exactly +-1 (with and
   without fmaf), so the bits are those of the clamped form for all 2^32 inputs (checked
   exhaustively, 2026-12-06). nan fails both compares and stays nan, so no caller needs a guard */
static inline float fk_erff(float a)
{
    float x2 = a * a, p, q, r;
    p = FK_FMA(-2.72614225801306e-10f, x2, 2.77068142495902e-08f);
    p = FK_FMA(p, x2, -2.10102402082508e-06f);
    p = FK_FMA(p, x2, -5.69250639462346e-05f);
    p = FK_FMA(p, x2, -7.34990630326855e-04f);
    p = FK_FMA(p, x2, -2.95459980854025e-03f);
    p = FK_FMA(p, x2, -1.60960333262415e-02f);
    q = FK_FMA(-1.45660718464996e-05f, x2, -2.13374055278905e-04f);
    q = FK_FMA(q, x2, -1.68282697438203e-03f);
    q = FK_FMA(q, x2, -7.37332916720468e-03f);
    q = FK_FMA(q, x2, -1.42647390514189e-02f);
    r = a * p / q;
    r = a > 4.0f ? 1.0f : r;
    return a < -4.0f ? -1.0f : r;
}

typedef void (*fk_task)(void *ctx, int tid, int nt);
typedef struct { fk_task fn; void *ctx; int tid, nt; } fk_job;
typedef void (*fk_parallel_fn)(int nt, fk_task fn, void *ctx);

static void *fk_job_run(void *p)
{
    fk_job *j = (fk_job *)p;
    j->fn(j->ctx, j->tid, j->nt);
    return 0;
}

/* fn(ctx, tid, nt) for every tid; the calling thread runs tid 0 (threads made for this call: used
   only where ember._ckernels' pool is not at hand) */
static void fk_parallel(int nt, fk_task fn, void *ctx)
{
    pthread_t th[FK_MAXT];
    fk_job jobs[FK_MAXT];
    int ok[FK_MAXT], t;
    if (nt > FK_MAXT)
        nt = FK_MAXT;
    for (t = 1; t < nt; t++) {
        jobs[t].fn = fn;
        jobs[t].ctx = ctx;
        jobs[t].tid = t;
        jobs[t].nt = nt;
        ok[t] = pthread_create(&th[t], 0, fk_job_run, &jobs[t]) == 0;
    }
    fn(ctx, 0, nt < 1 ? 1 : nt);
    for (t = 1; t < nt; t++) {
        if (ok[t])
            pthread_join(th[t], 0);
        else
            fn(ctx, t, nt);
    }
}

static void fk_share(fk_i total, int tid, int nt, fk_i align, fk_i *lo, fk_i *hi)
{
    fk_i per = (total + nt - 1) / nt;
    per = (per + align - 1) / align * align;
    *lo = per * tid < total ? per * tid : total;
    *hi = per * (tid + 1) < total ? per * (tid + 1) : total;
}
"""
