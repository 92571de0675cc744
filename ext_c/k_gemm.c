/* Matrix products: register-tiled GEMM for float32 and float64 (gemm_tmpl.h), and a plain loop
   for integers (wrapping, as Python ints reduced to the dtype would). */
#include "k_common.h"
#include "k_transpose.h"

#ifndef EMB_GEMM_KC
#define EMB_GEMM_KC 256
#endif
#ifndef EMB_GEMM_MC
#define EMB_GEMM_MC 120
#endif
#ifndef EMB_GEMM_DIRECT_K
#define EMB_GEMM_DIRECT_K 64 /* at most this K, a product with B's rows contiguous skips packing */
#endif
#ifndef EMB_GEMM_NC
#define EMB_GEMM_NC 512
#endif

/* Tiles per vector width. Plain C (no EMB_VEC_BYTES) uses a small scalar tile. */
#if defined(EMB_VEC_BYTES) && (defined(__GNUC__) || defined(__clang__))
#define EMB_VL32 (EMB_VEC_BYTES / 4)
#define EMB_VL64 (EMB_VEC_BYTES / 8)
#if EMB_VEC_BYTES >= 64
#define EMB_MR32 8
#define EMB_NR32 32
#define EMB_MR64 8
#define EMB_NR64 16
#elif EMB_VEC_BYTES >= 32
#define EMB_MR32 6
#define EMB_NR32 16
#define EMB_MR64 6
#define EMB_NR64 8
#elif defined(__aarch64__)
#define EMB_MR32 8
#define EMB_NR32 12
#define EMB_MR64 8
#define EMB_NR64 6
#else
#define EMB_MR32 4
#define EMB_NR32 8
#define EMB_MR64 4
#define EMB_NR64 4
#endif
#else
#define EMB_VL32 0
#define EMB_VL64 0
#define EMB_MR32 4
#define EMB_NR32 4
#define EMB_MR64 4
#define EMB_NR64 4
#endif

#define T float
#define SUF f32
#define TRANSPOSE transpose_f32
#define MR EMB_MR32
#define NR EMB_NR32
#define VL EMB_VL32
#define KC EMB_GEMM_KC
#define MC EMB_GEMM_MC
#define NC EMB_GEMM_NC
#include "gemm_tmpl.h"
#undef T
#undef SUF
#undef TRANSPOSE
#undef MR
#undef NR
#undef VL
#undef NC

#define T double
#define SUF f64
#define TRANSPOSE transpose_f64
#define MR EMB_MR64
#define NR EMB_NR64
#define VL EMB_VL64
#define NC (EMB_GEMM_NC / 2)
#include "gemm_tmpl.h"
#undef T
#undef SUF
#undef TRANSPOSE
#undef MR
#undef NR
#undef VL
#undef KC
#undef MC
#undef NC

#define MM_INT(T, UT) \
    { \
        const T *A = (const T *)a; \
        const T *B = (const T *)b; \
        T *C = (T *)c; \
        for (i = 0; i < m; i++) \
            for (j = 0; j < n; j++) { \
                uint64_t s = 0; \
                for (p = 0; p < k; p++) \
                    s += (uint64_t)(int64_t)A[i * rsa + p * csa] * (uint64_t)(int64_t)B[p * rsb + j * csb]; \
                C[i * n + j] = (T)(UT)s; \
            } \
        return; \
    }

void EMB_FN(matmul_int)(int dtype, emb_i m, emb_i n, emb_i k, const void *a, emb_i rsa, emb_i csa,
                        const void *b, emb_i rsb, emb_i csb, void *c)
{
    emb_i i, j, p;
    switch (dtype) {
    case EMB_I8: MM_INT(int8_t, uint8_t)
    case EMB_I32: MM_INT(int32_t, uint32_t)
    case EMB_I64: MM_INT(int64_t, uint64_t)
    default: return;
    }
}
