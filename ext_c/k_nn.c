/* Fused float32 fast paths for composite ops (softmax, log_softmax, layer_norm, gelu, linear's
   bias). They need not round like the composites they replace, only agree within the composites'
   tolerance; they are written so the compiler vectorizes them (no libm calls in the loops). */
#include "k_common.h"

/* exp(x) for float: 2^n * p(r) with |r| <= ln2/2 and p a degree-5 polynomial fitted for relative
   error (1.7e-7 evaluated in float); n is read from the bits of x log2e + 1.5 * 2^23, so there is
   no float-to-int conversion and the loops vectorize. exp_core needs x in [-87.3, 88.3] (nan passes
   through as nan). */
EMB_INLINE float exp_core(float x)
{
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
    const float shifter = 12582912.0f;
    union { float f; uint32_t u; } t, scale;
    float n, r, p;
    t.f = x * log2e + shifter;
    n = t.f - shifter;
    r = (x - n * ln2_hi) - n * ln2_lo;
    p = 1.0f + r * (0.99999970198f + r * (0.49999150634f + r * (0.16667635739f + r * (0.04189793393f +
        r * 0.00829031318f))));
    scale.u = (t.u + (127u - 0x4B400000u)) << 23; /* the low bits of t hold n */
    return p * scale.f;
}

/* 2^y for y in [-126, 126] (nan passes through): y = n + r with n an integer and |r| <= 1/2, then
   2^n * p(r), p of degree 5 (relative error 1.7e-7 evaluated in float). */
EMB_INLINE float exp2_core(float y)
{
    const float shifter = 12582912.0f;
    union { float f; uint32_t u; } t, scale;
    float n, r, p;
    t.f = y + shifter;
    n = t.f - shifter;
    r = y - n;
    p = 1.0f + r * (0.6931470036506653f + r * (0.24022242426872253f + r * (0.05550733581185341f +
        r * (0.009671512991189957f + r * 0.001326472614891827f))));
    scale.u = (t.u + (127u - 0x4B400000u)) << 23;
    return p * scale.f;
}

/* exp(x) for x <= 0 (-inf included) */
EMB_INLINE float exp_nonpos(float x)
{
    return exp_core(x < -87.3f ? -87.3f : x);
}

void EMB_FN(gelu_f32)(int form, emb_i n, const float *EMB_RESTRICT x, float *EMB_RESTRICT out)
{
    emb_i i;
    if (form == EMB_GELU_TANH) {
        /* x/2 (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3);
           exp(-2u) = 2^(k x (1 + 0.044715 x^2)) with k = -2 sqrt(2/pi) log2(e) */
        for (i = 0; i < n; i++) {
            float v = x[i];
            float y = -2.302208198f * v * (1.0f + 0.044715f * v * v);
            float e, g;
            y = y < -126.0f ? -126.0f : (y > 126.0f ? 126.0f : y);
            e = exp2_core(y);
            g = v / (1.0f + e);
            out[i] = v < -3.4e38f ? v * 0.0f : g; /* -inf: nan, as -inf * (1 + tanh(-inf)) is */
        }
        return;
    }
    /* x/2 (1 + erf(x / sqrt 2)) with erfc(a) = t P(t) exp(-a^2), t = 1 / (1 + 0.3275911 a),
       a = |x| / sqrt 2 (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7); below 0, 1 + erf = erfc(|.|)
       directly, so there is no cancellation. exp(-x^2 / 2) = 2^(-x^2 log2(e) / 2). Four vectors an
       iteration: their independent chains hide the divide's latency (bench/gelu_loop.c times the
       fused GELU's like loop: 0.94-0.95x over 1M floats on an AVX-512 Xeon, 2026-12-06). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 4
#endif
    for (i = 0; i < n; i++) {
        float v = x[i];
        float av = fabsf(v), t, poly, q, g;
        av = av < 13.0f ? av : 13.0f; /* erfc(13 / sqrt 2) < 1e-37; keeps the power of 2 normal */
        t = 1.0f / (1.0f + 0.2316418882f * av);
        poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f +
               t * 1.061405429f))));
        q = poly * exp2_core(-0.7213475204f * av * av);
        g = 0.5f * v * (v < 0 ? q : 2.0f - q);
        out[i] = v < -3.4e38f ? v * 0.0f : g; /* -inf: nan, as -inf * (1 + erf(-inf)) is */
    }
}

#define LANES 16

#if defined(EMB_VEC_BYTES) && (defined(__GNUC__) || defined(__clang__))
typedef float nn_vf __attribute__((vector_size(EMB_VEC_BYTES), aligned(4), may_alias));
typedef int32_t nn_vi __attribute__((vector_size(EMB_VEC_BYTES)));
#define NN_VL (EMB_VEC_BYTES / 4)
#endif

/* The row's max, or nan when it holds one. c collects v - v, nan for a nan or an infinity: only then
   is the row scanned for a nan (an infinity alone is no reason to give nan). */
static float row_max(const float *EMB_RESTRICT x, emb_i n)
{
    float best = -EMB_INFF, check = 0.0f;
    emb_i i = 0;
#ifdef NN_VL
    if (n >= NN_VL) {
        nn_vf m = *(const nn_vf *)x, c = m - m;
        int l;
        for (i = NN_VL; i + NN_VL <= n; i += NN_VL) {
            nn_vf v = *(const nn_vf *)(x + i);
            nn_vi take = v > m;
            m = (nn_vf)(((nn_vi)v & take) | ((nn_vi)m & ~take));
            c += v - v;
        }
        for (l = 0; l < NN_VL; l++) {
            best = m[l] > best ? m[l] : best;
            check += c[l];
        }
    }
#endif
    for (; i < n; i++) {
        best = x[i] > best ? x[i] : best;
        check += x[i] - x[i];
    }
    if (check != check)
        for (i = 0; i < n; i++)
            if (x[i] != x[i])
                return EMB_NANF;
    return best;
}

/* float lanes summed in double: the lanes keep the loop vectorized without -ffast-math */
static double lane_sum(const float *EMB_RESTRICT x, emb_i n)
{
    float s[LANES];
    double total = 0.0;
    emb_i i = 0;
    int l;
    for (l = 0; l < LANES; l++)
        s[l] = 0.0f;
    for (; i + LANES <= n; i += LANES)
        for (l = 0; l < LANES; l++)
            s[l] += x[i + l];
    for (l = 0; l < LANES; l++)
        total += s[l];
    for (; i < n; i++)
        total += x[i];
    return total;
}

/* out = exp(x - m) for x <= m; returns the sum */
static double exp_shift_sum(const float *EMB_RESTRICT x, float *EMB_RESTRICT out, emb_i n, float m)
{
    emb_i i;
    for (i = 0; i < n; i++)
        out[i] = exp_nonpos(x[i] - m);
    return lane_sum(out, n);
}

void EMB_FN(softmax_f32)(emb_i rows, emb_i n, const float *x, float *out, int log_)
{
    emb_i r, i;
    for (r = 0; r < rows; r++) {
        const float *EMB_RESTRICT xr = x + r * n;
        float *EMB_RESTRICT o = out + r * n;
        float m = row_max(xr, n);
        double s;
        if (!(m > -EMB_INFF && m < EMB_INFF)) {
            /* a nan, or an infinite max: x - max is nan somewhere, and so is the whole row */
            for (i = 0; i < n; i++)
                o[i] = EMB_NANF;
            continue;
        }
        s = exp_shift_sum(xr, o, n, m);
        if (log_) {
            float ls = (float)log(s);
            for (i = 0; i < n; i++)
                o[i] = (xr[i] - m) - ls;
        } else {
            float fs = (float)s;
            for (i = 0; i < n; i++)
                o[i] = o[i] / fs;
        }
    }
}

void EMB_FN(layer_norm_f32)(emb_i rows, emb_i n, const float *x, const float *w, const float *b,
                            double eps, float *out)
{
    emb_i r, i;
    for (r = 0; r < rows; r++) {
        const float *EMB_RESTRICT xr = x + r * n;
        float *EMB_RESTRICT o = out + r * n;
        double sum = 0.0, var = 0.0, mean;
        float fm, rstd;
        for (i = 0; i < n; i++)
            sum += xr[i];
        mean = n ? sum / (double)n : EMB_NAN;
        for (i = 0; i < n; i++) {
            double d = xr[i] - mean;
            var += d * d;
        }
        var = n ? var / (double)n : EMB_NAN;
        fm = (float)mean;
        rstd = (float)(1.0 / sqrt(var + eps));
        if (w && b)
            for (i = 0; i < n; i++)
                o[i] = (xr[i] - fm) * rstd * w[i] + b[i];
        else if (w)
            for (i = 0; i < n; i++)
                o[i] = (xr[i] - fm) * rstd * w[i];
        else if (b)
            for (i = 0; i < n; i++)
                o[i] = (xr[i] - fm) * rstd + b[i];
        else
            for (i = 0; i < n; i++)
                o[i] = (xr[i] - fm) * rstd;
    }
}

void EMB_FN(bias_rows_f32)(emb_i rows, emb_i n, const float *bias, float *out)
{
    emb_i r, i;
    for (r = 0; r < rows; r++)
        for (i = 0; i < n; i++)
            out[r * n + i] = bias[i];
}
