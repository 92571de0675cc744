/* The kernels for the baseline instruction set (x86-64: SSE2; aarch64: NEON). */
#define EMB_PREFIX emb_base_
#if defined(__x86_64__) || defined(__aarch64__) || defined(_M_X64) || defined(_M_ARM64)
#define EMB_VEC_BYTES 16
#endif
#include "k_all.c"
