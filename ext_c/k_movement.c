/* gather and scatter along one dim (index values are checked first: a bad one makes the kernel
   return its flat position and change nothing). */
#include "k_common.h"

/* the first flat position in idx whose value is outside [0, dimsize), or -1 */
static emb_i check_index(emb_i count, const int64_t *idx, emb_i dimsize)
{
    emb_i q;
    for (q = 0; q < count; q++)
        if (idx[q] < 0 || idx[q] >= dimsize)
            return q;
    return -1;
}

static emb_i count_of(int nd, const emb_i *shape)
{
    emb_i n = 1;
    int d;
    for (d = 0; d < nd; d++)
        n *= shape[d];
    return n;
}

/* Walks the index array row-major; calls BODY with q (flat index position), xo (offset in the
   indexed array, without the dim term) and so (offset in the second strided array). */
#define INDEX_WALK(XST, SST, BODY) \
    { \
        emb_i ix[EMB_MAXDIM], xo = 0, so = 0, q; \
        int d; \
        for (d = 0; d < nd; d++) ix[d] = 0; \
        for (q = 0; q < count; q++) { \
            BODY \
            for (d = nd - 1; d >= 0; d--) { \
                ix[d]++; \
                if (d != dim) xo += XST[d]; \
                so += SST[d]; \
                if (ix[d] < ishape[d]) break; \
                if (d != dim) xo -= XST[d] * ishape[d]; \
                so -= SST[d] * ishape[d]; \
                ix[d] = 0; \
            } \
        } \
        (void)so; \
    }

#define GATHER(T) \
    { \
        const T *xs = (const T *)x; \
        T *os = (T *)out; \
        INDEX_WALK(xst, xst, os[q] = xs[xo + idx[q] * xst[dim]];) \
        return -1; \
    }

emb_i EMB_FN(gather)(int elsize, int nd, const emb_i *ishape, const int64_t *idx, const void *x,
                     const emb_i *xst, int dim, emb_i dimsize, void *out)
{
    emb_i count = count_of(nd, ishape), bad = check_index(count, idx, dimsize);
    if (bad >= 0)
        return bad;
    if (count == 0)
        return -1;
    if (elsize == 1)
        GATHER(uint8_t)
    if (elsize == 4)
        GATHER(uint32_t)
    GATHER(uint64_t)
}

#define SCATTER(T, COMBINE) \
    { \
        const T *ss = (const T *)src; \
        T *os = (T *)out; \
        INDEX_WALK(ost, sst, { T *dst = os + xo + idx[q] * ost[dim]; T v = ss[so]; *dst = (T)(COMBINE); }) \
        return -1; \
    }

/* out: a contiguous copy of the target (strides ost); src is read where the index is (strides sst) */
emb_i EMB_FN(scatter)(int dtype, int add, int nd, const emb_i *ishape, const int64_t *idx,
                      const void *src, const emb_i *sst, void *out, const emb_i *ost, int dim,
                      emb_i dimsize)
{
    emb_i count = count_of(nd, ishape), bad = check_index(count, idx, dimsize);
    if (bad >= 0)
        return bad;
    if (count == 0)
        return -1;
    if (!add) {
        switch (dtype_size(dtype)) {
        case 1: SCATTER(uint8_t, v)
        case 4: SCATTER(uint32_t, v)
        default: SCATTER(uint64_t, v)
        }
    }
    switch (dtype) {
    case EMB_F64: SCATTER(double, *dst + v)
    case EMB_F32: SCATTER(float, *dst + v) /* callers add float32 in a float64 copy, as Python does */
    case EMB_I8: SCATTER(int8_t, (uint8_t)((uint8_t)*dst + (uint8_t)v))
    case EMB_I32: SCATTER(int32_t, (uint32_t)((uint32_t)*dst + (uint32_t)v))
    case EMB_I64: SCATTER(int64_t, (uint64_t)*dst + (uint64_t)v)
    default: SCATTER(uint8_t, (*dst | v) != 0)
    }
}
