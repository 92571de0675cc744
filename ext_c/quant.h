/* The int8 kernels of ember.quant (quant.c), as Python sees them: plain declarations only, cffi's
   cdef reads this file as it is. Every int8 value is in [-127, 127]; sums are int32. Each kernel
   takes a workspace of the bytes its *_work function gives (its operands widened to int16). */

/* acc[i * n + j] = sum_p a[i * k + p] * b[j * k + p]: a (m, k) and b (n, k) row-major int8 */
int64_t emb_q8_gemm_work(int64_t m, int64_t n, int64_t k);
void emb_q8_gemm(int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *acc, int16_t *work);

/* acc (N, O, OH, OW) int32 = conv2d of x (N, C, H, W) int8 with w (O, C/G, KH, KW) int8, zero
   padding; params as emb_conv2d's (the EMB_CV_* block of kernels.h) */
int64_t emb_q8_conv2d_work(const int64_t *params);
void emb_q8_conv2d(const int64_t *params, const int8_t *x, const int8_t *w, int32_t *acc, int16_t *work);
