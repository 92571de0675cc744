/* The fused GELU's loop alone, as accel/fusion/cgen.py generates it, with and without its
   `#pragma GCC unroll 4`, and with the erf that clamped its argument first (cprelude.py's fk_erff
   before 2026-12-06, the same bits), beside a plain copy (the memory's own speed).

       gcc -O3 -march=native -mprefer-vector-width=512 -ffp-contract=off -fno-math-errno \
           -fno-trapping-math bench/gelu_loop.c -o /tmp/gelu_loop && /tmp/gelu_loop

   Over 64K floats (in L2) and 1M floats (4 MB each way), 64-byte aligned, the four loops
   alternate for ROUNDS rounds; medians in microseconds, the unrolled loop's time over the plain
   one's, and the clamped erf's over the selecting one's (both unrolled). erf_fast copies
   cprelude.py's fk_erff; the chain keeps each op's float32 rounding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 301
#define FMA(a, b, c) __builtin_fmaf(a, b, c)

/* x P(x^2) / Q(x^2), the rational of cprelude.py's fk_erff, for any x */
static inline float erf_ratio(float x)
{
    float x2 = x * x, p, q;
    p = FMA(-2.72614225801306e-10f, x2, 2.77068142495902e-08f);
    p = FMA(p, x2, -2.10102402082508e-06f);
    p = FMA(p, x2, -5.69250639462346e-05f);
    p = FMA(p, x2, -7.34990630326855e-04f);
    p = FMA(p, x2, -2.95459980854025e-03f);
    p = FMA(p, x2, -1.60960333262415e-02f);
    q = FMA(-1.45660718464996e-05f, x2, -2.13374055278905e-04f);
    q = FMA(q, x2, -1.68282697438203e-03f);
    q = FMA(q, x2, -7.37332916720468e-03f);
    q = FMA(q, x2, -1.42647390514189e-02f);
    return x * p / q;
}

/* fk_erff: the bounds selected after the ratio */
static inline float erf_fast(float a)
{
    float r = erf_ratio(a);
    r = a > 4.0f ? 1.0f : r;
    return a < -4.0f ? -1.0f : r;
}

/* the same erf with its argument clamped to [-4, 4] first (fk_erff before 2026-12-06) */
static inline float erf_clamped(float a)
{
    return erf_ratio(a > 4.0f ? 4.0f : a < -4.0f ? -4.0f : a);
}

/* x * (erf(x / sqrt 2) + 1) / 2, the division by sqrt 2 read as a product (cexpr.py) */
__attribute__((noinline)) static void gelu_plain(const float *restrict x, float *restrict out, long n)
{
    for (long i = 0; i < n; i++) {
        float v = x[i], e = erf_fast(v * 0x1.6a09e6p-1f);
        out[i] = (v * (e + 1.0f)) * 0.5f;
    }
}

__attribute__((noinline)) static void gelu_unrolled(const float *restrict x, float *restrict out, long n)
{
#pragma GCC unroll 4
    for (long i = 0; i < n; i++) {
        float v = x[i], e = erf_fast(v * 0x1.6a09e6p-1f);
        out[i] = (v * (e + 1.0f)) * 0.5f;
    }
}

__attribute__((noinline)) static void gelu_clamped(const float *restrict x, float *restrict out, long n)
{
#pragma GCC unroll 4
    for (long i = 0; i < n; i++) {
        float v = x[i], e = erf_clamped(v * 0x1.6a09e6p-1f);
        out[i] = (v * (e + 1.0f)) * 0.5f;
    }
}

__attribute__((noinline)) static void copy(const float *restrict x, float *restrict out, long n)
{
    for (long i = 0; i < n; i++)
        out[i] = x[i];
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    static double t[4][ROUNDS];
    void (*loops[4])(const float *, float *, long) = {gelu_plain, gelu_unrolled, gelu_clamped, copy};
    long sizes[2] = {1L << 16, 1L << 20};
    for (int s = 0; s < 2; s++) {
        long n = sizes[s];
        float *x = aligned_alloc(64, n * 4), *out = aligned_alloc(64, n * 4);
        for (long i = 0; i < n; i++)
            x[i] = (float)(i % 1000) / 125.0f - 4.0f;
        for (int r = 0; r < ROUNDS; r++)
            for (int k = 0; k < 4; k++) {
                double t0 = now();
                loops[k](x, out, n);
                t[k][r] = now() - t0;
            }
        for (int k = 0; k < 4; k++)
            qsort(t[k], ROUNDS, sizeof(double), cmp);
        printf("n=%-8ld plain %8.1f us  unrolled %8.1f us  clamped %8.1f us  copy %8.1f us  "
               "unrolled/plain %.3f  clamped/unrolled %.3f\n", n, t[0][ROUNDS / 2] * 1e6,
               t[1][ROUNDS / 2] * 1e6, t[2][ROUNDS / 2] * 1e6, t[3][ROUNDS / 2] * 1e6,
               t[1][ROUNDS / 2] / t[0][ROUNDS / 2], t[2][ROUNDS / 2] / t[1][ROUNDS / 2]);
        free(x);
        free(out);
    }
    return 0;
}
