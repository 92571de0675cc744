/* Helpers shared by the portable kernels (static: each ISA build has its own copy). */
#ifndef EMB_K_COMMON_H
#define EMB_K_COMMON_H

#include "kernels.h"

#if defined(__GNUC__) || defined(__clang__)
#define EMB_RESTRICT __restrict__
#define EMB_UNUSED __attribute__((unused))
#define EMB_INLINE static inline __attribute__((always_inline))
#else
#define EMB_INLINE static
#define EMB_RESTRICT
#define EMB_UNUSED
#define EMB_INLINE static
#endif

/* Index lists for __builtin_shufflevector (clang, GCC 12) on vectors of 4, 8 or 16 lanes: the even
   and the odd lanes of two vectors, and the two halves of their interleaving. */
#if defined(EMB_VEC_BYTES) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12))
#define EMB_SHUFFLE 1
#define EMB_EVEN16 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30
#define EMB_ODD16 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31
#define EMB_LO16 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23
#define EMB_HI16 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31
#define EMB_EVEN8 0, 2, 4, 6, 8, 10, 12, 14
#define EMB_ODD8 1, 3, 5, 7, 9, 11, 13, 15
#define EMB_LO8 0, 8, 1, 9, 2, 10, 3, 11
#define EMB_HI8 4, 12, 5, 13, 6, 14, 7, 15
#define EMB_EVEN4 0, 2, 4, 6
#define EMB_ODD4 1, 3, 5, 7
#define EMB_LO4 0, 4, 1, 5
#define EMB_HI4 2, 6, 3, 7
#endif

#define EMB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EMB_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Up to 4 operands walked together over an nd shape. Size-1 dims are dropped and neighbouring dims
   merged where every operand's layout allows, so most walks end up 1-D. */
typedef struct {
    int nd, nops;
    emb_i shape[EMB_MAXDIM];
    emb_i st[4][EMB_MAXDIM];
} emb_walk;

/* Returns 0 when the shape holds no element. */
static EMB_UNUSED int walk_init(emb_walk *w, int nd, const emb_i *shape, int nops, const emb_i *const *st)
{
    int k = 0, d, o;
    w->nops = nops;
    for (d = 0; d < nd; d++) {
        if (shape[d] == 0)
            return 0;
        if (shape[d] == 1)
            continue;
        if (k > 0) {
            int merge = 1;
            for (o = 0; o < nops; o++)
                if (w->st[o][k - 1] != st[o][d] * shape[d])
                    merge = 0;
            if (merge) {
                w->shape[k - 1] *= shape[d];
                for (o = 0; o < nops; o++)
                    w->st[o][k - 1] = st[o][d];
                continue;
            }
        }
        w->shape[k] = shape[d];
        for (o = 0; o < nops; o++)
            w->st[o][k] = st[o][d];
        k++;
    }
    if (k == 0) {
        w->shape[0] = 1;
        for (o = 0; o < nops; o++)
            w->st[o][0] = 0;
        k = 1;
    }
    w->nd = k;
    return 1;
}

/* Calls fn once per innermost row: fn(n, ptrs, inner strides, ctx). ptrs are char pointers moved by
   stride * elsize[o] bytes. */
typedef void (*emb_row_fn)(emb_i n, char **p, const emb_i *s, void *ctx);

static EMB_UNUSED void walk_run(const emb_walk *w, char **base, const int *elsize, emb_row_fn fn, void *ctx)
{
    int nd = w->nd, nops = w->nops, d, o;
    emb_i idx[EMB_MAXDIM], outer = 1, r, inner_st[4];
    char *p[4];
    for (d = 0; d < nd - 1; d++) {
        idx[d] = 0;
        outer *= w->shape[d];
    }
    for (o = 0; o < nops; o++) {
        p[o] = base[o];
        inner_st[o] = w->st[o][nd - 1];
    }
    for (r = 0; r < outer; r++) {
        char *q[4];
        for (o = 0; o < nops; o++)
            q[o] = p[o];
        fn(w->shape[nd - 1], q, inner_st, ctx);
        for (d = nd - 2; d >= 0; d--) {
            idx[d]++;
            for (o = 0; o < nops; o++)
                p[o] += w->st[o][d] * elsize[o];
            if (idx[d] < w->shape[d])
                break;
            for (o = 0; o < nops; o++)
                p[o] -= w->st[o][d] * w->shape[d] * elsize[o];
            idx[d] = 0;
        }
    }
}

static EMB_UNUSED void contiguous_strides(int nd, const emb_i *shape, emb_i *st)
{
    emb_i s = 1;
    int d;
    for (d = nd - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

static EMB_UNUSED int dtype_size(int dtype)
{
    switch (dtype) {
    case EMB_F32: case EMB_I32: return 4;
    case EMB_F64: case EMB_I64: return 8;
    default: return 1;
    }
}

#endif
