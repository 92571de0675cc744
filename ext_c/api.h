/* What Python sees of ember._ckernels (dispatch.c). Plain declarations only: cffi's cdef reads this
   file together with ops.h. Pointers travel as integers (array.array addresses). */
int emb_isa(void);
int emb_best_isa(void);
int emb_set_isa(int isa);
int emb_hardware_threads(void);
uintptr_t emb_parallel_addr(void); /* void emb_parallel(int nt, void (*fn)(void *, int, int), void *ctx) */

void emb_copy_nd(int elsize, int nd, uintptr_t shape, uintptr_t src, uintptr_t sst, uintptr_t dst,
                 uintptr_t dst_st);
int emb_cast(int from, int to, int64_t n, uintptr_t src, uintptr_t dst);
int emb_unary(int op, int dtype, int64_t n, uintptr_t x, uintptr_t out, int nthreads);
int emb_binary(int op, int dtype, int nd, uintptr_t shape, uintptr_t a, uintptr_t sa, uintptr_t b,
               uintptr_t sb, uintptr_t out);
int emb_binary1(int op, int dtype, int64_t n, uintptr_t a, int64_t sa, uintptr_t b, int64_t sb,
                uintptr_t out);
void emb_where(int elsize, int nd, uintptr_t shape, uintptr_t c, uintptr_t sc, uintptr_t a,
               uintptr_t sa, uintptr_t b, uintptr_t sb, uintptr_t out);
int emb_reduce(int op, int dtype, int64_t outer, int64_t n, int64_t inner, uintptr_t x, uintptr_t out);
int emb_matmul(int dtype, int nbd, uintptr_t bshape, uintptr_t bsa, uintptr_t bsb, int64_t m, int64_t n,
               int64_t k, uintptr_t a, int64_t rsa, int64_t csa, uintptr_t b, int64_t rsb, int64_t csb,
               uintptr_t c, int accumulate, int nthreads);
int emb_conv2d(int dtype, uintptr_t params, uintptr_t x, uintptr_t w, uintptr_t bias, uintptr_t out,
               int nthreads);
void emb_pool2d(int op, int dtype, uintptr_t params, uintptr_t x, uintptr_t out, int nthreads);
int64_t emb_gather(int elsize, int nd, uintptr_t ishape, uintptr_t idx, uintptr_t x, uintptr_t xst, int dim,
                   int64_t dimsize, uintptr_t out);
int64_t emb_scatter(int dtype, int add, int nd, uintptr_t ishape, uintptr_t idx, uintptr_t src, uintptr_t sst,
                    uintptr_t out, uintptr_t ost, int dim, int64_t dimsize);
void emb_gelu_f32(int form, int64_t n, uintptr_t x, uintptr_t out, int nthreads);
void emb_softmax_f32(int64_t rows, int64_t n, uintptr_t x, uintptr_t out, int log_, int nthreads);
void emb_layer_norm_f32(int64_t rows, int64_t n, uintptr_t x, uintptr_t w, uintptr_t b, double eps,
                        uintptr_t out, int nthreads);
void emb_bias_rows_f32(int64_t rows, int64_t n, uintptr_t bias, uintptr_t out);

/* k_random.c: draws with ember's Generator stream, bit for bit (core_pure/rng.py). state: the 4
   xoshiro128++ words (uint32), advanced in place; spare: {1.0 when held, value} of Box-Muller's
   second value. Each returns 0, or -1 for an output type it does not write (nothing drawn). */
int emb_random_uniform(int dtype, int64_t n, uintptr_t state, double lo, double hi, uintptr_t out);
int emb_random_normal(int dtype, int64_t n, uintptr_t state, uintptr_t spare, double mean, double std,
                      uintptr_t out);
int emb_random_randint(int dtype, int64_t n, uintptr_t state, int64_t lo, uint64_t span, uintptr_t out);
int emb_random_bernoulli(int dtype, int64_t n, uintptr_t state, double p, uintptr_t out);

/* conv and pool gradients, reductions over several dims (convk) */
int emb_conv2d_grad_input(int dtype, uintptr_t params, uintptr_t g, uintptr_t w, uintptr_t gx, int nthreads);
int emb_conv2d_grad_weight(int dtype, uintptr_t params, uintptr_t x, uintptr_t g, uintptr_t gw, int nthreads);
int emb_pool2d_grad(int op, int dtype, uintptr_t params, uintptr_t x, uintptr_t g, uintptr_t gx, int nthreads);
int emb_reduce_dims(int op, int dtype, int nd, uintptr_t shape, uintptr_t reduced, uintptr_t x, uintptr_t out);
