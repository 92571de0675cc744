/* The gradients of conv2d and pool2d, as direct kernels (p as for conv, k_conv.c).

   conv2d, per image b and group g, with cols = im2col(x) of shape (C/G * KH * KW, OH * OW):
     input gradient   gx = col2im(W_g^T @ G_bg)      (a GEMM, then a scatter-add of its columns)
     weight gradient  gW_g += G_bg @ cols^T          (im2col, then a GEMM that accumulates)
   Output columns are taken a few output rows at a time (at most EMB_CONV_GRAD_COLS elements of
   cols), so the workspace stays small for large images.

   pool2d: the gradient of each window goes to its max (the first one; the first nan; pads are -inf
   and take the gradient of a window they win, which is dropped) or, for avg, 1/(KH*KW) of it to
   each element inside the image. Float32 sums run in double and round once, as the composite's
   scatter_add does, so the values are the composite's exactly. */
#include "k_common.h"

#ifndef EMB_CONV_GRAD_COLS
#define EMB_CONV_GRAD_COLS 65536 /* most elements of the cols buffer */
#endif

#define P(name) p[EMB_CV_##name]

static emb_i cg_k(const emb_i *p)
{
    return P(C) / P(G) * P(KH) * P(KW);
}

/* output rows per chunk of the cols buffer (at least one) */
static emb_i cg_rows(const emb_i *p)
{
    emb_i per_row = cg_k(p) * P(OW);
    emb_i rows = per_row > 0 ? EMB_CONV_GRAD_COLS / per_row : P(OH);
    return EMB_MAX(1, EMB_MIN(rows, P(OH)));
}

/* elements of the dtype a conv_grad_input / conv_grad_weight call needs as workspace */
emb_i EMB_FN(conv_grad_work)(int dtype, const emb_i *p)
{
    emb_i gw = dtype == EMB_F64 ? EMB_FN(gemm_f64_work)() : EMB_FN(gemm_f32_work)();
    /* cols, G^T for a wide weight gradient, its transposed sums, the GEMM's workspace */
    return (cg_k(p) + P(O) / P(G)) * cg_rows(p) * P(OW) + P(O) / P(G) * cg_k(p) + gw + 64;
}

/* rows [oy0, oy1) of the im2col matrix of one image's group: cols[q][(oy - oy0) * OW + ox] */
#define IM2COL(T) \
    { \
        emb_i h = P(H), w = P(W), ow = P(OW), ncol = (oy1 - oy0) * ow, c, ky, kx, oy, ox; \
        for (c = 0; c < P(C) / P(G); c++) { \
            const T *plane = xg + c * h * w; \
            for (ky = 0; ky < P(KH); ky++) \
                for (kx = 0; kx < P(KW); kx++) { \
                    T *row = cols + ((c * P(KH) + ky) * P(KW) + kx) * ncol; \
                    for (oy = oy0; oy < oy1; oy++) { \
                        emb_i y = oy * P(SH) + ky * P(DH) - P(PT); \
                        T *r = row + (oy - oy0) * ow; \
                        emb_i x0 = kx * P(DW) - P(PL); \
                        if (y < 0 || y >= h) { \
                            for (ox = 0; ox < ow; ox++) r[ox] = 0; \
                            continue; \
                        } \
                        if (P(SW) == 1 && x0 >= 0 && x0 + ow <= w) { \
                            const T *s = plane + y * w + x0; \
                            for (ox = 0; ox < ow; ox++) r[ox] = s[ox]; \
                            continue; \
                        } \
                        for (ox = 0; ox < ow; ox++) { \
                            emb_i xx = ox * P(SW) + x0; \
                            r[ox] = (xx >= 0 && xx < w) ? plane[y * w + xx] : 0; \
                        } \
                    } \
                } \
        } \
    }

/* the scatter-add of cols (rows [oy0, oy1)) into one image's group of the input gradient */
#define COL2IM(T) \
    { \
        emb_i h = P(H), w = P(W), ow = P(OW), ncol = (oy1 - oy0) * ow, c, ky, kx, oy, ox; \
        for (c = 0; c < P(C) / P(G); c++) { \
            T *plane = gxg + c * h * w; \
            for (ky = 0; ky < P(KH); ky++) \
                for (kx = 0; kx < P(KW); kx++) { \
                    const T *row = cols + ((c * P(KH) + ky) * P(KW) + kx) * ncol; \
                    for (oy = oy0; oy < oy1; oy++) { \
                        emb_i y = oy * P(SH) + ky * P(DH) - P(PT); \
                        const T *r = row + (oy - oy0) * ow; \
                        emb_i x0 = kx * P(DW) - P(PL); \
                        if (y < 0 || y >= h) \
                            continue; \
                        if (P(SW) == 1 && x0 >= 0 && x0 + ow <= w) { \
                            T *d = plane + y * w + x0; \
                            for (ox = 0; ox < ow; ox++) d[ox] += r[ox]; \
                            continue; \
                        } \
                        for (ox = 0; ox < ow; ox++) { \
                            emb_i xx = ox * P(SW) + x0; \
                            if (xx >= 0 && xx < w) \
                                plane[y * w + xx] += r[ox]; \
                        } \
                    } \
                } \
        } \
    }

#define GRAD_INPUT(T, GEMM) \
    { \
        const T *g = (const T *)gv, *wt = (const T *)wv; \
        T *gx = (T *)gxv, *cols = (T *)workv; \
        emb_i k = cg_k(p), og = P(O) / P(G), cg = P(C) / P(G), ohw = P(OH) * P(OW), hw = P(H) * P(W); \
        emb_i rows = cg_rows(p), b, gi, i, oy0; \
        T *gwork = cols + k * rows * P(OW); \
        for (i = b0 * P(C) * hw; i < b1 * P(C) * hw; i++) gx[i] = 0; \
        for (b = b0; b < b1; b++) \
            for (gi = 0; gi < P(G); gi++) { \
                const T *wg = wt + gi * og * k; \
                const T *gg = g + (b * P(O) + gi * og) * ohw; \
                T *gxg = gx + (b * P(C) + gi * cg) * hw; \
                for (oy0 = 0; oy0 < P(OH); oy0 += rows) { \
                    emb_i oy1 = EMB_MIN(oy0 + rows, P(OH)), ncol = (oy1 - oy0) * P(OW); \
                    /* cols (k, ncol) = W_g^T (k, og) @ G (og, ncol) */ \
                    GEMM(k, ncol, og, wg, 1, k, gg + oy0 * P(OW), 0, ohw, 1, cols, ncol, 0, gwork); \
                    COL2IM(T) \
                } \
            } \
        return; \
    }

/* the input gradient of images [b0, b1) */
void EMB_FN(conv_grad_input)(int dtype, const emb_i *p, const void *gv, const void *wv, void *gxv, emb_i b0,
                             emb_i b1, void *workv)
{
    if (dtype == EMB_F64)
        GRAD_INPUT(double, EMB_FN(gemm_f64))
    GRAD_INPUT(float, EMB_FN(gemm_f32))
}

/* gW_g (og, k) += G (og, ncol) @ cols^T, two ways: with few output channels per group as dot
   products of contiguous rows of G and cols (no packing); with more as gW_g^T (k, og) += cols @ G^T
   through the packed GEMM (cols built by rows, G^T a small copy), summed in a transposed buffer and
   copied into gW_g at the end: each element the same sums in the same order as G @ cols^T */
#define GRAD_WEIGHT(T, GEMM) \
    { \
        const T *x = (const T *)xv, *g = (const T *)gv; \
        T *gw = (T *)gwv, *cols = (T *)workv; \
        emb_i k = cg_k(p), og = P(O) / P(G), cg = P(C) / P(G), ohw = P(OH) * P(OW), hw = P(H) * P(W); \
        emb_i rows = cg_rows(p), b, gi, oy0, q, o, j; \
        T *gt = cols + k * rows * P(OW), *gwt = gt + og * rows * P(OW), *gwork = gwt + og * k; \
        int wide = og >= 8; \
        for (gi = 0; gi < P(G); gi++) { \
            T *gwg = gw + gi * og * k; \
            for (b = b0; b < b1; b++) { \
                const T *xg = x + (b * P(C) + gi * cg) * hw; \
                const T *gg = g + (b * P(O) + gi * og) * ohw; \
                for (oy0 = 0; oy0 < P(OH); oy0 += rows) { \
                    emb_i oy1 = EMB_MIN(oy0 + rows, P(OH)), ncol = (oy1 - oy0) * P(OW); \
                    int more = b > b0 || oy0 > 0; \
                    IM2COL(T) \
                    if (wide) { \
                        for (j = 0; j < ncol; j++) \
                            for (o = 0; o < og; o++) \
                                gt[j * og + o] = gg[o * ohw + oy0 * P(OW) + j]; \
                        GEMM(k, og, ncol, cols, ncol, 1, gt, 0, og, 1, gwt, og, more, gwork); \
                    } else { \
                        GEMM(og, k, ncol, gg + oy0 * P(OW), ohw, 1, cols, 0, 1, ncol, gwg, k, more, 0); \
                    } \
                } \
            } \
            if (wide && b0 < b1) \
                for (o = 0; o < og; o++) \
                    for (q = 0; q < k; q++) \
                        gwg[o * k + q] = gwt[q * og + o]; \
        } \
        if (b0 >= b1) \
            for (q = 0; q < P(O) * k; q++) gw[q] = 0; \
        return; \
    }

/* the weight gradient summed over images [b0, b1), written to gw (O, C/G, KH, KW) */
void EMB_FN(conv_grad_weight)(int dtype, const emb_i *p, const void *xv, const void *gv, void *gwv, emb_i b0,
                              emb_i b1, void *workv)
{
    if (dtype == EMB_F64)
        GRAD_WEIGHT(double, EMB_FN(gemm_f64))
    GRAD_WEIGHT(float, EMB_FN(gemm_f32))
}

/* ---- pooling -------------------------------------------------------------------------------------- */

/* every window of one plane: its gradient added to ACC (of ACCT) at the max or the window's elements */
#define POOL_GRAD_WINDOWS(T, ACC, ACCT) \
            for (oy = 0; oy < oh; oy++) \
                for (ox = 0; ox < ow; ox++) { \
                    emb_i y0 = oy * sh - pt, x0 = ox * sw - pl; \
                    T gv1 = gp[oy * ow + ox]; \
                    if (op == EMB_P_MAX && y0 >= 0 && x0 >= 0 && y0 + (kh - 1) * dh < h && \
                        x0 + (kw - 1) * dw < w) { \
                        /* inside the image: the max without branches, then the first element that \
                           equals it (or is nan) found from the back, again without branches */ \
                        const T *r = src + y0 * w + x0; \
                        T best = r[0]; \
                        emb_i at = 0, nan = 0; \
                        for (ky = 0; ky < kh; ky++) \
                            for (kx = 0; kx < kw; kx++) { \
                                T v = r[ky * dh * w + kx * dw]; \
                                nan |= v != v; \
                                best = v > best ? v : best; \
                            } \
                        for (ky = kh - 1; ky >= 0; ky--) \
                            for (kx = kw - 1; kx >= 0; kx--) { \
                                emb_i off = ky * dh * w + kx * dw; \
                                T v = r[off]; \
                                emb_i hit = nan ? v != v : v == best; \
                                at += (off - at) & -hit; \
                            } \
                        ACC[y0 * w + x0 + at] += (ACCT)gv1; \
                    } else if (op == EMB_P_MAX) { \
                        /* the window in order, pads as -inf: the first max (or nan) wins */ \
                        T best = 0; \
                        emb_i at = -1; \
                        int started = 0; \
                        for (ky = 0; ky < kh; ky++) { \
                            emb_i y = y0 + ky * dh; \
                            for (kx = 0; kx < kw; kx++) { \
                                emb_i xx = x0 + kx * dw; \
                                int inside = y >= 0 && y < h && xx >= 0 && xx < w; \
                                T v = inside ? src[y * w + xx] : -(T)EMB_INF; \
                                if (!started) { best = v; at = inside ? y * w + xx : -1; started = 1; } \
                                else if (best == best && (v != v || v > best)) { \
                                    best = v; \
                                    at = inside ? y * w + xx : -1; \
                                } \
                            } \
                        } \
                        if (at >= 0) \
                            ACC[at] += (ACCT)gv1; \
                    } else { \
                        T share = (T)((ACCT)gv1 / size); \
                        for (ky = 0; ky < kh; ky++) { \
                            emb_i y = y0 + ky * dh; \
                            if (y < 0 || y >= h) continue; \
                            for (kx = 0; kx < kw; kx++) { \
                                emb_i xx = x0 + kx * dw; \
                                if (xx >= 0 && xx < w) \
                                    ACC[y * w + xx] += (ACCT)share; \
                            } \
                        } \
                    } \
                }

/* Float32 2x2 max-pool gradient windows, a vector of L at a time: the rows' elements split into the
   windows' left and right ones, the scalar loop's flags as lane masks, the four gradients put back in
   place. A row of n >= L windows is taken whole, its last vector overlapping the one before (the same
   values written twice), so LeNet's 14 and 5 windows a row go by vector too (where EMB_SHUFFLE is
   set). */
#ifdef EMB_SHUFFLE
#define PG_SELECT(m, x, y) ((VF)(((VI)(x) & (m)) | ((VI)(y) & ~(m))))

/* windows [0, n) of one pair of rows, n >= L: the picks of POOL_GRAD_MAX2's scalar loop */
#define PG_ROWS(L) \
    typedef float pg_vf##L __attribute__((vector_size(L * 4), aligned(4), may_alias)); \
    typedef int32_t pg_vi##L __attribute__((vector_size(L * 4))); \
    static void pool_grad_max2_rows##L(const float *EMB_RESTRICT r0, const float *EMB_RESTRICT r1, \
                                       const float *EMB_RESTRICT gr, float *g0, float *g1, emb_i n) \
    { \
        typedef pg_vf##L VF; \
        typedef pg_vi##L VI; \
        const VF zero = {0}; \
        emb_i at, ox; \
        for (at = 0; at < n; at += L) { \
            ox = at + L <= n ? at : n - L; \
            VF top0 = *(const VF *)(r0 + 2 * ox), top1 = *(const VF *)(r0 + 2 * ox + L); \
            VF bot0 = *(const VF *)(r1 + 2 * ox), bot1 = *(const VF *)(r1 + 2 * ox + L); \
            VF a = __builtin_shufflevector(top0, top1, EMB_EVEN##L); \
            VF b = __builtin_shufflevector(top0, top1, EMB_ODD##L); \
            VF c = __builtin_shufflevector(bot0, bot1, EMB_EVEN##L); \
            VF d = __builtin_shufflevector(bot0, bot1, EMB_ODD##L); \
            VF best = a, gv = zero + *(const VF *)(gr + ox); \
            VI na = a != a, nb = b != b, nc = c != c, nan = na | nb | nc | (d != d), ha, hb, hc, hd; \
            VF ga, gb, gc, gd; \
            best = PG_SELECT(b > best, b, best); \
            best = PG_SELECT(c > best, c, best); \
            best = PG_SELECT(d > best, d, best); \
            ha = (nan & na) | (~nan & (a == best)); \
            hb = ~ha & ((nan & nb) | (~nan & (b == best))); \
            hc = ~(ha | hb) & ((nan & nc) | (~nan & (c == best))); \
            hd = ~(ha | hb | hc); \
            ga = (VF)((VI)gv & ha); \
            gb = (VF)((VI)gv & hb); \
            gc = (VF)((VI)gv & hc); \
            gd = (VF)((VI)gv & hd); \
            *(VF *)(g0 + 2 * ox) = __builtin_shufflevector(ga, gb, EMB_LO##L); \
            *(VF *)(g0 + 2 * ox + L) = __builtin_shufflevector(ga, gb, EMB_HI##L); \
            *(VF *)(g1 + 2 * ox) = __builtin_shufflevector(gc, gd, EMB_LO##L); \
            *(VF *)(g1 + 2 * ox + L) = __builtin_shufflevector(gc, gd, EMB_HI##L); \
        } \
    }
PG_ROWS(4)
#if EMB_VEC_BYTES >= 32
PG_ROWS(8)
#endif
#if EMB_VEC_BYTES >= 64
PG_ROWS(16)
#endif

/* the row pair's windows by the widest vector that fits; returns how many it took (all, or none) */
static emb_i pool_grad_max2_rows_f32(const float *r0, const float *r1, const float *gr, float *g0, float *g1,
                                     emb_i n)
{
#if EMB_VEC_BYTES >= 64
    if (n >= 16) {
        pool_grad_max2_rows16(r0, r1, gr, g0, g1, n);
        return n;
    }
#endif
#if EMB_VEC_BYTES >= 32
    if (n >= 8) {
        pool_grad_max2_rows8(r0, r1, gr, g0, g1, n);
        return n;
    }
#endif
    if (n >= 4) {
        pool_grad_max2_rows4(r0, r1, gr, g0, g1, n);
        return n;
    }
    return 0;
}
#define PG_ROWS_F32 pool_grad_max2_rows_f32
#undef PG_SELECT
#else
#define PG_ROWS_F32(r0, r1, gr, g0, g1, n) 0
#endif
#define PG_NONE(r0, r1, gr, g0, g1, n) 0

/* the gradient of the 2x2 max pool (k_conv.c's pool_max2): each window's gradient, added to 0 as
   the general path adds it, goes to its first max (its first nan), the rest of the plane is 0;
   VECTOR_ROWS(r0, r1, gr, g0, g1, ow) takes a row pair's windows by vector and says how many */
#define POOL_GRAD_MAX2(T, VECTOR_ROWS) \
    { \
        const T *x = (const T *)xv, *g = (const T *)gv; \
        T *gx = (T *)gxv; \
        emb_i h = P(H), w = P(W), oh = P(OH), ow = P(OW), plane, oy, ox, i; \
        const T z = 0; \
        for (plane = plane0; plane < plane1; plane++) { \
            const T *src = x + plane * h * w; \
            const T *gp = g + plane * oh * ow; \
            T *gxp = gx + plane * h * w; \
            if (2 * oh != h || 2 * ow != w) \
                for (i = 0; i < h * w; i++) gxp[i] = 0; \
            for (oy = 0; oy < oh; oy++) { \
                const T *EMB_RESTRICT r0 = src + 2 * oy * w, *EMB_RESTRICT r1 = r0 + w; \
                T *g0 = gxp + 2 * oy * w, *g1 = g0 + w; \
                const T *EMB_RESTRICT gr = gp + oy * ow; \
                for (ox = VECTOR_ROWS(r0, r1, gr, g0, g1, ow); ox < ow; ox++) { \
                    T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1], best = a; \
                    T gv1 = gr[ox]; \
                    /* bitwise flags and an index, no ?: : branches on random data mispredict */ \
                    int na = a != a, nb = b != b, nc = c != c, nan = na | nb | nc | (d != d), ha, hb, hc; \
                    emb_i at; \
                    best = b > best ? b : best; \
                    best = c > best ? c : best; \
                    best = d > best ? d : best; \
                    ha = (na & nan) | ((a == best) & (nan ^ 1)); \
                    hb = (ha ^ 1) & ((nb & nan) | ((b == best) & (nan ^ 1))); \
                    hc = (ha | hb) ^ 1; \
                    hc &= (nc & nan) | ((c == best) & (nan ^ 1)); \
                    at = 3 - 3 * ha - 2 * hb - hc; /* 0..3: a, b, c, d */ \
                    g0[2 * ox] = z; \
                    g0[2 * ox + 1] = z; \
                    g1[2 * ox] = z; \
                    g1[2 * ox + 1] = z; \
                    g0[(at >> 1) * w + 2 * ox + (at & 1)] = z + gv1; \
                } \
            } \
        } \
        return; \
    }

#define POOL_GRAD(T) \
    { \
        const T *x = (const T *)xv, *g = (const T *)gv; \
        T *gx = (T *)gxv; \
        double *acc = (double *)workv; \
        emb_i h = P(H), w = P(W), oh = P(OH), ow = P(OW), plane, oy, ox, ky, kx, i; \
        emb_i kh = P(KH), kw = P(KW), sh = P(SH), sw = P(SW), dh = P(DH), dw = P(DW), pt = P(PT), pl = P(PL); \
        double size = (double)(kh * kw); \
        /* windows that share no element: each sum has one term, added in T to 0 (exact) */ \
        int apart = sh >= (kh - 1) * dh + 1 && sw >= (kw - 1) * dw + 1; \
        for (plane = plane0; plane < plane1; plane++) { \
            const T *src = x + plane * h * w; \
            const T *gp = g + plane * oh * ow; \
            T *gxp = gx + plane * h * w; \
            if (apart) { \
                for (i = 0; i < h * w; i++) gxp[i] = 0; \
                POOL_GRAD_WINDOWS(T, gxp, T) \
                continue; \
            } \
            for (i = 0; i < h * w; i++) acc[i] = 0.0; \
            POOL_GRAD_WINDOWS(T, acc, double) \
            for (i = 0; i < h * w; i++) gxp[i] = (T)acc[i]; \
        } \
        return; \
    }

/* the input gradient of planes [plane0, plane1) of the N * C; work holds H * W doubles */
void EMB_FN(pool2d_grad)(int op, int dtype, const emb_i *p, emb_i plane0, emb_i plane1, const void *xv,
                         const void *gv, void *gxv, void *workv)
{
    if (pool_max2(op, p)) {
        if (dtype == EMB_F64)
            POOL_GRAD_MAX2(double, PG_NONE)
        POOL_GRAD_MAX2(float, PG_ROWS_F32)
    }
    if (dtype == EMB_F64)
        POOL_GRAD(double)
    POOL_GRAD(float)
}
