/* int8 x int8 -> int32 kernels for ember.quant: a GEMM over rows (both operands k-contiguous, the
   layout of a Linear weight and of im2col columns) and conv2d as im2col into it.

   Portable C99 like the k_*.c kernels (no threads, no allocation: the caller passes the workspace
   that *_work reports), but one build for every ISA: on x86-64 Linux with GCC the GEMM's inner loop
   is also cloned for AVX2 and the loader picks the clone (target_clones): 1.4 times the SSE2 speed
   for Linear(784, 128) at batch 64, where an AVX-512 clone was no faster, so this is all the
   dispatch it needs.
   Sums cannot overflow: ember.quant refuses a fan-in above 133,143 (127 * 127 * 133,143 < 2^31). */
#include "kernels.h"
#include "quant.h"

#if defined(EMB_HAVE_AVX2) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define EMB_Q8_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EMB_Q8_CLONES
#endif

/* rows of b per block: a block of int16 rows stays in a 128 KiB share of L2 while every row of a
   passes over it */
#define EMB_Q8_BLOCK_BYTES (128 << 10)

static void widen(int64_t n, const int8_t *src, int16_t *dst)
{
    int64_t i;
    for (i = 0; i < n; i++)
        dst[i] = src[i];
}

/* c0[j] = a0 . b[j] and c1[j] = a1 . b[j] for the n rows of b, two a rows by four b rows at a time.
   The operands come widened to int16: the loop is then multiply-adds of int16 pairs into int32
   (pmaddwd), which the compiler vectorizes along k, with each load serving two or four products. */
static EMB_Q8_CLONES void q16_rows2(int64_t n, int64_t k, const int16_t *a0, const int16_t *a1,
                                    const int16_t *b, int32_t *c0, int32_t *c1)
{
    int64_t j = 0, p;
    for (; j + 4 <= n; j += 4) {
        const int16_t *b0 = b + j * k, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, t0 = 0, t1 = 0, t2 = 0, t3 = 0;
        for (p = 0; p < k; p++) {
            int32_t x = a0[p], y = a1[p];
            s0 += x * b0[p];
            s1 += x * b1[p];
            s2 += x * b2[p];
            s3 += x * b3[p];
            t0 += y * b0[p];
            t1 += y * b1[p];
            t2 += y * b2[p];
            t3 += y * b3[p];
        }
        c0[j] = s0;
        c0[j + 1] = s1;
        c0[j + 2] = s2;
        c0[j + 3] = s3;
        c1[j] = t0;
        c1[j + 1] = t1;
        c1[j + 2] = t2;
        c1[j + 3] = t3;
    }
    for (; j < n; j++) {
        const int16_t *bj = b + j * k;
        int32_t s = 0, t = 0;
        for (p = 0; p < k; p++) {
            s += (int32_t)a0[p] * bj[p];
            t += (int32_t)a1[p] * bj[p];
        }
        c0[j] = s;
        c1[j] = t;
    }
}

/* acc (m, n), row stride ldc, = a (m, k) . b (n, k)^T, both int16 */
static void q16_gemm(int64_t m, int64_t n, int64_t k, const int16_t *a, const int16_t *b, int32_t *acc,
                     int64_t ldc)
{
    int64_t block = EMB_Q8_BLOCK_BYTES / (2 * (k > 0 ? k : 1)) / 4 * 4;
    int64_t j0, i;
    if (block < 4)
        block = 4;
    for (j0 = 0; j0 < n; j0 += block) {
        int64_t nb = n - j0 < block ? n - j0 : block;
        const int16_t *bb = b + j0 * k;
        for (i = 0; i + 2 <= m; i += 2)
            q16_rows2(nb, k, a + i * k, a + (i + 1) * k, bb, acc + i * ldc + j0, acc + (i + 1) * ldc + j0);
        if (i < m) /* an odd last row: computed twice into the same place */
            q16_rows2(nb, k, a + i * k, a + i * k, bb, acc + i * ldc + j0, acc + i * ldc + j0);
    }
}

int64_t emb_q8_gemm_work(int64_t m, int64_t n, int64_t k)
{
    return 2 * (m + n) * k;
}

void emb_q8_gemm(int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *acc, int16_t *work)
{
    widen(m * k, a, work);
    widen(n * k, b, work + m * k);
    q16_gemm(m, n, k, work, work + m * k, acc, n);
}

int64_t emb_q8_conv2d_work(const int64_t *p)
{
    int64_t fsize = p[EMB_CV_C] / p[EMB_CV_G] * p[EMB_CV_KH] * p[EMB_CV_KW];
    return 2 * (p[EMB_CV_OH] * p[EMB_CV_OW] + p[EMB_CV_O]) * fsize;
}

/* the im2col columns of one image and group, widened: one row of cg*kh*kw values per output
   position, in the weight's (c, ky, kx) order; positions in the padding read 0, the quantized 0.0 */
static void q8_columns(const int64_t *p, const int8_t *x, int64_t c0, int16_t *cols)
{
    int64_t h = p[EMB_CV_H], w = p[EMB_CV_W], kh = p[EMB_CV_KH], kw = p[EMB_CV_KW];
    int64_t sh = p[EMB_CV_SH], sw = p[EMB_CV_SW], pt = p[EMB_CV_PT], pl = p[EMB_CV_PL];
    int64_t dh = p[EMB_CV_DH], dw = p[EMB_CV_DW], oh = p[EMB_CV_OH], ow = p[EMB_CV_OW];
    int64_t cg = p[EMB_CV_C] / p[EMB_CV_G];
    int64_t oy, ox, c, ky, kx;
    for (oy = 0; oy < oh; oy++)
        for (ox = 0; ox < ow; ox++) {
            int16_t *col = cols + (oy * ow + ox) * cg * kh * kw;
            for (c = 0; c < cg; c++) {
                const int8_t *plane = x + (c0 + c) * h * w;
                for (ky = 0; ky < kh; ky++) {
                    int64_t y = oy * sh - pt + ky * dh;
                    for (kx = 0; kx < kw; kx++) {
                        int64_t xx = ox * sw - pl + kx * dw;
                        *col++ = (y >= 0 && y < h && xx >= 0 && xx < w) ? plane[y * w + xx] : 0;
                    }
                }
            }
        }
}

void emb_q8_conv2d(const int64_t *p, const int8_t *x, const int8_t *w, int32_t *acc, int16_t *work)
{
    int64_t n = p[EMB_CV_N], c = p[EMB_CV_C], o = p[EMB_CV_O], groups = p[EMB_CV_G];
    int64_t cg = c / groups, og = o / groups, fsize = cg * p[EMB_CV_KH] * p[EMB_CV_KW];
    int64_t positions = p[EMB_CV_OH] * p[EMB_CV_OW];
    int16_t *filters = work, *cols = work + o * fsize;
    int64_t b, g;
    widen(o * fsize, w, filters);
    for (b = 0; b < n; b++)
        for (g = 0; g < groups; g++) {
            q8_columns(p, x + b * c * p[EMB_CV_H] * p[EMB_CV_W], g * cg, cols);
            /* filters x columns: the (og, positions) block is already NCHW */
            q16_gemm(og, positions, fsize, filters + g * og * fsize, cols, acc + (b * o + g * og) * positions,
                     positions);
        }
}
