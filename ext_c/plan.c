/* A captured step's kernel calls replayed from one loop: each entry names a kernel of api.h and its
   arguments as int64 (addresses included), which Python prepared once and patches per replay. */
#include <stdint.h>

#include "ops.h"
#include "api.h"

#define I(k) ((int)a[k])
#define L(k) ((int64_t)a[k])
#define P(k) ((uintptr_t)a[k])

int64_t emb_run_plan(int64_t n, uintptr_t kinds, uintptr_t offs, uintptr_t args, uintptr_t rets)
{
    const int64_t *kind = (const int64_t *)kinds, *off = (const int64_t *)offs;
    const int64_t *all = (const int64_t *)args, *want = (const int64_t *)rets;
    for (int64_t i = 0; i < n; i++) {
        const int64_t *a = all + off[i];
        int64_t r = 0;
        switch (kind[i]) {
        case EMB_PLAN_COPY_ND: emb_copy_nd(I(0), I(1), P(2), P(3), P(4), P(5), P(6)); break;
        case EMB_PLAN_CAST: r = emb_cast(I(0), I(1), L(2), P(3), P(4)); break;
        case EMB_PLAN_UNARY: r = emb_unary(I(0), I(1), L(2), P(3), P(4), I(5)); break;
        case EMB_PLAN_BINARY: r = emb_binary(I(0), I(1), I(2), P(3), P(4), P(5), P(6), P(7), P(8)); break;
        case EMB_PLAN_BINARY1: r = emb_binary1(I(0), I(1), L(2), P(3), L(4), P(5), L(6), P(7)); break;
        case EMB_PLAN_WHERE: emb_where(I(0), I(1), P(2), P(3), P(4), P(5), P(6), P(7), P(8), P(9)); break;
        case EMB_PLAN_REDUCE: r = emb_reduce(I(0), I(1), L(2), L(3), L(4), P(5), P(6)); break;
        case EMB_PLAN_MATMUL:
            r = emb_matmul(I(0), I(1), P(2), P(3), P(4), L(5), L(6), L(7), P(8), L(9), L(10), P(11), L(12),
                           L(13), P(14), I(15), I(16));
            break;
        case EMB_PLAN_CONV2D: r = emb_conv2d(I(0), P(1), P(2), P(3), P(4), P(5), I(6)); break;
        case EMB_PLAN_POOL2D: emb_pool2d(I(0), I(1), P(2), P(3), P(4), I(5)); break;
        case EMB_PLAN_GATHER: r = emb_gather(I(0), I(1), P(2), P(3), P(4), P(5), I(6), L(7), P(8)); break;
        case EMB_PLAN_SCATTER:
            r = emb_scatter(I(0), I(1), I(2), P(3), P(4), P(5), P(6), P(7), P(8), I(9), L(10));
            break;
        case EMB_PLAN_GELU_F32: emb_gelu_f32(I(0), L(1), P(2), P(3), I(4)); break;
        case EMB_PLAN_SOFTMAX_F32: emb_softmax_f32(L(0), L(1), P(2), P(3), I(4), I(5)); break;
        case EMB_PLAN_BIAS_ROWS_F32: emb_bias_rows_f32(L(0), L(1), P(2), P(3)); break;
        case EMB_PLAN_OPTIM_STEP: r = emb_optim_step(I(0), I(1), L(2), P(3), P(4), P(5), I(6)); break;
        case EMB_PLAN_CONV2D_GRAD_INPUT: r = emb_conv2d_grad_input(I(0), P(1), P(2), P(3), P(4), I(5)); break;
        case EMB_PLAN_CONV2D_GRAD_WEIGHT: r = emb_conv2d_grad_weight(I(0), P(1), P(2), P(3), P(4), I(5)); break;
        case EMB_PLAN_POOL2D_GRAD: r = emb_pool2d_grad(I(0), I(1), P(2), P(3), P(4), P(5), I(6)); break;
        case EMB_PLAN_REDUCE_DIMS: r = emb_reduce_dims(I(0), I(1), I(2), P(3), P(4), P(5), P(6)); break;
        default: return i;
        }
        if (r != want[i])
            return i;
    }
    return -1;
}
