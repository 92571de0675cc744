/* The int8 kernels of ember.quant (quant.c), as Python sees them: plain declarations only, cffi's
   cdef reads this file as it is. Every int8 value is in [-127, 127]; sums are int32. */

/* acc[i * n + j] = sum_p a[i * k + p] * b[j * k + p]: a (m, k) and b (n, k) row-major int8 */
void emb_q8_gemm(int64_t m, int64_t n, int64_t k, const int8_t *a, const int8_t *b, int32_t *acc);

/* bytes of workspace emb_q8_conv2d needs for these conv2d parameters (emb_conv2d's EMB_CV_* block) */
int64_t emb_q8_conv2d_work(const int64_t *params);

/* acc (N, O, OH, OW) int32 = conv2d of x (N, C, H, W) int8 with w (O, C/G, KH, KW) int8, zero padding */
void emb_q8_conv2d(const int64_t *params, const int8_t *x, const int8_t *w, int32_t *acc, int8_t *work);
