/* The kernels for x86-64 with AVX2 and FMA (built only there; picked at run time). */
#define EMB_PREFIX emb_avx2_
#define EMB_VEC_BYTES 32
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,bmi,bmi2"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC target("avx2,fma,f16c,bmi,bmi2")
#endif
#include "k_all.c"
#if defined(__clang__)
#pragma clang attribute pop
#endif
