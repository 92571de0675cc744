/* The optimizers' updates (ember.accel.optim's SGD and Adam/AdamW) over a parameter group: every
   parameter's new value and state in one call, with the values of the op-by-op formulas of
   accel/optim/updates.py bit for bit. Each operation is one IEEE operation in the parameters'
   type, in the formulas' order; hyperparameters arrive as one array of that type (rounded there,
   as an op rounds its scalar), switches as 0 or 1 in it (the EMB_SGD_* and EMB_ADAM_* indices of
   api.h). Inputs are only read; outputs are fresh arrays.

   Portable C99 like the k_*.c kernels (no threads, no allocation); built once, outside the per-ISA
   builds, and never contracted: a fused multiply-add would round once where the ops round twice. */
#include "kernels.h"
#include "api.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ember's maximum: nan from either side, else the first operand on a tie */
#define OPT_MAX(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : (x) >= (y) ? (x) : (y))

/* p: the parameter's pointers in api.h's order, each advanced by `at` elements */
#define OPT_SGD(T, NAME)                                                                          \
    static void NAME(const uintptr_t *p, const T *h, emb_i at, emb_i n)                           \
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
        emb_i i;                                                                                  \
        for (i = 0; i < n; i++) {                                                                 \
            T gi = g[i], b;                                                                       \
            if (maximize)                                                                         \
                gi = -gi;                                                                         \
            if (wd_on)                                                                            \
                gi = gi + x[i] * wd;                                                              \
            if (mom_on) {                                                                         \
                if (buf) {                                                                        \
                    b = buf[i] * mom;                                                             \
                    b = damp_on ? b + gi * damp : b + gi;                                         \
                } else {                                                                          \
                    b = gi;                                                                       \
                }                                                                                 \
                obuf[i] = b;                                                                      \
                gi = nesterov ? gi + b * mom : b;                                                 \
            }                                                                                     \
            ox[i] = x[i] - gi * lr;                                                               \
        }                                                                                         \
    }

#define OPT_ADAM(T, NAME, SQRT)                                                                   \
    static void NAME(const uintptr_t *p, const T *h, emb_i at, emb_i n)                           \
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
        emb_i i;                                                                                  \
        for (i = 0; i < n; i++) {                                                                 \
            T gi = g[i], xi = x[i], d, mi, vi, den;                                               \
            if (maximize)                                                                         \
                gi = -gi;                                                                         \
            if (wd_on) {                                                                          \
                if (decoupled)                                                                    \
                    xi = xi * decay;                                                              \
                else                                                                              \
                    gi = gi + xi * wd;                                                            \
            }                                                                                     \
            d = gi - m[i];                                                                        \
            mi = high ? gi - d * w : m[i] + d * w;                                                \
            vi = v[i] * beta2 + gi * omb2 * gi;                                                   \
            om[i] = mi;                                                                           \
            ov[i] = vi;                                                                           \
            if (ams) {                                                                            \
                T top = OPT_MAX(vmax[i], vi);                                                     \
                ovmax[i] = top;                                                                   \
                den = SQRT(top) / bc2s + eps;                                                     \
            } else {                                                                              \
                den = SQRT(vi) / bc2s + eps;                                                      \
            }                                                                                     \
            ox[i] = xi + (mi / den) * nss;                                                        \
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
