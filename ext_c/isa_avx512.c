/* The kernels for x86-64 with AVX-512 (F, VL, BW, DQ) and FMA (built only there; picked at run
   time). */
#define EMB_PREFIX emb_avx512_
#define EMB_VEC_BYTES 64
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c,bmi,bmi2"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c,bmi,bmi2,prefer-vector-width=512")
#endif
#include "k_all.c"
#if defined(__clang__)
#pragma clang attribute pop
#endif
