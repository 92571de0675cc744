/* conv2d and its gradients with the batch in the vector lanes (p as for conv, k_conv.c).

   A group of L images is laid out (C, Hp, Wp, L): each padded plane's element holds its L images side
   by side. A conv output position is then a product's column block of L with no wasted columns, and
   a stride-1 output row a contiguous run of OW * L: at LeNet's sizes (10 x 10 outputs, 64 images) the
   per-image GEMMs are badly shaped (N = 100) or waste a third of their columns (the padded-row trick
   of k_conv.c), and im2col/col2im move rows of 10 elements. Here, with register tiles of their own:
     forward        out(o, pos, :) = W_g (og, k) @ B, B's rows (c, ky, kx) read in place (an offset table)
     input grad     cols (k, L) = W_g^T @ G(:, pos, :), each tile added in registers into the padded
                    gradient (no cols buffer, no scatter loop)
     weight grad    gW(o, q) = sum over output rows of dot(G(o, row, :), X(q, row, :)), runs of OW * L
   Images go in groups small enough that the group's layouts (EMB_CONV_LANES_BYTES) stay in L2; the
   layouts are block transposes in registers. Only where the ISA build has vectors. */
#include "k_common.h"
#include "k_transpose.h"

#ifndef EMB_CONV_LANES_BYTES
#define EMB_CONV_LANES_BYTES (1 << 20) /* most bytes of one group's input and output layouts */
#endif
#define EMB_CONV_LANES_MIN 16 /* fewer images than this keep the per-image paths */

#define P(name) p[EMB_CV_##name]

static emb_i lanes_hp(const emb_i *p)
{
    return P(H) + P(PT) + P(PB);
}

static emb_i lanes_wp(const emb_i *p)
{
    return P(W) + P(PL) + P(PR);
}

static emb_i lanes_k(const emb_i *p)
{
    return P(C) / P(G) * P(KH) * P(KW);
}

/* elements of one image in a group's two layouts: the padded input side and the output side */
static emb_i lanes_per_image(const emb_i *p)
{
    return P(C) * lanes_hp(p) * lanes_wp(p) + P(O) * P(OH) * P(OW);
}

static emb_i lanes_cap(int dtype, const emb_i *p)
{
    emb_i per = lanes_per_image(p) * (dtype == EMB_F64 ? 8 : 4);
    return per > 0 ? EMB_CONV_LANES_BYTES / per : 0;
}

/* images per group for `count` images (EMB_LANES_FORWARD, _INPUT or _WEIGHT), 0 where the per-image
   path serves: too few images, images too large for a group of EMB_CONV_LANES_MIN, or (the weight
   gradient's runs) a column stride */
emb_i EMB_FN(conv_lanes)(int dtype, const emb_i *p, int kind, emb_i count)
{
#ifdef EMB_VEC_BYTES
    emb_i cap = lanes_cap(dtype, p), groups;
    if (count < EMB_CONV_LANES_MIN || cap < EMB_CONV_LANES_MIN || P(OH) * P(OW) == 0 || lanes_k(p) == 0)
        return 0;
    if (kind == EMB_LANES_WEIGHT && P(SW) != 1)
        return 0;
    groups = (count + cap - 1) / cap;
    return (count + groups - 1) / groups;
#else
    (void)dtype, (void)p, (void)kind, (void)count;
    return 0;
#endif
}

/* elements of the dtype a lanes kernel needs as workspace (any count, any kind) */
emb_i EMB_FN(conv_lanes_work)(int dtype, const emb_i *p)
{
    emb_i cap = lanes_cap(dtype, p), k = lanes_k(p);
    /* the offset table (int64), then the two layouts from a cache line */
    return k * 8 / (dtype == EMB_F64 ? 8 : 4) + 16 + cap * lanes_per_image(p);
}

#ifdef EMB_VEC_BYTES

/* the layouts start on a cache line: a vector load across two lines costs two */
static void *lanes_align(void *p)
{
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* forward tile: LANES_FR output channels by LANES_FV vectors of output columns (LeNet's 6 and 16
   channels take one tile of 6 rows, or 6 + 6 + 4) */
#if EMB_VEC_BYTES >= 64
#define LANES_FR 6
#define LANES_FV 4
#else
#define LANES_FR 4
#define LANES_FV 2
#endif

/* input-gradient tile: LANES_RS rows of cols (patch elements) by two vectors of images */
#if EMB_VEC_BYTES >= 64
#define LANES_RS 8
#else
#define LANES_RS 4
#endif

/* weight-gradient tile: LANES_RO output channels by LANES_RQ rows of the input, kept in registers */
#if EMB_VEC_BYTES >= 64
#define LANES_RO 4
#else
#define LANES_RO 2
#endif
#define LANES_RQ 4


/* lanes_product's row blocks below LANES_FR, each with its row count a constant */
#define LANES_FR_CASE(SUF, R) \
    case R: \
        lanes_product_rows_##SUF(R, nj, k, a + i * k, b + j, off, c + i * ldc + j, ldc); \
        break;
#if LANES_FR > 4
#define LANES_FR_CASES(SUF) LANES_FR_CASE(SUF, 6) LANES_FR_CASE(SUF, 5) LANES_FR_CASE(SUF, 4) \
    LANES_FR_CASE(SUF, 3) LANES_FR_CASE(SUF, 2)
#else
#define LANES_FR_CASES(SUF) LANES_FR_CASE(SUF, 4) LANES_FR_CASE(SUF, 3) LANES_FR_CASE(SUF, 2)
#endif

/* the layouts and the three kernels for one float type T with vectors V of VL lanes */
#define LANES_KERNELS(T, SUF, V) \
    /* planes (n, c, h, w) of images [0, L) of src into dst (c, h + pt + pb, w + pl + pr, L), pads 0: \
       a transpose per padded row, or per plane where rows have no side pads */ \
    static void to_lanes_##SUF(const T *src, emb_i c, emb_i h, emb_i w, emb_i pt, emb_i pb, emb_i pl, emb_i pr, \
                               T *dst, emb_i L) \
    { \
        emb_i hp = h + pt + pb, wp = w + pl + pr, plane = h * w, step = pl || pr ? 1 : h, ch, y, i; \
        if (pt || pb || pl || pr) \
            for (i = 0; i < c * hp * wp * L; i++) dst[i] = 0; \
        for (ch = 0; ch < c; ch++) \
            for (y = 0; y < h; y += step) \
                transpose_##SUF(src + ch * plane + y * w, c * plane, L, step * w, \
                                dst + ((ch * hp + y + pt) * wp + pl) * L, L, 0); \
    } \
    /* the inverse: dst (n, c, h, w) from the interior of src (c, hp, wp, L), plus bias[ch] where given */ \
    static void from_lanes_##SUF(const T *src, emb_i c, emb_i h, emb_i w, emb_i pt, emb_i pl, emb_i hp, emb_i wp, \
                                 const T *bias, T *dst, emb_i L) \
    { \
        emb_i plane = h * w, step = wp != w ? 1 : h, ch, y; \
        for (ch = 0; ch < c; ch++) \
            for (y = 0; y < h; y += step) \
                transpose_##SUF(src + ((ch * hp + y + pt) * wp + pl) * L, L, step * w, L, dst + ch * plane + y * w, \
                                c * plane, bias ? bias + ch : 0); \
    } \
    /* row q = (c, ky, kx) of group gi's patch: its offset in a (C, Hp, Wp, L) layout */ \
    static void lanes_offsets_##SUF(const emb_i *p, emb_i gi, emb_i L, emb_i *off) \
    { \
        emb_i cg = P(C) / P(G), hp = lanes_hp(p), wp = lanes_wp(p), c, ky, kx, q = 0; \
        for (c = 0; c < cg; c++) \
            for (ky = 0; ky < P(KH); ky++) \
                for (kx = 0; kx < P(KW); kx++) \
                    off[q++] = (((gi * cg + c) * hp + ky * P(DH)) * wp + kx * P(DW)) * L; \
    } \
    /* rows [0, R) of C (row stride ldc), NVT vectors from its column 0, = A (rows of k) @ B, B's row q \
       at b + off[q]: each sum over q in order from 0, as gemm_tmpl.h's direct path sums it */ \
    static inline __attribute__((always_inline)) void lanes_product_tile_##SUF( \
        int R, int NVT, emb_i k, const T *a, const T *b, const emb_i *off, T *c, emb_i ldc) \
    { \
        enum { VL = sizeof(V) / sizeof(T) }; \
        V acc[LANES_FR][LANES_FV], bv[LANES_FV]; \
        emb_i q; \
        int r, v; \
        for (r = 0; r < R; r++) \
            for (v = 0; v < NVT; v++) acc[r][v] = (V){0}; \
        for (q = 0; q < k; q++) { \
            const T *brow = b + off[q]; \
            for (v = 0; v < NVT; v++) bv[v] = *(const V *)(brow + v * VL); \
            for (r = 0; r < R; r++) { \
                T av = a[r * k + q]; \
                for (v = 0; v < NVT; v++) acc[r][v] += av * bv[v]; \
            } \
        } \
        for (r = 0; r < R; r++) \
            for (v = 0; v < NVT; v++) *(V *)(c + r * ldc + v * VL) = acc[r][v]; \
    } \
    static inline __attribute__((always_inline)) void lanes_product_rows_##SUF( \
        int R, emb_i n, emb_i k, const T *a, const T *b, const emb_i *off, T *c, emb_i ldc) \
    { \
        enum { VL = sizeof(V) / sizeof(T) }; \
        emb_i j = 0, q; \
        int r; \
        for (; j + LANES_FV * VL <= n; j += LANES_FV * VL) \
            lanes_product_tile_##SUF(R, LANES_FV, k, a, b + j, off, c + j, ldc); \
        for (; j + VL <= n; j += VL) \
            lanes_product_tile_##SUF(R, 1, k, a, b + j, off, c + j, ldc); \
        for (; j < n; j++) \
            for (r = 0; r < R; r++) { \
                T s = 0; \
                for (q = 0; q < k; q++) s += a[r * k + q] * b[off[q] + j]; \
                c[r * ldc + j] = s; \
            } \
    } \
    /* C (m, n) = A (m, k) @ B, B's rows read in place through off: the forward's product, a block of \
       columns at a time through every row, so the block's B (k rows of LANES_FV vectors) is read from \
       L2 once and from L1 by the other row blocks */ \
    static void lanes_product_##SUF(emb_i m, emb_i n, emb_i k, const T *a, const T *b, const emb_i *off, T *c, \
                                    emb_i ldc) \
    { \
        enum { VL = sizeof(V) / sizeof(T) }; \
        emb_i i, j, nj; \
        for (j = 0; j < n; j += LANES_FV * VL) { \
            nj = EMB_MIN(LANES_FV * VL, n - j); \
            for (i = 0; i < m; i += LANES_FR) \
                switch (EMB_MIN(LANES_FR, m - i)) { \
                LANES_FR_CASES(SUF) \
                default: lanes_product_rows_##SUF(1, nj, k, a + i * k, b + j, off, c + i * ldc + j, ldc); \
                } \
        } \
    } \
    static void lanes_forward_##SUF(const emb_i *p, const T *x, const T *w, const T *bias, T *out, emb_i b0, \
                                    emb_i b1, void *workv) \
    { \
        emb_i k = lanes_k(p), og = P(O) / P(G), hp = lanes_hp(p), wp = lanes_wp(p); \
        emb_i oh = P(OH), ow = P(OW), ohw = oh * ow, chw = P(C) * P(H) * P(W); \
        emb_i group = EMB_FN(conv_lanes)(sizeof(T) == 8 ? EMB_F64 : EMB_F32, p, EMB_LANES_FORWARD, b1 - b0); \
        emb_i *off = (emb_i *)workv, n0, gi, oy, ox; \
        T *xt = (T *)lanes_align(off + k), *ot = xt + group * P(C) * hp * wp; \
        for (n0 = b0; n0 < b1; n0 += group) { \
            emb_i L = EMB_MIN(group, b1 - n0); \
            to_lanes_##SUF(x + n0 * chw, P(C), P(H), P(W), P(PT), P(PB), P(PL), P(PR), xt, L); \
            for (gi = 0; gi < P(G); gi++) { \
                const T *wg = w + gi * og * k; \
                T *out_g = ot + gi * og * ohw * L; \
                lanes_offsets_##SUF(p, gi, L, off); \
                for (oy = 0; oy < oh; oy++) { \
                    const T *row = xt + oy * P(SH) * wp * L; \
                    if (P(SW) == 1) /* the output row's positions side by side: one run of ow * L */ \
                        lanes_product_##SUF(og, ow * L, k, wg, row, off, out_g + oy * ow * L, ohw * L); \
                    else \
                        for (ox = 0; ox < ow; ox++) \
                            lanes_product_##SUF(og, L, k, wg, row + ox * P(SW) * L, off, \
                                                out_g + (oy * ow + ox) * L, ohw * L); \
                } \
            } \
            from_lanes_##SUF(ot, P(O), oh, ow, 0, 0, oh, ow, bias, out + n0 * P(O) * ohw, L); \
        } \
    } \
    /* rows [q, q + R) of cols = W_g^T G at one output position, NVT vectors of images from column j, \
       added straight into the padded gradient (row r at at + off[r]): wq is W_g from column q, \
       gcol G's column block (row o at o * gs) */ \
    static inline __attribute__((always_inline)) void lanes_scatter_tile_##SUF( \
        int R, int NVT, emb_i og, const T *wq, emb_i k, const T *gcol, emb_i gs, T *at, const emb_i *off) \
    { \
        enum { VL = sizeof(V) / sizeof(T) }; \
        V acc[LANES_RS][2], gv[2]; \
        emb_i o; \
        int r, v; \
        for (r = 0; r < R; r++) \
            for (v = 0; v < NVT; v++) acc[r][v] = *(const V *)(at + off[r] + v * VL); \
        for (o = 0; o < og; o++) { \
            for (v = 0; v < NVT; v++) gv[v] = *(const V *)(gcol + o * gs + v * VL); \
            for (r = 0; r < R; r++) { \
                T a = wq[o * k + r]; \
                for (v = 0; v < NVT; v++) acc[r][v] += a * gv[v]; \
            } \
        } \
        for (r = 0; r < R; r++) \
            for (v = 0; v < NVT; v++) *(V *)(at + off[r] + v * VL) = acc[r][v]; \
    } \
    /* rows [q, q + R) over all L images: two vectors, one, then one image at a time */ \
    static inline __attribute__((always_inline)) void lanes_scatter_rows_##SUF( \
        int R, emb_i og, const T *wq, emb_i k, const T *gcol, emb_i gs, T *at, const emb_i *off, emb_i L) \
    { \
        enum { VL = sizeof(V) / sizeof(T) }; \
        emb_i j = 0, o; \
        int r; \
        for (; j + 2 * VL <= L; j += 2 * VL) \
            lanes_scatter_tile_##SUF(R, 2, og, wq, k, gcol + j, gs, at + j, off); \
        if (j + VL <= L) { \
            lanes_scatter_tile_##SUF(R, 1, og, wq, k, gcol + j, gs, at + j, off); \
            j += VL; \
        } \
        for (; j < L; j++) \
            for (r = 0; r < R; r++) { \
                T s = at[off[r] + j]; \
                for (o = 0; o < og; o++) s += wq[o * k + r] * gcol[o * gs + j]; \
                at[off[r] + j] = s; \
            } \
    } \
    static void lanes_grad_input_##SUF(const emb_i *p, const T *g, const T *w, T *gx, emb_i b0, emb_i b1, \
                                       void *workv) \
    { \
        emb_i k = lanes_k(p), og = P(O) / P(G), hp = lanes_hp(p), wp = lanes_wp(p); \
        emb_i oh = P(OH), ow = P(OW), ohw = oh * ow, chw = P(C) * P(H) * P(W); \
        emb_i group = EMB_FN(conv_lanes)(sizeof(T) == 8 ? EMB_F64 : EMB_F32, p, EMB_LANES_INPUT, b1 - b0); \
        emb_i *off = (emb_i *)workv, n0, gi, oy, ox, q, i; \
        T *gxt = (T *)lanes_align(off + k), *gt = gxt + group * P(C) * hp * wp; \
        for (n0 = b0; n0 < b1; n0 += group) { \
            emb_i L = EMB_MIN(group, b1 - n0); \
            to_lanes_##SUF(g + n0 * P(O) * ohw, P(O), oh, ow, 0, 0, 0, 0, gt, L); \
            for (i = 0; i < P(C) * hp * wp * L; i++) gxt[i] = 0; \
            for (gi = 0; gi < P(G); gi++) { \
                const T *wg = w + gi * og * k; \
                lanes_offsets_##SUF(p, gi, L, off); \
                for (oy = 0; oy < oh; oy++) \
                    for (ox = 0; ox < ow; ox++) { \
                        T *at = gxt + (oy * P(SH) * wp + ox * P(SW)) * L; \
                        const T *gcol = gt + (gi * og * ohw + oy * ow + ox) * L; \
                        q = 0; \
                        for (; q + LANES_RS <= k; q += LANES_RS) \
                            lanes_scatter_rows_##SUF(LANES_RS, og, wg + q, k, gcol, ohw * L, at, off + q, L); \
                        if (LANES_RS > 4 && q + 4 <= k) { \
                            lanes_scatter_rows_##SUF(4, og, wg + q, k, gcol, ohw * L, at, off + q, L); \
                            q += 4; \
                        } \
                        if (q + 2 <= k) { \
                            lanes_scatter_rows_##SUF(2, og, wg + q, k, gcol, ohw * L, at, off + q, L); \
                            q += 2; \
                        } \
                        if (q < k) \
                            lanes_scatter_rows_##SUF(1, og, wg + q, k, gcol, ohw * L, at, off + q, L); \
                    } \
            } \
            from_lanes_##SUF(gxt, P(C), P(H), P(W), P(PT), P(PL), hp, wp, 0, gx + n0 * chw, L); \
        } \
    } \
    /* gW(o, q) += sum over output rows of G(o, row) . X(q, row), LANES_RO x LANES_RQ of them at once; \
       rows past the edge repeat the last one and are not stored */ \
    static void lanes_weight_tile_##SUF(const emb_i *p, const T *gt, const T *xt, const emb_i *off, emb_i L, \
                                        emb_i ro, emb_i rq, T *gw, emb_i k) \
    { \
        enum { VL = sizeof(V) / sizeof(T) }; \
        const T *gr[LANES_RO], *xr[LANES_RQ]; \
        V acc[LANES_RO][LANES_RQ]; \
        T tail[LANES_RO][LANES_RQ]; \
        emb_i oh = P(OH), ow = P(OW), wp = lanes_wp(p), run = ow * L, oy, e; \
        int i, j, l; \
        for (i = 0; i < LANES_RO; i++) \
            for (j = 0; j < LANES_RQ; j++) { \
                acc[i][j] = (V){0}; \
                tail[i][j] = 0; \
            } \
        for (oy = 0; oy < oh; oy++) { \
            for (i = 0; i < LANES_RO; i++) gr[i] = gt + (EMB_MIN(i, ro - 1) * oh + oy) * run; \
            for (j = 0; j < LANES_RQ; j++) xr[j] = xt + off[EMB_MIN(j, rq - 1)] + oy * P(SH) * wp * L; \
            for (e = 0; e + VL <= run; e += VL) { \
                V gv[LANES_RO], xv[LANES_RQ]; \
                for (i = 0; i < LANES_RO; i++) gv[i] = *(const V *)(gr[i] + e); \
                for (j = 0; j < LANES_RQ; j++) xv[j] = *(const V *)(xr[j] + e); \
                for (i = 0; i < LANES_RO; i++) \
                    for (j = 0; j < LANES_RQ; j++) acc[i][j] += gv[i] * xv[j]; \
            } \
            for (; e < run; e++) \
                for (i = 0; i < LANES_RO; i++) \
                    for (j = 0; j < LANES_RQ; j++) tail[i][j] += gr[i][e] * xr[j][e]; \
        } \
        for (i = 0; i < ro; i++) \
            for (j = 0; j < rq; j++) { \
                T s = tail[i][j]; \
                for (l = 0; l < VL; l++) s += acc[i][j][l]; \
                gw[i * k + j] += s; \
            } \
    } \
    static void lanes_grad_weight_##SUF(const emb_i *p, const T *x, const T *g, T *gw, emb_i b0, emb_i b1, \
                                        void *workv) \
    { \
        emb_i k = lanes_k(p), og = P(O) / P(G), hp = lanes_hp(p), wp = lanes_wp(p); \
        emb_i ohw = P(OH) * P(OW), chw = P(C) * P(H) * P(W); \
        emb_i group = EMB_FN(conv_lanes)(sizeof(T) == 8 ? EMB_F64 : EMB_F32, p, EMB_LANES_WEIGHT, b1 - b0); \
        emb_i *off = (emb_i *)workv, n0, gi, o0, q0, i; \
        T *xt = (T *)lanes_align(off + k), *gt = xt + group * P(C) * hp * wp; \
        for (i = 0; i < P(O) * k; i++) gw[i] = 0; \
        for (n0 = b0; n0 < b1; n0 += group) { \
            emb_i L = EMB_MIN(group, b1 - n0); \
            to_lanes_##SUF(x + n0 * chw, P(C), P(H), P(W), P(PT), P(PB), P(PL), P(PR), xt, L); \
            to_lanes_##SUF(g + n0 * P(O) * ohw, P(O), P(OH), P(OW), 0, 0, 0, 0, gt, L); \
            for (gi = 0; gi < P(G); gi++) { \
                lanes_offsets_##SUF(p, gi, L, off); \
                for (o0 = 0; o0 < og; o0 += LANES_RO) \
                    for (q0 = 0; q0 < k; q0 += LANES_RQ) \
                        lanes_weight_tile_##SUF(p, gt + (gi * og + o0) * ohw * L, xt, off + q0, L, \
                                                EMB_MIN(LANES_RO, og - o0), EMB_MIN(LANES_RQ, k - q0), \
                                                gw + (gi * og + o0) * k + q0, k); \
            } \
        } \
    }

typedef float lanes_vf __attribute__((vector_size(EMB_VEC_BYTES), aligned(4), may_alias));
typedef double lanes_vd __attribute__((vector_size(EMB_VEC_BYTES), aligned(8), may_alias));
LANES_KERNELS(float, f32, lanes_vf)
LANES_KERNELS(double, f64, lanes_vd)
#undef LANES_KERNELS
#endif

/* images [b0, b1) of conv2d (bias per output channel where given), of its input gradient (gx from g and
   w) or its weight gradient (gw, summed over those images, from x and g): the caller checked
   conv_lanes(dtype, p, kind, b1 - b0) > 0; work holds conv_lanes_work elements */
void EMB_FN(conv_lanes_run)(int dtype, int kind, const emb_i *p, const void *a, const void *b, const void *bias,
                            void *out, emb_i b0, emb_i b1, void *work)
{
#ifdef EMB_VEC_BYTES
    if (dtype == EMB_F64) {
        if (kind == EMB_LANES_FORWARD)
            lanes_forward_f64(p, (const double *)a, (const double *)b, (const double *)bias, (double *)out, b0, b1,
                              work);
        else if (kind == EMB_LANES_INPUT)
            lanes_grad_input_f64(p, (const double *)a, (const double *)b, (double *)out, b0, b1, work);
        else
            lanes_grad_weight_f64(p, (const double *)a, (const double *)b, (double *)out, b0, b1, work);
        return;
    }
    if (kind == EMB_LANES_FORWARD)
        lanes_forward_f32(p, (const float *)a, (const float *)b, (const float *)bias, (float *)out, b0, b1, work);
    else if (kind == EMB_LANES_INPUT)
        lanes_grad_input_f32(p, (const float *)a, (const float *)b, (float *)out, b0, b1, work);
    else
        lanes_grad_weight_f32(p, (const float *)a, (const float *)b, (float *)out, b0, b1, work);
#else
    (void)dtype, (void)kind, (void)p, (void)a, (void)b, (void)bias, (void)out, (void)b0, (void)b1, (void)work;
#endif
}
