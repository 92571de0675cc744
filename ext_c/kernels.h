/* ember's C kernels, portable part: C99 plus libm, no threads, no allocation (callers pass any
   workspace a kernel needs). The same sources build once per instruction set on x86-64 (see
   isa_*.c): EMB_PREFIX names each build's symbols and EMB_VEC_BYTES (when set) is its vector width.
   Strides and sizes count elements, not bytes. */
#ifndef EMB_KERNELS_H
#define EMB_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "emb_math.h"
#include "ops.h"

typedef int64_t emb_i;

#define EMB_MAXDIM 16

/* conv2d parameters, passed as one int64 array (index names below) */
enum {
    EMB_CV_N, EMB_CV_C, EMB_CV_H, EMB_CV_W, EMB_CV_O, EMB_CV_KH, EMB_CV_KW,
    EMB_CV_SH, EMB_CV_SW, EMB_CV_PT, EMB_CV_PB, EMB_CV_PL, EMB_CV_PR, EMB_CV_DH, EMB_CV_DW,
    EMB_CV_G, EMB_CV_OH, EMB_CV_OW, EMB_CV_NPARAMS
};

/* which conv kernel a batch-in-lanes call runs (k_conv_lanes.c) */
enum { EMB_LANES_FORWARD, EMB_LANES_INPUT, EMB_LANES_WEIGHT };

#ifndef EMB_PREFIX
#define EMB_PREFIX emb_port_
#endif
#define EMB_CAT2(a, b) a##b
#define EMB_CAT(a, b) EMB_CAT2(a, b)
#define EMB_FN(name) EMB_CAT(EMB_PREFIX, name)

/* Every kernel once: X(return type, name, parameters). dispatch.c builds its per-ISA tables from
   this list. */
#define EMB_KERNELS(X) \
    X(void, copy_nd, (int elsize, int nd, const emb_i *shape, const void *src, const emb_i *sst, \
                      void *dst, const emb_i *dst_st)) \
    X(int, cast, (int from, int to, emb_i n, const void *src, void *dst)) \
    X(int, unary, (int op, int dtype, emb_i n, const void *x, void *out)) \
    X(int, binary, (int op, int dtype, int nd, const emb_i *shape, const void *a, const emb_i *sa, \
                    const void *b, const emb_i *sb, void *out)) \
    X(void, where, (int elsize, int nd, const emb_i *shape, const uint8_t *c, const emb_i *sc, \
                    const void *a, const emb_i *sa, const void *b, const emb_i *sb, void *out)) \
    X(int, reduce, (int op, int dtype, emb_i outer, emb_i n, emb_i inner, const void *x, void *out)) \
    X(emb_i, gemm_f32_work, (void)) \
    X(void, gemm_f32, (emb_i m, emb_i n, emb_i k, const float *a, emb_i rsa, emb_i csa, const float *b, \
                       const emb_i *boff, emb_i rsb, emb_i csb, float *c, emb_i ldc, int accumulate, \
                       float *work)) \
    X(emb_i, gemm_f64_work, (void)) \
    X(void, gemm_f64, (emb_i m, emb_i n, emb_i k, const double *a, emb_i rsa, emb_i csa, \
                       const double *b, const emb_i *boff, emb_i rsb, emb_i csb, double *c, emb_i ldc, \
                       int accumulate, double *work)) \
    X(void, matmul_int, (int dtype, emb_i m, emb_i n, emb_i k, const void *a, emb_i rsa, emb_i csa, \
                         const void *b, emb_i rsb, emb_i csb, void *c)) \
    X(emb_i, conv_prepare_size, (int dtype, const emb_i *p)) \
    X(void, conv_prepare, (int dtype, const emb_i *p, const void *x, void *xp)) \
    X(emb_i, conv_columns, (const emb_i *p)) \
    X(emb_i, conv_tile_work, (int dtype, const emb_i *p)) \
    X(void, conv_tile, (int dtype, const emb_i *p, const void *xp, const void *w, const void *bias, \
                        void *out, emb_i b, emb_i g, emb_i j0, emb_i j1, void *work)) \
    X(void, pool2d, (int op, int dtype, const emb_i *p, emb_i plane0, emb_i plane1, const void *x, \
                     void *out)) \
    X(emb_i, conv_lanes, (int dtype, const emb_i *p, int kind, emb_i count)) \
    X(emb_i, conv_lanes_work, (int dtype, const emb_i *p)) \
    X(void, conv_lanes_run, (int dtype, int kind, const emb_i *p, const void *a, const void *b, \
                             const void *bias, void *out, emb_i b0, emb_i b1, void *work)) \
    X(emb_i, gather, (int elsize, int nd, const emb_i *ishape, const int64_t *idx, const void *x, \
                      const emb_i *xst, int dim, emb_i dimsize, void *out)) \
    X(emb_i, scatter, (int dtype, int add, int nd, const emb_i *ishape, const int64_t *idx, \
                       const void *src, const emb_i *sst, void *out, const emb_i *ost, int dim, \
                       emb_i dimsize)) \
    X(void, softmax_f32, (emb_i rows, emb_i n, const float *x, float *out, int log)) \
    X(void, layer_norm_f32, (emb_i rows, emb_i n, const float *x, const float *w, const float *b, \
                             double eps, float *out)) \
    X(void, gelu_f32, (int form, emb_i n, const float *x, float *out)) \
    X(void, bias_rows_f32, (emb_i rows, emb_i n, const float *bias, float *out)) \
    EMB_GRAD_KERNELS(X)

/* conv and pool gradients (k_conv_grad.c) and reductions over several dims (k_reduce.c) */
#define EMB_GRAD_KERNELS(X) \
    X(emb_i, conv_grad_work, (int dtype, const emb_i *p)) \
    X(void, conv_grad_input, (int dtype, const emb_i *p, const void *g, const void *w, void *gx, emb_i b0, \
                              emb_i b1, void *work)) \
    X(void, conv_grad_weight, (int dtype, const emb_i *p, const void *x, const void *g, void *gw, emb_i b0, \
                               emb_i b1, void *work)) \
    X(void, pool2d_grad, (int op, int dtype, const emb_i *p, emb_i plane0, emb_i plane1, const void *x, \
                          const void *g, void *gx, void *work)) \
    X(int, reduce_dims, (int op, int dtype, int nd, const emb_i *shape, const emb_i *reduced, const void *x, \
                         void *out, void *work))

#define EMB_DECLARE(ret, name, params) ret EMB_FN(name) params;
EMB_KERNELS(EMB_DECLARE)

/* The optimizers' updates (k_optim.c), built once for every ISA: elements lo..hi of the group's
   parameters laid end to end (emb_optim_step in api.h says the rest); -1 for an unknown rule or dtype. */
int emb_optim_span(int rule, int dtype, int64_t count, const int64_t *sizes, const uintptr_t *ptrs,
                   const void *hyper, int64_t lo, int64_t hi);

#endif
