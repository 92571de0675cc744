/* conv2d as GEMM, and pooling. 1-D convs and pools run as 2-D with H = 1.

   Stride 1: the input is zero-padded once (xp), and the GEMM's B reads it in place: row (c, ky, kx)
   of B starts at that channel's plane, shifted by (ky * DH, kx * DW), and column j walks the padded
   plane row-major, so output (oy, ox) is column oy * Wp + ox; the Wp - OW columns between rows are
   computed and dropped. Other strides: an explicit im2col matrix per image and group. */
#include "k_common.h"

#ifndef EMB_CONV_CHUNK
#define EMB_CONV_CHUNK 4096 /* most output columns one conv_tile call takes */
#endif

#define P(name) p[EMB_CV_##name]

static int conv_direct(const emb_i *p)
{
    return P(SH) == 1 && P(SW) == 1;
}

static emb_i conv_k(const emb_i *p)
{
    return P(C) / P(G) * P(KH) * P(KW);
}

emb_i EMB_FN(conv_columns)(const emb_i *p)
{
    emb_i wp = P(W) + P(PL) + P(PR);
    if (conv_direct(p))
        return (P(OH) - 1) * wp + P(OW);
    return P(OH) * P(OW);
}

/* elements of the prepared input: padded planes, or im2col matrices */
emb_i EMB_FN(conv_prepare_size)(int dtype, const emb_i *p)
{
    (void)dtype;
    if (conv_direct(p))
        return P(N) * P(C) * (P(H) + P(PT) + P(PB)) * (P(W) + P(PL) + P(PR));
    return P(N) * P(G) * conv_k(p) * P(OH) * P(OW);
}

#define PREPARE(T) \
    { \
        const T *x = (const T *)xv; \
        T *xp = (T *)xpv; \
        emb_i h = P(H), w = P(W), hp = h + P(PT) + P(PB), wp = w + P(PL) + P(PR); \
        if (conv_direct(p)) { \
            emb_i plane, r, q; \
            for (plane = 0; plane < P(N) * P(C); plane++) { \
                const T *src = x + plane * h * w; \
                T *dst = xp + plane * hp * wp; \
                for (r = 0; r < hp; r++) { \
                    emb_i y = r - P(PT); \
                    T *drow = dst + r * wp; \
                    if (y < 0 || y >= h) { \
                        for (q = 0; q < wp; q++) drow[q] = 0; \
                        continue; \
                    } \
                    for (q = 0; q < P(PL); q++) drow[q] = 0; \
                    for (q = 0; q < w; q++) drow[P(PL) + q] = src[y * w + q]; \
                    for (q = P(PL) + w; q < wp; q++) drow[q] = 0; \
                } \
            } \
        } else { \
            emb_i cg = P(C) / P(G), k = conv_k(p), ohw = P(OH) * P(OW), b, c, ky, kx, oy, ox; \
            for (b = 0; b < P(N); b++) \
                for (c = 0; c < P(C); c++) { \
                    const T *plane = x + (b * P(C) + c) * h * w; \
                    emb_i g = c / cg; \
                    T *mat = xp + (b * P(G) + g) * k * ohw; \
                    for (ky = 0; ky < P(KH); ky++) \
                        for (kx = 0; kx < P(KW); kx++) { \
                            T *row = mat + (((c - g * cg) * P(KH) + ky) * P(KW) + kx) * ohw; \
                            for (oy = 0; oy < P(OH); oy++) { \
                                emb_i y = oy * P(SH) + ky * P(DH) - P(PT); \
                                T *r = row + oy * P(OW); \
                                if (y < 0 || y >= h) { \
                                    for (ox = 0; ox < P(OW); ox++) r[ox] = 0; \
                                    continue; \
                                } \
                                for (ox = 0; ox < P(OW); ox++) { \
                                    emb_i xx = ox * P(SW) + kx * P(DW) - P(PL); \
                                    r[ox] = (xx >= 0 && xx < w) ? plane[y * w + xx] : 0; \
                                } \
                            } \
                        } \
                } \
        } \
        return; \
    }

void EMB_FN(conv_prepare)(int dtype, const emb_i *p, const void *xv, void *xpv)
{
    if (dtype == EMB_F64)
        PREPARE(double)
    PREPARE(float)
}

emb_i EMB_FN(conv_tile_work)(int dtype, const emb_i *p)
{
    emb_i og = P(O) / P(G);
    emb_i gw = dtype == EMB_F64 ? EMB_FN(gemm_f64_work)() : EMB_FN(gemm_f32_work)();
    emb_i es = dtype == EMB_F64 ? 8 : 4;
    /* in elements of the dtype: boff table (int64), the output tile, the GEMM workspace */
    return conv_k(p) * 8 / es + og * EMB_CONV_CHUNK + gw + 64;
}

#define TILE(T, GEMM) \
    { \
        const T *xp = (const T *)xpv; \
        const T *w = (const T *)wv; \
        const T *bias = (const T *)biasv; \
        T *out = (T *)outv; \
        emb_i k = conv_k(p), og = P(O) / P(G), cg = P(C) / P(G); \
        emb_i hp = P(H) + P(PT) + P(PB), wp = P(W) + P(PL) + P(PR), ohw = P(OH) * P(OW); \
        emb_i nj = j1 - j0, q, o, j; \
        emb_i *boff = (emb_i *)workv; \
        T *ctile = (T *)(boff + k); \
        T *gwork = ctile + og * nj; \
        const T *wg = w + g * og * k; \
        T *outg = out + (b * P(O) + g * og) * ohw; \
        const T *bg = bias ? bias + g * og : 0; \
        if (conv_direct(p)) { \
            emb_i c, ky, kx; \
            const T *xb = xp + (b * P(C) + g * cg) * hp * wp; \
            q = 0; \
            for (c = 0; c < cg; c++) \
                for (ky = 0; ky < P(KH); ky++) \
                    for (kx = 0; kx < P(KW); kx++) \
                        boff[q++] = c * hp * wp + ky * P(DH) * wp + kx * P(DW); \
            GEMM(og, nj, k, wg, k, 1, xb + j0, boff, 0, 1, ctile, nj, 0, gwork); \
            for (o = 0; o < og; o++) { \
                const T *src = ctile + o * nj; \
                T *dst = outg + o * ohw; \
                T add = bg ? bg[o] : 0; \
                j = j0; \
                while (j < j1) { /* one padded row at a time: its first OW columns are outputs */ \
                    emb_i oy = j / wp, ox = j - oy * wp, q; \
                    emb_i run = EMB_MIN(j1 - j, wp - ox); \
                    emb_i valid = ox < P(OW) ? EMB_MIN(run, P(OW) - ox) : 0; \
                    const T *s = src + (j - j0); \
                    T *d = dst + oy * P(OW) + ox; \
                    if (bg) \
                        for (q = 0; q < valid; q++) d[q] = s[q] + add; \
                    else \
                        for (q = 0; q < valid; q++) d[q] = s[q]; \
                    j += run; \
                } \
            } \
        } else { \
            const T *mat = xp + (b * P(G) + g) * k * ohw; \
            GEMM(og, nj, k, wg, k, 1, mat + j0, 0, ohw, 1, ctile, nj, 0, gwork); \
            for (o = 0; o < og; o++) \
                for (j = j0; j < j1; j++) \
                    outg[o * ohw + j] = bg ? ctile[o * nj + j - j0] + bg[o] : ctile[o * nj + j - j0]; \
        } \
        return; \
    }

/* output columns [j0, j1) (at most EMB_CONV_CHUNK) of image b, group g; bias (one per output
   channel) is added when given */
void EMB_FN(conv_tile)(int dtype, const emb_i *p, const void *xpv, const void *wv, const void *biasv,
                       void *outv, emb_i b, emb_i g, emb_i j0, emb_i j1, void *workv)
{
    if (dtype == EMB_F64)
        TILE(double, EMB_FN(gemm_f64))
    TILE(float, EMB_FN(gemm_f32))
}

/* ---- pooling ---------------------------------------------------------------------------------- */

/* whether a pool is the common 2x2 max pool, stride 2, no padding, every window inside the image
   (k_conv_grad.c, in the same translation unit, takes its gradient the same way) */
static int pool_max2(int op, const emb_i *p)
{
    return op == EMB_P_MAX && P(KH) == 2 && P(KW) == 2 && P(SH) == 2 && P(SW) == 2 && P(DH) == 1 &&
           P(DW) == 1 && P(PT) == 0 && P(PL) == 0 && 2 * P(OH) <= P(H) && 2 * P(OW) <= P(W);
}

/* the 2x2 max pool with the general path's rule (the first max wins ties, a nan gives nan), with the
   parameters in registers: the general path reads them from memory for every window */
#define POOL_MAX2(T) \
    { \
        const T *x = (const T *)xv; \
        T *out = (T *)outv; \
        emb_i h = P(H), w = P(W), oh = P(OH), ow = P(OW), plane, oy, ox; \
        for (plane = plane0; plane < plane1; plane++) \
            for (oy = 0; oy < oh; oy++) { \
                const T *EMB_RESTRICT r0 = x + plane * h * w + 2 * oy * w, *EMB_RESTRICT r1 = r0 + w; \
                T *EMB_RESTRICT dst = out + plane * oh * ow + oy * ow; \
                for (ox = 0; ox < ow; ox++) { \
                    T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1], best = a; \
                    int nan = (a != a) | (b != b) | (c != c) | (d != d); \
                    best = b > best ? b : best; \
                    best = c > best ? c : best; \
                    best = d > best ? d : best; \
                    dst[ox] = nan ? (T)EMB_NAN : best; \
                } \
            } \
        return; \
    }

#define POOL(T) \
    { \
        const T *x = (const T *)xv; \
        T *out = (T *)outv; \
        emb_i h = P(H), w = P(W), oh = P(OH), ow = P(OW), plane, oy, ox, ky, kx; \
        double size = (double)(P(KH) * P(KW)); \
        for (plane = plane0; plane < plane1; plane++) { \
            const T *src = x + plane * h * w; \
            T *dst = out + plane * oh * ow; \
            for (oy = 0; oy < oh; oy++) \
                for (ox = 0; ox < ow; ox++) { \
                    emb_i y0 = oy * P(SH) - P(PT), x0 = ox * P(SW) - P(PL); \
                    if (op == EMB_P_MAX && y0 >= 0 && x0 >= 0 && y0 + (P(KH) - 1) * P(DH) < h && \
                        x0 + (P(KW) - 1) * P(DW) < w) { \
                        /* inside the image: selects instead of branches, nan noted on the side */ \
                        const T *r = src + y0 * w + x0; \
                        T best = r[0]; \
                        int nan = 0; \
                        for (ky = 0; ky < P(KH); ky++) \
                            for (kx = 0; kx < P(KW); kx++) { \
                                T v = r[ky * P(DH) * w + kx * P(DW)]; \
                                nan |= v != v; \
                                best = v > best ? v : best; \
                            } \
                        dst[oy * ow + ox] = nan ? (T)EMB_NAN : best; \
                    } else if (op == EMB_P_MAX) { \
                        T best = -(T)EMB_INF; \
                        int found_nan = 0; \
                        for (ky = 0; ky < P(KH) && !found_nan; ky++) { \
                            emb_i y = y0 + ky * P(DH); \
                            if (y < 0 || y >= h) continue; \
                            for (kx = 0; kx < P(KW); kx++) { \
                                emb_i xx = x0 + kx * P(DW); \
                                T v; \
                                if (xx < 0 || xx >= w) continue; \
                                v = src[y * w + xx]; \
                                if (v != v) { best = v; found_nan = 1; break; } \
                                if (v > best) best = v; \
                            } \
                        } \
                        dst[oy * ow + ox] = best; \
                    } else { \
                        double s = 0.0; \
                        for (ky = 0; ky < P(KH); ky++) { \
                            emb_i y = y0 + ky * P(DH); \
                            if (y < 0 || y >= h) continue; \
                            for (kx = 0; kx < P(KW); kx++) { \
                                emb_i xx = x0 + kx * P(DW); \
                                if (xx < 0 || xx >= w) continue; \
                                s += (double)src[y * w + xx]; \
                            } \
                        } \
                        dst[oy * ow + ox] = (T)(s / size); \
                    } \
                } \
        } \
        return; \
    }

/* planes [plane0, plane1) of the N * C planes; p as for conv (O and G unused) */
void EMB_FN(pool2d)(int op, int dtype, const emb_i *p, emb_i plane0, emb_i plane1, const void *xv,
                    void *outv)
{
    if (pool_max2(op, p)) {
        if (dtype == EMB_F64)
            POOL_MAX2(double)
        POOL_MAX2(float)
    }
    if (dtype == EMB_F64)
        POOL(double)
    POOL(float)
}
