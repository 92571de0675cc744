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

/* ---- optimizers: ember.accel.optim's SGD and Adam/AdamW over a parameter group (k_optim.c) ----
   emb_optim_step(rule, dtype, count, sizes, ptrs, hyper, nthreads): `count` parameters of
   sizes[k] elements (int64), dtype EMB_F32 or EMB_F64; ptrs: per parameter the addresses in the
   rule's EMB_OPT_* / EMB_SGD_* / EMB_ADAM_* order (uint64; 0 for an absent state: SGD's first
   momentum step, Adam without amsgrad); hyper: the rule's values (accel/optim/updates.py's
   SGD_HYPER, ADAM_HYPER) in `dtype`. Writes every output array; -1 for an unknown rule or dtype. */
enum { EMB_OPT_SGD = 0, EMB_OPT_ADAM = 1, EMB_OPT_X = 0, EMB_OPT_G = 1 };
enum { EMB_SGD_BUF = 2, EMB_SGD_OUT_X = 3, EMB_SGD_OUT_BUF = 4, EMB_SGD_NPTRS = 5 };
enum { EMB_ADAM_M = 2, EMB_ADAM_V = 3, EMB_ADAM_VMAX = 4, EMB_ADAM_OUT_X = 5, EMB_ADAM_OUT_M = 6,
       EMB_ADAM_OUT_V = 7, EMB_ADAM_OUT_VMAX = 8, EMB_ADAM_NPTRS = 9 };
enum { EMB_SGD_LR = 0, EMB_SGD_WEIGHT_DECAY = 1, EMB_SGD_MOMENTUM = 2, EMB_SGD_DAMP = 3,
       EMB_SGD_MAXIMIZE = 4, EMB_SGD_WEIGHT_DECAY_ON = 5, EMB_SGD_MOMENTUM_ON = 6, EMB_SGD_DAMP_ON = 7,
       EMB_SGD_NESTEROV = 8, EMB_SGD_NHYPER = 9 };
enum { EMB_ADAM_WEIGHT_DECAY = 0, EMB_ADAM_DECAY = 1, EMB_ADAM_LERP_WEIGHT = 2, EMB_ADAM_BETA2 = 3,
       EMB_ADAM_ONE_MINUS_BETA2 = 4, EMB_ADAM_BC2_SQRT = 5, EMB_ADAM_EPS = 6, EMB_ADAM_NEG_STEP_SIZE = 7,
       EMB_ADAM_MAXIMIZE = 8, EMB_ADAM_WEIGHT_DECAY_ON = 9, EMB_ADAM_DECOUPLED = 10, EMB_ADAM_LERP_HIGH = 11,
       EMB_ADAM_AMSGRAD = 12, EMB_ADAM_NHYPER = 13 };
int emb_optim_step(int rule, int dtype, int64_t count, uintptr_t sizes, uintptr_t ptrs, uintptr_t hyper,
                   int nthreads);

/* conv and pool gradients, reductions over several dims (convk) */
int emb_conv2d_grad_input(int dtype, uintptr_t params, uintptr_t g, uintptr_t w, uintptr_t gx, int nthreads);
int emb_conv2d_grad_weight(int dtype, uintptr_t params, uintptr_t x, uintptr_t g, uintptr_t gw, int nthreads);
int emb_pool2d_grad(int op, int dtype, uintptr_t params, uintptr_t x, uintptr_t g, uintptr_t gx, int nthreads);
int emb_reduce_dims(int op, int dtype, int nd, uintptr_t shape, uintptr_t reduced, uintptr_t x, uintptr_t out);

/* A captured step's kernel calls, replayed from one loop (plan.c, accel/capture/lower_c.py): call i
   is kernel kinds[i] (EMB_PLAN_*) with the int64 arguments args[offs[i]...] in its declared order;
   rets[i] is the status its recording returned (0 for a void kernel). Returns -1 when every call
   gave its recorded status, else the index of the first that did not (later calls did not run). */
int64_t emb_run_plan(int64_t n, uintptr_t kinds, uintptr_t offs, uintptr_t args, uintptr_t rets);

/* wgpu_encode.c: wgpu-native's compute-pass calls from C (accel/wgpu/runtime.py). emb_wgpu_use takes
   the addresses of wgpuComputePassEncoderSetPipeline, ...SetBindGroup and ...DispatchWorkgroups.
   emb_wgpu_dispatch takes wgpu-py's handles: it sets the pipeline unless that is NULL (the one set
   before stays), then bind group 0 at the dynamic offset, and dispatches. emb_wgpu_encode does that
   for n steps of 6 uint64 words (pipeline, group addresses, offset, gx, gy, gz), setting a pipeline
   only when it changes. Each returns 0, or -1 before emb_wgpu_use or for a null handle (nothing
   recorded from that step on). */
void emb_wgpu_use(uintptr_t set_pipeline_addr, uintptr_t set_bind_group_addr, uintptr_t dispatch_addr);
int emb_wgpu_dispatch(void *pass, void *pipeline, void *group, uint32_t offset, uint32_t gx, uint32_t gy,
                      uint32_t gz);
int emb_wgpu_encode(void *pass, int64_t n, uintptr_t steps);
