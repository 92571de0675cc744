/* Matrix transposes in memory for float32 (by vector blocks where the compiler has shuffles) and
   float64: the conv kernels' batch-in-lanes layouts and the GEMM's packing of a B stored as rows
   (x @ w.T). Static, so each ISA build has its own copy. */
#ifndef EMB_K_TRANSPOSE_H
#define EMB_K_TRANSPOSE_H

#include "k_common.h"

/* dst[j * ds + i] = src[i * rs + j] (plus *add where given) for i < rows, j < cols: the edges of
   transpose_f32's blocks (rows below rv done up to column cv, rows below rh up to ch), and float64 */
#define TRANSPOSE_EDGES(rv, cv, rh, ch) \
    for (i = 0; i < rows; i++) \
        for (j = i < (rv) ? (cv) : i < (rh) ? (ch) : 0; j < cols; j++) \
            dst[j * ds + i] = add ? src[i * rs + j] + *add : src[i * rs + j];

static EMB_UNUSED void transpose_f64(const double *src, emb_i rs, emb_i rows, emb_i cols, double *dst, emb_i ds,
                                     const double *add)
{
    emb_i i, j;
    TRANSPOSE_EDGES(0, 0, 0, 0)
}

/* float32 by square blocks of one vector's lanes, each transposed in registers: log2(lanes) rounds
   of interleaving row r with row r + lanes / 2 (four rounds of 16 shuffles for 16 lanes); then
   the rows left over by half vectors (a GEMM's panel of 8 rows, where vectors hold 16) */
#if defined(EMB_SHUFFLE) && EMB_VEC_BYTES >= 16
#define TR_VL (EMB_VEC_BYTES / 4)
#if TR_VL == 16
#define TR_LO EMB_LO16
#define TR_HI EMB_HI16
#define TR_HLO EMB_LO8
#define TR_HHI EMB_HI8
#elif TR_VL == 8
#define TR_LO EMB_LO8
#define TR_HI EMB_HI8
#define TR_HLO EMB_LO4
#define TR_HHI EMB_HI4
#else
#define TR_LO EMB_LO4
#define TR_HI EMB_HI4
#endif
typedef float tr_vf __attribute__((vector_size(TR_VL * 4), aligned(4), may_alias));
typedef float tr_hf __attribute__((vector_size(TR_VL * 2), aligned(4), may_alias));

/* the W x W block at (i0, j0), vectors of type VT */
#define TR_BLOCK(VT, W, LO, HI) \
    { \
        VT v[W], t[W]; \
        for (r = 0; r < W; r++) v[r] = *(const VT *)(src + (i0 + r) * rs + j0); \
        for (round = 1; round < W; round *= 2) { \
            for (r = 0; r < W / 2; r++) { \
                t[2 * r] = __builtin_shufflevector(v[r], v[r + W / 2], LO); \
                t[2 * r + 1] = __builtin_shufflevector(v[r], v[r + W / 2], HI); \
            } \
            for (r = 0; r < W; r++) v[r] = t[r]; \
        } \
        if (add) \
            for (r = 0; r < W; r++) v[r] += *add; \
        for (r = 0; r < W; r++) *(VT *)(dst + (j0 + r) * ds + i0) = v[r]; \
    }

static EMB_UNUSED void transpose_f32(const float *src, emb_i rs, emb_i rows, emb_i cols, float *dst, emb_i ds,
                                     const float *add)
{
    emb_i rv = rows / TR_VL * TR_VL, cv = cols / TR_VL * TR_VL, rh = rv, ch = 0, i0, j0, i, j;
    int r, round;
    for (i0 = 0; i0 < rv; i0 += TR_VL)
        for (j0 = 0; j0 < cv; j0 += TR_VL)
            TR_BLOCK(tr_vf, TR_VL, TR_LO, TR_HI)
#ifdef TR_HLO
    enum { H = TR_VL / 2 };
    rh = rv + (rows - rv) / H * H;
    ch = cols / H * H;
    for (i0 = rv; i0 < rh; i0 += H)
        for (j0 = 0; j0 < ch; j0 += H)
            TR_BLOCK(tr_hf, H, TR_HLO, TR_HHI)
#endif
    TRANSPOSE_EDGES(rv, cv, rh, ch)
}
#undef TR_BLOCK
#else
static EMB_UNUSED void transpose_f32(const float *src, emb_i rs, emb_i rows, emb_i cols, float *dst, emb_i ds,
                                     const float *add)
{
    emb_i i, j;
    TRANSPOSE_EDGES(0, 0, 0, 0)
}
#endif
#undef TRANSPOSE_EDGES

#endif
