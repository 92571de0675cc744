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
