/* Reductions along one dim of a contiguous array seen as (outer, n, inner). Float sums and products
   accumulate in double, element by element in order (as Python's sum does), then round once; integer
   ones wrap; max/min/argmax/argmin propagate nan (the first nan's index for arg*). */
#include "k_common.h"

#define F_ISNAN(v) ((v) != (v))
#define I_ISNAN(v) 0
#define CHUNK 256 /* inner columns handled at once (the accumulators live on the stack) */

#define RED_FOLD(T, ACC, TO, INIT, STEP, FINISH) \
    { \
        const T *xs = (const T *)x; \
        TO *os = (TO *)out; \
        emb_i o, j, c, c0; \
        for (o = 0; o < outer; o++) { \
            const T *base = xs + o * n * inner; \
            for (c0 = 0; c0 < inner; c0 += CHUNK) { \
                emb_i cn = EMB_MIN(CHUNK, inner - c0); \
                ACC acc[CHUNK]; \
                for (c = 0; c < cn; c++) acc[c] = INIT; \
                for (j = 0; j < n; j++) { \
                    const T *row = base + j * inner + c0; \
                    for (c = 0; c < cn; c++) { ACC a = acc[c]; T v = row[c]; acc[c] = (STEP); } \
                } \
                for (c = 0; c < cn; c++) { ACC a = acc[c]; os[o * inner + c0 + c] = (TO)(FINISH); } \
            } \
        } \
        return 0; \
    }

/* max/min with nan propagation; a keeps the running extreme, the flag whether a nan was seen */
#define RED_EXT(T, BETTER) \
    { \
        const T *xs = (const T *)x; \
        T *os = (T *)out; \
        emb_i o, j, c, c0; \
        for (o = 0; o < outer; o++) { \
            const T *base = xs + o * n * inner; \
            for (c0 = 0; c0 < inner; c0 += CHUNK) { \
                emb_i cn = EMB_MIN(CHUNK, inner - c0); \
                T best[CHUNK]; \
                uint8_t nan[CHUNK]; \
                for (c = 0; c < cn; c++) { best[c] = base[c0 + c]; nan[c] = 0; } \
                for (j = 0; j < n; j++) { \
                    const T *row = base + j * inner + c0; \
                    for (c = 0; c < cn; c++) { \
                        T v = row[c]; \
                        nan[c] |= (v != v); \
                        best[c] = (v BETTER best[c]) ? v : best[c]; \
                    } \
                } \
                for (c = 0; c < cn; c++) os[o * inner + c0 + c] = nan[c] ? (T)EMB_NAN : best[c]; \
            } \
        } \
        return 0; \
    }

#define RED_EXT_INT(T, BETTER) \
    { \
        const T *xs = (const T *)x; \
        T *os = (T *)out; \
        emb_i o, j, c, c0; \
        for (o = 0; o < outer; o++) { \
            const T *base = xs + o * n * inner; \
            for (c0 = 0; c0 < inner; c0 += CHUNK) { \
                emb_i cn = EMB_MIN(CHUNK, inner - c0); \
                T best[CHUNK]; \
                for (c = 0; c < cn; c++) best[c] = base[c0 + c]; \
                for (j = 1; j < n; j++) { \
                    const T *row = base + j * inner + c0; \
                    for (c = 0; c < cn; c++) best[c] = (row[c] BETTER best[c]) ? row[c] : best[c]; \
                } \
                for (c = 0; c < cn; c++) os[o * inner + c0 + c] = best[c]; \
            } \
        } \
        return 0; \
    }

/* argmax/argmin: the first index of the extreme, or of the first nan */
#define RED_ARG(T, BETTER, ISNAN) \
    { \
        const T *xs = (const T *)x; \
        int64_t *os = (int64_t *)out; \
        emb_i o, j, c, c0; \
        for (o = 0; o < outer; o++) { \
            const T *base = xs + o * n * inner; \
            for (c0 = 0; c0 < inner; c0 += CHUNK) { \
                emb_i cn = EMB_MIN(CHUNK, inner - c0); \
                T best[CHUNK]; \
                int64_t at[CHUNK]; \
                uint8_t nan[CHUNK]; \
                for (c = 0; c < cn; c++) { best[c] = base[c0 + c]; at[c] = 0; nan[c] = ISNAN(best[c]); } \
                for (j = 1; j < n; j++) { \
                    const T *row = base + j * inner + c0; \
                    for (c = 0; c < cn; c++) { \
                        T v = row[c]; \
                        if (nan[c]) continue; \
                        if (ISNAN(v)) { nan[c] = 1; at[c] = j; best[c] = v; } \
                        else if (v BETTER best[c]) { best[c] = v; at[c] = j; } \
                    } \
                } \
                for (c = 0; c < cn; c++) os[o * inner + c0 + c] = at[c]; \
            } \
        } \
        return 0; \
    }

#define RED_FLOAT(T) \
    switch (op) { \
    case EMB_R_SUM: RED_FOLD(T, double, T, 0.0, a + (double)v, a) \
    case EMB_R_PROD: RED_FOLD(T, double, T, 1.0, a * (double)v, a) \
    case EMB_R_MAX: RED_EXT(T, >) \
    case EMB_R_MIN: RED_EXT(T, <) \
    case EMB_R_ARGMAX: RED_ARG(T, >, F_ISNAN) \
    case EMB_R_ARGMIN: RED_ARG(T, <, F_ISNAN) \
    case EMB_R_ANY: RED_FOLD(T, uint8_t, uint8_t, 0, a | (v != 0), a) \
    case EMB_R_ALL: RED_FOLD(T, uint8_t, uint8_t, 1, a & (v != 0), a) \
    default: return -1; \
    }

#define RED_INT(T, UT) \
    switch (op) { \
    case EMB_R_SUM: RED_FOLD(T, uint64_t, T, 0, a + (uint64_t)(int64_t)v, (T)(UT)a) \
    case EMB_R_PROD: RED_FOLD(T, uint64_t, T, 1, a * (uint64_t)(int64_t)v, (T)(UT)a) \
    case EMB_R_MAX: RED_EXT_INT(T, >) \
    case EMB_R_MIN: RED_EXT_INT(T, <) \
    case EMB_R_ARGMAX: RED_ARG(T, >, I_ISNAN) \
    case EMB_R_ARGMIN: RED_ARG(T, <, I_ISNAN) \
    case EMB_R_ANY: RED_FOLD(T, uint8_t, uint8_t, 0, a | (v != 0), a) \
    case EMB_R_ALL: RED_FOLD(T, uint8_t, uint8_t, 1, a & (v != 0), a) \
    default: return -1; \
    }

int EMB_FN(reduce)(int op, int dtype, emb_i outer, emb_i n, emb_i inner, const void *x, void *out)
{
    if (n <= 0 && (op == EMB_R_MAX || op == EMB_R_MIN || op == EMB_R_ARGMAX || op == EMB_R_ARGMIN))
        return -1; /* the frontend rejects these; never reached */
    switch (dtype) {
    case EMB_F32: RED_FLOAT(float)
    case EMB_F64: RED_FLOAT(double)
    case EMB_I8: RED_INT(int8_t, uint8_t)
    case EMB_I32: RED_INT(int32_t, uint32_t)
    case EMB_I64: RED_INT(int64_t, uint64_t)
    case EMB_U8:
        switch (op) {
        /* bool sums and products count in int64 */
        case EMB_R_SUM: RED_FOLD(uint8_t, int64_t, int64_t, 0, a + v, a)
        case EMB_R_PROD: RED_FOLD(uint8_t, int64_t, int64_t, 1, a * v, a)
        case EMB_R_MAX: RED_EXT_INT(uint8_t, >)
        case EMB_R_MIN: RED_EXT_INT(uint8_t, <)
        case EMB_R_ARGMAX: RED_ARG(uint8_t, >, I_ISNAN)
        case EMB_R_ARGMIN: RED_ARG(uint8_t, <, I_ISNAN)
        case EMB_R_ANY: RED_FOLD(uint8_t, uint8_t, uint8_t, 0, a | (v != 0), a)
        case EMB_R_ALL: RED_FOLD(uint8_t, uint8_t, uint8_t, 1, a & (v != 0), a)
        default: return -1;
        }
    default: return -1;
    }
}

/* ---- over several dims at once ---------------------------------------------------------------------

   A contiguous array of shape `shape` reduced over the dims with reduced[d] != 0, into `out`, which
   holds the kept dims row-major. Adjacent dims of one kind merge; the input is read once, in order.
   Sums accumulate in double (the innermost reduced run in four partial sums) and round once;
   max/min propagate nan. work: numel(out) doubles and numel(out) bytes. Returns -1 for an op or
   dtype it does not take (sum, max and min of float32 and float64 only). */

#define RD_WALK(T, INNER_KEPT, INNER_RED) \
    { \
        const T *xs = (const T *)x; \
        emb_i m = gs[ng - 1], o, i, pos[EMB_MAXDIM]; \
        int d; \
        for (d = 0; d < ng; d++) pos[d] = 0; \
        for (;;) { \
            emb_i ob = 0; \
            for (d = 0; d < ng - 1; d++) ob += pos[d] * ost[d]; \
            if (gr[ng - 1]) { INNER_RED } else { INNER_KEPT } \
            xs += m; \
            for (d = ng - 2; d >= 0; d--) { \
                if (++pos[d] < gs[d]) break; \
                pos[d] = 0; \
            } \
            if (d < 0) break; \
        } \
        (void)o; (void)i; \
    }

#define RD_SUM(T) \
    { \
        T *os = (T *)out; \
        for (o = 0; o < nout; o++) acc[o] = 0.0; \
        if (ng) \
            RD_WALK(T, \
                for (i = 0; i < m; i++) acc[ob + i] += (double)xs[i];, \
                { \
                    double s0 = 0; double s1 = 0; double s2 = 0; double s3 = 0; \
                    for (i = 0; i + 4 <= m; i += 4) { \
                        s0 += (double)xs[i]; s1 += (double)xs[i + 1]; \
                        s2 += (double)xs[i + 2]; s3 += (double)xs[i + 3]; \
                    } \
                    for (; i < m; i++) s0 += (double)xs[i]; \
                    acc[ob] += (s0 + s1) + (s2 + s3); \
                }) \
        else if (total) \
            acc[0] = (double)((const T *)x)[0]; \
        for (o = 0; o < nout; o++) os[o] = (T)acc[o]; \
        return 0; \
    }

#define RD_EXT(T, BETTER, START) \
    { \
        T *os = (T *)out; \
        for (o = 0; o < nout; o++) { os[o] = START; nan[o] = 0; } \
        if (ng) \
            RD_WALK(T, \
                for (i = 0; i < m; i++) { \
                    T v = xs[i]; T b = os[ob + i]; \
                    nan[ob + i] |= (v != v); \
                    os[ob + i] = (v BETTER b) ? v : b; \
                }, \
                { \
                    T b = os[ob]; \
                    uint8_t seen = 0; \
                    for (i = 0; i < m; i++) { \
                        T v = xs[i]; \
                        seen |= (v != v); \
                        b = (v BETTER b) ? v : b; \
                    } \
                    os[ob] = b; \
                    nan[ob] |= seen; \
                }) \
        else \
            os[0] = ((const T *)x)[0]; \
        for (o = 0; o < nout; o++) \
            if (nan[o]) os[o] = (T)EMB_NAN; \
        return 0; \
    }

int EMB_FN(reduce_dims)(int op, int dtype, int nd, const emb_i *shape, const emb_i *reduced, const void *x,
                        void *out, void *work)
{
    emb_i gs[EMB_MAXDIM], ost[EMB_MAXDIM], nout = 1, total = 1, o, run;
    int gr[EMB_MAXDIM], ng = 0, d;
    double *acc;
    uint8_t *nan;
    if (nd > EMB_MAXDIM || (dtype != EMB_F32 && dtype != EMB_F64) ||
        (op != EMB_R_SUM && op != EMB_R_MAX && op != EMB_R_MIN))
        return -1;
    for (d = 0; d < nd; d++) {
        total *= shape[d];
        if (!reduced[d])
            nout *= shape[d];
        if (shape[d] == 1)
            continue;
        if (ng && gr[ng - 1] == (reduced[d] != 0)) {
            gs[ng - 1] *= shape[d];
        } else {
            gs[ng] = shape[d];
            gr[ng] = reduced[d] != 0;
            ng++;
        }
    }
    if (total == 0 && op != EMB_R_SUM)
        return -1; /* the frontend rejects these; never reached */
    if (total == 0)
        ng = 0;
    run = 1;
    for (d = ng - 1; d >= 0; d--) {
        ost[d] = gr[d] ? 0 : run;
        if (!gr[d])
            run *= gs[d];
    }
    acc = (double *)work;
    nan = (uint8_t *)(acc + nout);
    if (dtype == EMB_F32) {
        if (op == EMB_R_SUM) RD_SUM(float)
        if (op == EMB_R_MAX) RD_EXT(float, >, -(float)EMB_INF)
        RD_EXT(float, <, (float)EMB_INF)
    }
    if (op == EMB_R_SUM) RD_SUM(double)
    if (op == EMB_R_MAX) RD_EXT(double, >, -(double)EMB_INF)
    RD_EXT(double, <, (double)EMB_INF)
}
