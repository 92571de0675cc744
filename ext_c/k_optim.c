/* The optimizers' updates (ember.accel.optim's SGD and Adam/AdamW) over a parameter group: every
   parameter's new value and state in one call, with the values of the op-by-op formulas of
   accel/optim/updates.py bit for bit. Each operation is one IEEE operation in the parameters'
   type, in the formulas' order; hyperparameters arrive as one array of that type (rounded there,
   as an op rounds its scalar), switches as 0 or 1 in it (the EMB_SGD_* and EMB_ADAM_* indices of
   api.h). Inputs are only read; outputs are fresh arrays.

   Portable C99 like the k_*.c kernels (no threads, no allocation); built once, outside the per-ISA
   builds (with an AVX2 clone, below), and never contracted: a fused multiply-add would round once
   where the ops round twice. */
#include "kernels.h"
#include "api.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* an AVX2 clone where the loader can pick one (quant.c does the same): twice the lanes for sqrt and
   division; AVX2 without FMA, so nothing can contract either way */
#if defined(EMB_HAVE_AVX2) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define EMB_OPT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define EMB_OPT_CLONES
#endif

/* ember's maximum: nan from either side, else the first operand on a tie */
#define OPT_MAX(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) >= (y) ? (x) : (y))

/* The formulas run a block of elements at a time, one stage per loop with the switches outside the
   loops, so each loop vectorizes; stages pass values through the block's temporaries. */
#define OPT_BLOCK 256
#define OPT_FOR(j, k) for (j = 0; j < (k); j++)

/* p: the parameter's pointers in api.h's order; elements at..at+n of it */
#define OPT_SGD(T, NAME)                                                                          \
    EMB_OPT_CLONES static void NAME(const uintptr_t *p, const T *h, emb_i at, emb_i n)            \
    {                                                                                             \
        const T *x = (const T *)p[EMB_OPT_X] + at, *g = (const T *)p[EMB_OPT_G] + at;             \
        const T *buf = p[EMB_SGD_BUF] ? (const T *)p[EMB_SGD_BUF] + at : 0;                       \
        T *ox = (T *)p[EMB_SGD_OUT_X] + at;                                                       \
        T *obuf = p[EMB_SGD_OUT_BUF] ? (T *)p[EMB_SGD_OUT_BUF] + at : 0;                          \
        const T lr = h[EMB_SGD_LR], wd = h[EMB_SGD_WEIGHT_DECAY], mom = h[EMB_SGD_MOMENTUM];      \
        const T damp = h[EMB_SGD_DAMP];                                                           \
        const int maximize = h[EMB_SGD_MAXIMIZE] != 0, wd_on = h[EMB_SGD_WEIGHT_DECAY_ON] != 0;   \
        const int mom_on = h[EMB_SGD_MOMENTUM_ON] != 0 && obuf, damp_on = h[EMB_SGD_DAMP_ON] != 0; \
        const int nesterov = h[EMB_SGD_NESTEROV] != 0;                                            \
        T t[OPT_BLOCK];                                                                           \
        emb_i s, j, k;                                                                            \
        for (s = 0; s < n; s += OPT_BLOCK) {                                                      \
            const T *xs = x + s, *gs = g + s;                                                     \
            T *ob = mom_on ? obuf + s : 0;                                                        \
            k = n - s < OPT_BLOCK ? n - s : OPT_BLOCK;                                            \
            if (maximize) {                                                                       \
                OPT_FOR(j, k) t[j] = -gs[j];                                                      \
                gs = t;                                                                           \
            }                                                                                     \
            if (wd_on) {                                                                          \
                OPT_FOR(j, k) t[j] = gs[j] + xs[j] * wd;                                          \
                gs = t;                                                                           \
            }                                                                                     \
            if (mom_on) {                                                                         \
                if (buf && damp_on) {                                                             \
                    OPT_FOR(j, k) ob[j] = buf[s + j] * mom + gs[j] * damp;                        \
                } else if (buf) {                                                                 \
                    OPT_FOR(j, k) ob[j] = buf[s + j] * mom + gs[j];                               \
                } else {                                                                          \
                    OPT_FOR(j, k) ob[j] = gs[j];                                                  \
                }                                                                                 \
                if (nesterov) {                                                                   \
                    OPT_FOR(j, k) t[j] = gs[j] + ob[j] * mom;                                     \
                    gs = t;                                                                       \
                } else {                                                                          \
                    gs = ob;                                                                      \
                }                                                                                 \
            }                                                                                     \
            OPT_FOR(j, k) ox[s + j] = xs[j] - gs[j] * lr;                                         \
        }                                                                                         \
    }

#define OPT_ADAM(T, NAME, SQRT)                                                                   \
    EMB_OPT_CLONES static void NAME(const uintptr_t *p, const T *h, emb_i at, emb_i n)            \
    {                                                                                             \
        const T *x = (const T *)p[EMB_OPT_X] + at, *g = (const T *)p[EMB_OPT_G] + at;             \
        const T *m = (const T *)p[EMB_ADAM_M] + at, *v = (const T *)p[EMB_ADAM_V] + at;           \
        const T *vmax = p[EMB_ADAM_VMAX] ? (const T *)p[EMB_ADAM_VMAX] + at : 0;                  \
        T *ox = (T *)p[EMB_ADAM_OUT_X] + at, *om = (T *)p[EMB_ADAM_OUT_M] + at;                   \
        T *ov = (T *)p[EMB_ADAM_OUT_V] + at;                                                      \
        T *ovmax = p[EMB_ADAM_OUT_VMAX] ? (T *)p[EMB_ADAM_OUT_VMAX] + at : 0;                     \
        const T wd = h[EMB_ADAM_WEIGHT_DECAY], decay = h[EMB_ADAM_DECAY];                         \
        const T w = h[EMB_ADAM_LERP_WEIGHT], beta2 = h[EMB_ADAM_BETA2];                           \
        const T omb2 = h[EMB_ADAM_ONE_MINUS_BETA2], bc2s = h[EMB_ADAM_BC2_SQRT];                  \
        const T eps = h[EMB_ADAM_EPS], nss = h[EMB_ADAM_NEG_STEP_SIZE];                           \
        const int maximize = h[EMB_ADAM_MAXIMIZE] != 0, wd_on = h[EMB_ADAM_WEIGHT_DECAY_ON] != 0; \
        const int decoupled = h[EMB_ADAM_DECOUPLED] != 0, high = h[EMB_ADAM_LERP_HIGH] != 0;      \
        const int ams = h[EMB_ADAM_AMSGRAD] != 0 && vmax && ovmax;                                \
        T t[OPT_BLOCK], xt[OPT_BLOCK], d[OPT_BLOCK];                                              \
        emb_i s, j, k;                                                                            \
        for (s = 0; s < n; s += OPT_BLOCK) {                                                      \
            const T *xs = x + s, *gs = g + s, *ms = m + s, *top;                                  \
            T *oms = om + s, *ovs = ov + s;                                                       \
            k = n - s < OPT_BLOCK ? n - s : OPT_BLOCK;                                            \
            if (maximize) {                                                                       \
                OPT_FOR(j, k) t[j] = -gs[j];                                                      \
                gs = t;                                                                           \
            }                                                                                     \
            if (wd_on && decoupled) {                                                             \
                OPT_FOR(j, k) xt[j] = xs[j] * decay;                                              \
                xs = xt;                                                                          \
            } else if (wd_on) {                                                                   \
                OPT_FOR(j, k) t[j] = gs[j] + xs[j] * wd;                                          \
                gs = t;                                                                           \
            }                                                                                     \
            OPT_FOR(j, k) d[j] = (gs[j] - ms[j]) * w;                                             \
            if (high) {                                                                           \
                OPT_FOR(j, k) oms[j] = gs[j] - d[j];                                              \
            } else {                                                                              \
                OPT_FOR(j, k) oms[j] = ms[j] + d[j];                                              \
            }                                                                                     \
            OPT_FOR(j, k) ovs[j] = v[s + j] * beta2 + gs[j] * omb2 * gs[j];                       \
            top = ovs;                                                                            \
            if (ams) {                                                                            \
                OPT_FOR(j, k) ovmax[s + j] = OPT_MAX(vmax[s + j], ovs[j]);                        \
                top = ovmax + s;                                                                  \
            }                                                                                     \
            OPT_FOR(j, k) d[j] = SQRT(top[j]) / bc2s + eps;                                       \
            OPT_FOR(j, k) ox[s + j] = xs[j] + (oms[j] / d[j]) * nss;                              \
        }                                                                                         \
    }

OPT_SGD(float, sgd_f32)
OPT_SGD(double, sgd_f64)
OPT_ADAM(float, adam_f32, sqrtf)
OPT_ADAM(double, adam_f64, sqrt)

int emb_optim_span(int rule, int dtype, int64_t count, const int64_t *sizes, const uintptr_t *ptrs,
                   const void *hyper, int64_t lo, int64_t hi)
{
    int np = rule == EMB_OPT_SGD ? EMB_SGD_NPTRS : EMB_ADAM_NPTRS;
    emb_i k, start = 0;
    if ((rule != EMB_OPT_SGD && rule != EMB_OPT_ADAM) || (dtype != EMB_F32 && dtype != EMB_F64))
        return -1;
    for (k = 0; k < count && start < hi; start += sizes[k], k++) {
        emb_i a = lo > start ? lo - start : 0;
        emb_i b = hi - start < sizes[k] ? hi - start : sizes[k];
        const uintptr_t *p = ptrs + k * np;
        if (a >= b)
            continue;
        if (rule == EMB_OPT_SGD) {
            if (dtype == EMB_F32)
                sgd_f32(p, (const float *)hyper, a, b - a);
            else
                sgd_f64(p, (const double *)hyper, a, b - a);
        } else if (dtype == EMB_F32) {
            adam_f32(p, (const float *)hyper, a, b - a);
        } else {
            adam_f64(p, (const double *)hyper, a, b - a);
        }
    }
    return 0;
}
