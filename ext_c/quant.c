/* int8 x int8 -> int32 kernels for ember.quant: a GEMM over rows (both operands k-contiguous, the
   layout of a Linear weight and of im2col columns) and conv2d as im2col into it.

   Portable C99 like the k_*.c kernels (no threads, no allocation: conv takes its workspace from the
   caller), but one build for every ISA: on x86-64 Linux with GCC the GEMM's inner loop is also cloned
   for AVX2 and the loader picks the clone (target_clones): twice the SSE2 speed, and AVX-512 added
   under 10% more in a measurement, so this is all the dispatch it needs.
   Sums cannot overflow: ember.quant refuses a fan-in above 133,143 (127 * 127 * 133,143 < 2^31). */
#include "kernels.h"
#include "quant.h"

#if defined(EMB_HAVE_AVX2) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define EMB_Q8_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EMB_Q8_CLONES
#endif

/* out[j] = a . b[j] for the n rows of b: four rows at a time, so each a value is loaded once per four
   products and the compiler vectorizes along k with four accumulators */
static EMB_Q8_CLONES void q8_row(int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *out)
{
    int64_t j = 0, p;
    for (; j + 4 <= n; j += 4) {
        const int8_t *b0 = b + j * k, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (p = 0; p < k; p++) {
            int32_t x = a[p];
            s0 += x * b0[p];
            s1 += x * b1[p];
            s2 += x * b2[p];
            s3 += x * b3[p];
        }
        out[j] = s0;
        out[j + 1] = s1;
        out[j + 2] = s2;
        out[j + 3] = s3;
    }
    for (; j < n; j++) {
        const int8_t *bj = b + j * k;
        int32_t s = 0;
        for (p = 0; p < k; p++)
            s += (int32_t)a[p] * bj[p];
        out[j] = s;
    }
}

void emb_q8_gemm(int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *acc)
{
    int64_t i;
    for (i = 0; i < m; i++)
        q8_row(n, k, a + i * k, b, acc + i * n);
}

int64_t emb_q8_conv2d_work(const int64_t *p)
{
    int64_t cg = p[EMB_CV_C] / p[EMB_CV_G];
    return p[EMB_CV_OH] * p[EMB_CV_OW] * cg * p[EMB_CV_KH] * p[EMB_CV_KW];
}

/* the im2col columns of one image and group: one row of cg*kh*kw values per output position, in the
   weight's (c, ky, kx) order; positions in the padding read 0, the quantized value of 0.0 */
static void q8_columns(const int64_t *p, const int8_t *x, int64_t c0, int8_t *cols)
{
    int64_t h = p[EMB_CV_H], w = p[EMB_CV_W], kh = p[EMB_CV_KH], kw = p[EMB_CV_KW];
    int64_t sh = p[EMB_CV_SH], sw = p[EMB_CV_SW], pt = p[EMB_CV_PT], pl = p[EMB_CV_PL];
    int64_t dh = p[EMB_CV_DH], dw = p[EMB_CV_DW], oh = p[EMB_CV_OH], ow = p[EMB_CV_OW];
    int64_t cg = p[EMB_CV_C] / p[EMB_CV_G];
    int64_t oy, ox, c, ky, kx;
    for (oy = 0; oy < oh; oy++)
        for (ox = 0; ox < ow; ox++) {
            int8_t *col = cols + (oy * ow + ox) * cg * kh * kw;
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

void emb_q8_conv2d(const int64_t *p, const int8_t *x, const int8_t *w, int32_t *acc, int8_t *work)
{
    int64_t n = p[EMB_CV_N], c = p[EMB_CV_C], o = p[EMB_CV_O], groups = p[EMB_CV_G];
    int64_t cg = c / groups, og = o / groups, fsize = cg * p[EMB_CV_KH] * p[EMB_CV_KW];
    int64_t positions = p[EMB_CV_OH] * p[EMB_CV_OW];
    int64_t b, g;
    for (b = 0; b < n; b++)
        for (g = 0; g < groups; g++) {
            q8_columns(p, x + b * c * p[EMB_CV_H] * p[EMB_CV_W], g * cg, work);
            /* filters x columns: the (og, positions) block is already NCHW */
            emb_q8_gemm(og, positions, fsize, w + g * og * fsize, work, acc + (b * o + g * og) * positions);
        }
}
