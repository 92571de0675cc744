/* The layer Python calls: picks the kernels built for this CPU's instruction set at run time, and
   splits large matmul, conv, pooling and elementwise work over threads (pthreads). Not part of the
   portable kernels: a microcontroller build calls the kernels directly.

   Pointer arguments arrive as integers (uintptr_t): the Python side passes array.array addresses,
   which costs far less per call than cffi buffer objects. Every call runs with the GIL released. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "api.h"

#if !defined(_WIN32)
#include <pthread.h>
#include <unistd.h>
#define EMB_PTHREADS 1
#endif

#define EMB_MAX_THREADS 64
#define EMB_MIN_(a, b) ((a) < (b) ? (a) : (b))
#define EMB_MAX_(a, b) ((a) > (b) ? (a) : (b))

/* ---- per-ISA tables --------------------------------------------------------------------------- */

#define DECLARE_BASE(ret, name, params) ret emb_base_##name params;
EMB_KERNELS(DECLARE_BASE)
#ifdef EMB_HAVE_AVX2
#define DECLARE_AVX2(ret, name, params) ret emb_avx2_##name params;
EMB_KERNELS(DECLARE_AVX2)
#endif
#ifdef EMB_HAVE_AVX512
#define DECLARE_AVX512(ret, name, params) ret emb_avx512_##name params;
EMB_KERNELS(DECLARE_AVX512)
#endif

typedef struct {
#define FIELD(ret, name, params) ret(*name) params;
    EMB_KERNELS(FIELD)
} emb_table;

static const emb_table table_base = {
#define ENTRY_BASE(ret, name, params) emb_base_##name,
    EMB_KERNELS(ENTRY_BASE)
};
#ifdef EMB_HAVE_AVX2
static const emb_table table_avx2 = {
#define ENTRY_AVX2(ret, name, params) emb_avx2_##name,
    EMB_KERNELS(ENTRY_AVX2)
};
#endif
#ifdef EMB_HAVE_AVX512
static const emb_table table_avx512 = {
#define ENTRY_AVX512(ret, name, params) emb_avx512_##name,
    EMB_KERNELS(ENTRY_AVX512)
};
#endif

static const emb_table *K = 0;
static int current_isa = -1;

static int detect_isa(void)
{
#if defined(EMB_HAVE_AVX2) || defined(EMB_HAVE_AVX512)
    __builtin_cpu_init();
#endif
#ifdef EMB_HAVE_AVX512
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2"))
        return EMB_ISA_AVX512;
#endif
#ifdef EMB_HAVE_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return EMB_ISA_AVX2;
#endif
    return EMB_ISA_BASE;
}

static const emb_table *table_for(int isa)
{
#ifdef EMB_HAVE_AVX512
    if (isa == EMB_ISA_AVX512)
        return &table_avx512;
#endif
#ifdef EMB_HAVE_AVX2
    if (isa == EMB_ISA_AVX2)
        return &table_avx2;
#endif
    (void)isa;
    return &table_base;
}

int emb_best_isa(void)
{
    return detect_isa();
}

int emb_isa(void)
{
    if (current_isa < 0) {
        current_isa = detect_isa();
        K = table_for(current_isa);
    }
    return current_isa;
}

int emb_set_isa(int isa)
{
    int best = detect_isa();
    if (isa < EMB_ISA_BASE || isa > best)
        return -1;
    if (table_for(isa) == &table_base)
        isa = EMB_ISA_BASE;
    current_isa = isa;
    K = table_for(isa);
    return isa;
}

#define TABLE() (K ? K : (emb_isa(), K))

/* ---- threads ----------------------------------------------------------------------------------- */

typedef void (*emb_task)(void *ctx, int tid, int nt);

typedef struct {
    emb_task fn;
    void *ctx;
    int tid, nt;
} emb_job;

#ifdef EMB_PTHREADS
static void *run_job(void *arg)
{
    emb_job *j = (emb_job *)arg;
    j->fn(j->ctx, j->tid, j->nt);
    return 0;
}

/* threads made for this call only: where the pool is busy (another caller, or a nested call) */
static void parallel_spawn(int nt, emb_task fn, void *ctx)
{
    pthread_t th[EMB_MAX_THREADS];
    emb_job jobs[EMB_MAX_THREADS];
    int started[EMB_MAX_THREADS];
    int t;
    for (t = 1; t < nt; t++) {
        jobs[t].fn = fn;
        jobs[t].ctx = ctx;
        jobs[t].tid = t;
        jobs[t].nt = nt;
        started[t] = pthread_create(&th[t], 0, run_job, &jobs[t]) == 0;
    }
    fn(ctx, 0, nt);
    for (t = 1; t < nt; t++) {
        if (started[t])
            pthread_join(th[t], 0);
        else
            fn(ctx, t, nt); /* could not start a thread: do its share here */
    }
}

/* The worker pool: threads made once and woken per call (creating them costs tens of us a call).
   One caller at a time uses it; a fork's child starts with no workers (pthread_atfork). */
static struct {
    pthread_mutex_t caller, mu;
    pthread_cond_t go, done;
    int workers;                     /* workers started: tids 1..workers */
    unsigned long generation;        /* bumped per job */
    unsigned long born[EMB_MAX_THREADS]; /* the generation when each worker was made */
    emb_task fn;
    void *ctx;
    int nt, active, pending;         /* the job's thread count; tids that run it; yet to finish */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER, 0, 0, {0}, 0, 0, 0, 0, 0};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_after_fork(void)
{
    pthread_mutex_init(&pool.caller, 0);
    pthread_mutex_init(&pool.mu, 0);
    pthread_cond_init(&pool.go, 0);
    pthread_cond_init(&pool.done, 0);
    pool.workers = 0;
    pool.pending = 0;
}

/* a fork while a job runs would copy locked mutexes: the parent's handlers hold both around it */
static void pool_before_fork(void)
{
    pthread_mutex_lock(&pool.caller);
    pthread_mutex_lock(&pool.mu);
}

static void pool_parent_after_fork(void)
{
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.caller);
}

static void pool_register(void)
{
    pthread_atfork(pool_before_fork, pool_parent_after_fork, pool_after_fork);
}

static void *pool_worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    unsigned long seen;
    pthread_mutex_lock(&pool.mu);
    seen = pool.born[tid]; /* not pool.generation: the job it was made for may be posted already */
    for (;;) {
        while (pool.generation == seen)
            pthread_cond_wait(&pool.go, &pool.mu);
        seen = pool.generation;
        if (tid < pool.active) {
            emb_task fn = pool.fn;
            void *ctx = pool.ctx;
            int nt = pool.nt;
            pthread_mutex_unlock(&pool.mu);
            fn(ctx, tid, nt);
            pthread_mutex_lock(&pool.mu);
            if (--pool.pending == 0)
                pthread_cond_signal(&pool.done);
        }
    }
    return 0;
}

/* start workers up to tid nt-1 (pool.mu held); returns the threads a job can use */
static int pool_grow(int nt)
{
    pthread_attr_t attr;
    pthread_t th;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (pool.workers < nt - 1) {
        pool.born[pool.workers + 1] = pool.generation;
        if (pthread_create(&th, &attr, pool_worker, (void *)(intptr_t)(pool.workers + 1)) != 0)
            break;
        pool.workers++;
    }
    pthread_attr_destroy(&attr);
    return pool.workers + 1 < nt ? pool.workers + 1 : nt;
}
#endif

/* fn(ctx, tid, nt) for tid in 0..nt-1; the calling thread runs tid 0 */
void emb_parallel(int nt, emb_task fn, void *ctx)
{
#ifdef EMB_PTHREADS
    int t, got;
    if (nt > EMB_MAX_THREADS)
        nt = EMB_MAX_THREADS;
    if (nt <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_once(&pool_once, pool_register);
    if (pthread_mutex_trylock(&pool.caller) != 0) {
        parallel_spawn(nt, fn, ctx);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    got = pool_grow(nt);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.nt = nt;
    pool.active = got;
    pool.pending = got - 1;
    pool.generation++;
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    fn(ctx, 0, nt);
    for (t = got; t < nt; t++)
        fn(ctx, t, nt); /* shares of the workers that could not be started */
    pthread_mutex_lock(&pool.mu);
    while (pool.pending > 0)
        pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.caller);
#else
    int t;
    for (t = 0; t < nt; t++)
        fn(ctx, t, nt);
#endif
}

uintptr_t emb_parallel_addr(void)
{
    return (uintptr_t)&emb_parallel;
}

#define parallel emb_parallel

int emb_hardware_threads(void)
{
#if defined(EMB_PTHREADS) && defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < EMB_MAX_THREADS ? n : EMB_MAX_THREADS) : 1;
#else
    return 1;
#endif
}

/* threads worth using for `work` units (multiply-adds or elements), given a per-thread minimum */
static int threads_for(int nthreads, double work, double min_per_thread)
{
    int nt = nthreads < 1 ? 1 : nthreads;
    if (nt > EMB_MAX_THREADS)
        nt = EMB_MAX_THREADS;
    while (nt > 1 && work / nt < min_per_thread)
        nt--;
    return nt;
}

static void share(emb_i total, int tid, int nt, emb_i align, emb_i *lo, emb_i *hi)
{
    emb_i per = (total + nt - 1) / nt;
    per = (per + align - 1) / align * align;
    *lo = EMB_MIN_(per * tid, total);
    *hi = EMB_MIN_(per * (tid + 1), total);
}

static void *aligned_alloc64(size_t bytes, void **raw)
{
    *raw = malloc(bytes + 64);
    if (!*raw)
        return 0;
    return (void *)(((uintptr_t)*raw + 63) & ~(uintptr_t)63);
}

/* Workspace: each thread keeps a few buffers between calls (freed when the thread ends), so small
   convs and matmuls pay no malloc, page faults or munmap per call; buffers over 16 MiB are not kept. */
#define EMB_SLOTS 2
#define EMB_KEEP_BYTES ((size_t)16 << 20)

#ifdef EMB_PTHREADS
typedef struct {
    void *raw[EMB_SLOTS];
    size_t size[EMB_SLOTS];
} emb_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok = 0;

static void scratch_free(void *p)
{
    emb_scratch *s = (emb_scratch *)p;
    int i;
    for (i = 0; i < EMB_SLOTS; i++)
        free(s->raw[i]);
    free(s);
}

static void scratch_init(void)
{
    scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

static void *scratch(int slot, size_t bytes)
{
    emb_scratch *s;
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_ok)
        return 0;
    s = (emb_scratch *)pthread_getspecific(scratch_key);
    if (!s) {
        s = (emb_scratch *)calloc(1, sizeof *s);
        if (!s)
            return 0;
        if (pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            return 0;
        }
    }
    if (s->size[slot] < bytes) {
        free(s->raw[slot]);
        s->raw[slot] = malloc(bytes + 64);
        s->size[slot] = s->raw[slot] ? bytes : 0;
        if (!s->raw[slot])
            return 0;
    }
    return (void *)(((uintptr_t)s->raw[slot] + 63) & ~(uintptr_t)63);
}
#endif

/* a 64-byte aligned buffer of `bytes`; *raw is what work_put frees (0 for a kept buffer) */
static void *work_get(int slot, size_t bytes, void **raw)
{
#ifdef EMB_PTHREADS
    if (bytes <= EMB_KEEP_BYTES) {
        void *p = scratch(slot, bytes);
        if (p) {
            *raw = 0;
            return p;
        }
    }
#else
    (void)slot;
#endif
    return aligned_alloc64(bytes, raw);
}

static void work_put(void *raw)
{
    free(raw);
}

/* ---- elementwise -------------------------------------------------------------------------------- */

void emb_copy_nd(int elsize, int nd, uintptr_t shape, uintptr_t src, uintptr_t sst, uintptr_t dst,
                 uintptr_t dst_st)
{
    TABLE()->copy_nd(elsize, nd, (const emb_i *)shape, (const void *)src, (const emb_i *)sst,
                     (void *)dst, (const emb_i *)dst_st);
}

int emb_cast(int from, int to, int64_t n, uintptr_t src, uintptr_t dst)
{
    return TABLE()->cast(from, to, n, (const void *)src, (void *)dst);
}

typedef struct {
    int op, dtype, osize, isize;
    emb_i n;
    const char *x;
    char *out;
    int rc;
} unary_ctx;

static void unary_task(void *p, int tid, int nt)
{
    unary_ctx *c = (unary_ctx *)p;
    emb_i lo, hi;
    share(c->n, tid, nt, 64, &lo, &hi);
    if (lo < hi && TABLE()->unary(c->op, c->dtype, hi - lo, c->x + lo * c->isize, c->out + lo * c->osize) < 0)
        c->rc = -1;
}

int emb_unary(int op, int dtype, int64_t n, uintptr_t x, uintptr_t out, int nthreads)
{
    unary_ctx c;
    int cheap = op == EMB_U_NEG || op == EMB_U_ABS || op == EMB_U_SIGN || op == EMB_U_FLOOR ||
                op == EMB_U_CEIL || op == EMB_U_ROUND || op == EMB_U_TRUNC || op == EMB_U_RECIPROCAL ||
                op == EMB_U_SQRT || op >= EMB_U_BITWISE_NOT;
    int nt = threads_for(nthreads, (double)n, cheap ? 1 << 20 : 1 << 14);
    c.op = op;
    c.dtype = dtype;
    c.n = n;
    c.x = (const char *)x;
    c.out = (char *)out;
    c.rc = 0;
    c.isize = dtype == EMB_F32 || dtype == EMB_I32 ? 4 : dtype == EMB_F64 || dtype == EMB_I64 ? 8 : 1;
    c.osize = (op == EMB_U_ISNAN || op == EMB_U_ISINF || op == EMB_U_LOGICAL_NOT) ? 1 : c.isize;
    parallel(nt, unary_task, &c);
    return c.rc;
}

int emb_binary(int op, int dtype, int nd, uintptr_t shape, uintptr_t a, uintptr_t sa, uintptr_t b,
               uintptr_t sb, uintptr_t out)
{
    return TABLE()->binary(op, dtype, nd, (const emb_i *)shape, (const void *)a, (const emb_i *)sa,
                           (const void *)b, (const emb_i *)sb, (void *)out);
}

int emb_binary1(int op, int dtype, int64_t n, uintptr_t a, int64_t sa, uintptr_t b, int64_t sb,
                uintptr_t out)
{
    emb_i shape = n, s0 = sa, s1 = sb;
    return TABLE()->binary(op, dtype, 1, &shape, (const void *)a, &s0, (const void *)b, &s1, (void *)out);
}

void emb_where(int elsize, int nd, uintptr_t shape, uintptr_t c, uintptr_t sc, uintptr_t a,
               uintptr_t sa, uintptr_t b, uintptr_t sb, uintptr_t out)
{
    TABLE()->where(elsize, nd, (const emb_i *)shape, (const uint8_t *)c, (const emb_i *)sc,
                   (const void *)a, (const emb_i *)sa, (const void *)b, (const emb_i *)sb, (void *)out);
}

int emb_reduce(int op, int dtype, int64_t outer, int64_t n, int64_t inner, uintptr_t x, uintptr_t out)
{
    return TABLE()->reduce(op, dtype, outer, n, inner, (const void *)x, (void *)out);
}

/* ---- matmul --------------------------------------------------------------------------------------- */

typedef struct {
    int dtype, nbd, accumulate;
    const emb_i *bshape, *bsa, *bsb;
    emb_i batch, m, n, k, rsa, csa, rsb, csb;
    const char *a, *b;
    char *c;
    int split; /* 0: batches, 1: rows, 2: columns */
    int rc;
} mm_ctx;

static void batch_offsets(const mm_ctx *c, emb_i t, emb_i *oa, emb_i *ob)
{
    int d;
    *oa = *ob = 0;
    for (d = c->nbd - 1; d >= 0; d--) {
        emb_i i = t % c->bshape[d];
        t /= c->bshape[d];
        *oa += i * c->bsa[d];
        *ob += i * c->bsb[d];
    }
}

static void mm_task(void *p, int tid, int nt)
{
    mm_ctx *c = (mm_ctx *)p;
    const emb_table *T = TABLE();
    int es = c->dtype == EMB_F32 || c->dtype == EMB_I32 ? 4 : c->dtype == EMB_I8 ? 1 : 8;
    emb_i t0 = 0, t1 = c->batch, r0 = 0, r1 = c->m, j0 = 0, j1 = c->n, t;
    void *raw = 0, *work = 0;
    if (c->split == 0)
        share(c->batch, tid, nt, 1, &t0, &t1);
    else if (c->split == 1)
        share(c->m, tid, nt, 24, &r0, &r1);
    else
        share(c->n, tid, nt, 96, &j0, &j1);
    if (t0 >= t1 || r0 >= r1 || j0 >= j1)
        return;
    if (c->dtype == EMB_F32 || c->dtype == EMB_F64) {
        emb_i words = c->dtype == EMB_F32 ? T->gemm_f32_work() : T->gemm_f64_work();
        if (r1 - r0 >= 4) {
            work = work_get(0, (size_t)words * es, &raw);
            if (!work) {
                c->rc = -1;
                return;
            }
        }
    }
    for (t = t0; t < t1; t++) {
        emb_i oa, ob;
        const char *a, *b;
        char *cc = c->c + (t * c->m * c->n + r0 * c->n + j0) * es;
        batch_offsets(c, t, &oa, &ob);
        a = c->a + (oa + r0 * c->rsa) * es;
        b = c->b + (ob + j0 * c->csb) * es;
        if (c->dtype == EMB_F32)
            T->gemm_f32(r1 - r0, j1 - j0, c->k, (const float *)a, c->rsa, c->csa, (const float *)b, 0, c->rsb,
                        c->csb, (float *)cc, c->n, c->accumulate, (float *)work);
        else if (c->dtype == EMB_F64)
            T->gemm_f64(r1 - r0, j1 - j0, c->k, (const double *)a, c->rsa, c->csa, (const double *)b, 0,
                        c->rsb, c->csb, (double *)cc, c->n, c->accumulate, (double *)work);
        else
            T->matmul_int(c->dtype, r1 - r0, c->n, c->k, a, c->rsa, c->csa, b, c->rsb, c->csb, cc);
    }
    work_put(raw);
}

int emb_matmul(int dtype, int nbd, uintptr_t bshape, uintptr_t bsa, uintptr_t bsb, int64_t m, int64_t n,
               int64_t k, uintptr_t a, int64_t rsa, int64_t csa, uintptr_t b, int64_t rsb, int64_t csb,
               uintptr_t c, int accumulate, int nthreads)
{
    mm_ctx ctx;
    int d, nt;
    ctx.dtype = dtype;
    ctx.nbd = nbd;
    ctx.accumulate = accumulate;
    ctx.bshape = (const emb_i *)bshape;
    ctx.bsa = (const emb_i *)bsa;
    ctx.bsb = (const emb_i *)bsb;
    ctx.batch = 1;
    for (d = 0; d < nbd; d++)
        ctx.batch *= ctx.bshape[d];
    ctx.m = m;
    ctx.n = n;
    ctx.k = k;
    ctx.rsa = rsa;
    ctx.csa = csa;
    ctx.rsb = rsb;
    ctx.csb = csb;
    ctx.a = (const char *)a;
    ctx.b = (const char *)b;
    ctx.c = (char *)c;
    ctx.rc = 0;
    if (ctx.batch == 0 || m == 0 || n == 0)
        return 0;
    nt = dtype == EMB_F32 || dtype == EMB_F64
             ? threads_for(nthreads, (double)ctx.batch * m * n * (k ? k : 1), 1 << 21) : 1;
    if (nt > 1 && ctx.batch >= nt)
        ctx.split = 0;
    else if (m >= n && m >= 48)
        ctx.split = 1;
    else
        ctx.split = 2;
    if (ctx.split == 1 && (m + nt - 1) / nt < 24)
        nt = (int)EMB_MAX_(1, m / 24);
    if (ctx.split == 2 && (n + nt - 1) / nt < 96)
        nt = (int)EMB_MAX_(1, n / 96);
    if (dtype != EMB_F32 && dtype != EMB_F64)
        ctx.split = 0;
    parallel(nt, mm_task, &ctx);
    return ctx.rc;
}

/* ---- conv and pooling ----------------------------------------------------------------------------- */

typedef struct {
    int dtype;
    const emb_i *p;
    const void *xp, *w, *bias;
    void *out;
    emb_i ncols, chunk, pieces, items;
    emb_i work_words;
    int rc;
} conv_ctx;

static void conv_task(void *ptr, int tid, int nt)
{
    conv_ctx *c = (conv_ctx *)ptr;
    const emb_table *T = TABLE();
    emb_i lo, hi, it;
    void *raw, *work;
    share(c->items, tid, nt, 1, &lo, &hi);
    if (lo >= hi)
        return;
    work = work_get(0, (size_t)c->work_words * (c->dtype == EMB_F64 ? 8 : 4), &raw);
    if (!work) {
        c->rc = -1;
        return;
    }
    for (it = lo; it < hi; it++) {
        emb_i piece = it % c->pieces, bg = it / c->pieces;
        emb_i g = bg % c->p[EMB_CV_G], b = bg / c->p[EMB_CV_G];
        emb_i j0 = piece * c->chunk, j1 = EMB_MIN_(j0 + c->chunk, c->ncols);
        T->conv_tile(c->dtype, c->p, c->xp, c->w, c->bias, c->out, b, g, j0, j1, work);
    }
    work_put(raw);
}

/* whether every thread's share of the batch (nt threads) takes conv kernel `kind` with the batch in
   the vector lanes (k_conv_lanes.c) */
static int lanes_for(const emb_table *T, int dtype, const emb_i *p, int kind, int nt)
{
    emb_i lo, hi;
    int t;
    for (t = 0; t < nt; t++) {
        share(p[EMB_CV_N], t, nt, 1, &lo, &hi);
        if (hi > lo && T->conv_lanes(dtype, p, kind, hi - lo) == 0)
            return 0;
    }
    return 1;
}

/* conv kernel `kind` (EMB_LANES_*) over images [lo, hi): the batch-in-lanes kernel where `lanes`, else
   the per-image gradient kernel (the forward's per-image path is conv_task); a and b as
   conv_lanes_run takes them. -1 where no workspace */
static int conv_share(int dtype, int kind, int lanes, const emb_i *p, const void *a, const void *b,
                      const void *bias, void *out, emb_i lo, emb_i hi)
{
    const emb_table *T = TABLE();
    void *raw, *work;
    emb_i words = lanes ? T->conv_lanes_work(dtype, p) : T->conv_grad_work(dtype, p);
    work = work_get(0, (size_t)words * (dtype == EMB_F64 ? 8 : 4), &raw);
    if (!work)
        return -1;
    if (lanes)
        T->conv_lanes_run(dtype, kind, p, a, b, bias, out, lo, hi, work);
    else if (kind == EMB_LANES_INPUT)
        T->conv_grad_input(dtype, p, a, b, out, lo, hi, work);
    else
        T->conv_grad_weight(dtype, p, a, b, out, lo, hi, work);
    work_put(raw);
    return 0;
}

typedef struct {
    int dtype;
    const emb_i *p;
    const void *x, *w, *bias;
    void *out;
    int rc;
} lanes_ctx;

static void lanes_forward_task(void *ptr, int tid, int nt)
{
    lanes_ctx *c = (lanes_ctx *)ptr;
    emb_i lo, hi;
    share(c->p[EMB_CV_N], tid, nt, 1, &lo, &hi);
    if (lo < hi && conv_share(c->dtype, EMB_LANES_FORWARD, 1, c->p, c->x, c->w, c->bias, c->out, lo, hi) < 0)
        c->rc = -1;
}

int emb_conv2d(int dtype, uintptr_t params, uintptr_t x, uintptr_t w, uintptr_t bias, uintptr_t out,
               int nthreads)
{
    const emb_table *T = TABLE();
    const emb_i *p = (const emb_i *)params;
    conv_ctx c;
    void *raw;
    emb_i bg = p[EMB_CV_N] * p[EMB_CV_G];
    double macs = (double)p[EMB_CV_N] * p[EMB_CV_O] * (p[EMB_CV_C] / p[EMB_CV_G]) * p[EMB_CV_KH] *
                  p[EMB_CV_KW] * p[EMB_CV_OH] * p[EMB_CV_OW];
    int nt = threads_for(nthreads, macs, 1 << 21);
    size_t es = dtype == EMB_F64 ? 8 : 4;
    if (nt <= p[EMB_CV_N] && lanes_for(T, dtype, p, EMB_LANES_FORWARD, nt)) {
        lanes_ctx l;
        l.dtype = dtype;
        l.p = p;
        l.x = (const void *)x;
        l.w = (const void *)w;
        l.bias = (const void *)bias;
        l.out = (void *)out;
        l.rc = 0;
        parallel(nt, lanes_forward_task, &l);
        return l.rc;
    }
    c.dtype = dtype;
    c.p = p;
    c.w = (const void *)w;
    c.bias = (const void *)bias;
    c.out = (void *)out;
    c.rc = 0;
    c.ncols = T->conv_columns(p);
    /* enough pieces for every thread, each at most EMB_CONV_CHUNK columns and a multiple of 64 */
    c.chunk = c.ncols;
    if (bg < nt)
        c.chunk = (c.ncols * bg + nt - 1) / nt;
    c.chunk = (c.chunk + 63) / 64 * 64;
    if (c.chunk > 4096)
        c.chunk = 4096;
    c.pieces = (c.ncols + c.chunk - 1) / c.chunk;
    c.items = bg * c.pieces;
    c.work_words = T->conv_tile_work(dtype, p);
    c.xp = work_get(1, (size_t)T->conv_prepare_size(dtype, p) * es, &raw);
    if (!c.xp)
        return -1;
    T->conv_prepare(dtype, p, (const void *)x, (void *)c.xp);
    if (nt > c.items)
        nt = (int)c.items;
    parallel(nt, conv_task, &c);
    work_put(raw);
    return c.rc;
}

typedef struct {
    int op, dtype;
    const emb_i *p;
    const void *x;
    void *out;
} pool_ctx;

static void pool_task(void *ptr, int tid, int nt)
{
    pool_ctx *c = (pool_ctx *)ptr;
    emb_i lo, hi;
    share(c->p[EMB_CV_N] * c->p[EMB_CV_C], tid, nt, 1, &lo, &hi);
    if (lo < hi)
        TABLE()->pool2d(c->op, c->dtype, c->p, lo, hi, c->x, c->out);
}

/* threads for a pooling pass (forward or gradient): by its window work, at most one per plane */
static int pool_threads(const emb_i *p, int nthreads)
{
    double work = (double)p[EMB_CV_N] * p[EMB_CV_C] * p[EMB_CV_OH] * p[EMB_CV_OW] * p[EMB_CV_KH] * p[EMB_CV_KW];
    int nt = threads_for(nthreads, work, 1 << 18);
    if (nt > p[EMB_CV_N] * p[EMB_CV_C])
        nt = (int)EMB_MAX_(1, p[EMB_CV_N] * p[EMB_CV_C]);
    return nt;
}

void emb_pool2d(int op, int dtype, uintptr_t params, uintptr_t x, uintptr_t out, int nthreads)
{
    pool_ctx c;
    const emb_i *p = (const emb_i *)params;
    int nt = pool_threads(p, nthreads);
    c.op = op;
    c.dtype = dtype;
    c.p = p;
    c.x = (const void *)x;
    c.out = (void *)out;
    parallel(nt, pool_task, &c);
}

/* ---- indexing ---------------------------------------------------------------------------------------- */

int64_t emb_gather(int elsize, int nd, uintptr_t ishape, uintptr_t idx, uintptr_t x, uintptr_t xst, int dim,
                   int64_t dimsize, uintptr_t out)
{
    return TABLE()->gather(elsize, nd, (const emb_i *)ishape, (const int64_t *)idx, (const void *)x,
                           (const emb_i *)xst, dim, dimsize, (void *)out);
}

int64_t emb_scatter(int dtype, int add, int nd, uintptr_t ishape, uintptr_t idx, uintptr_t src, uintptr_t sst,
                    uintptr_t out, uintptr_t ost, int dim, int64_t dimsize)
{
    return TABLE()->scatter(dtype, add, nd, (const emb_i *)ishape, (const int64_t *)idx, (const void *)src,
                            (const emb_i *)sst, (void *)out, (const emb_i *)ost, dim, dimsize);
}

/* ---- fused float32 paths --------------------------------------------------------------------------- */

typedef struct {
    int kind, form;
    emb_i rows, n;
    const float *x, *w, *b;
    float *out;
    double eps;
} nn_ctx;

static void nn_task(void *ptr, int tid, int nt)
{
    nn_ctx *c = (nn_ctx *)ptr;
    const emb_table *T = TABLE();
    emb_i lo, hi;
    if (c->kind == 0) { /* gelu: split elements */
        share(c->n, tid, nt, 64, &lo, &hi);
        if (lo < hi)
            T->gelu_f32(c->form, hi - lo, c->x + lo, c->out + lo);
        return;
    }
    share(c->rows, tid, nt, 1, &lo, &hi);
    if (lo >= hi)
        return;
    if (c->kind == 1)
        T->softmax_f32(hi - lo, c->n, c->x + lo * c->n, c->out + lo * c->n, c->form);
    else
        T->layer_norm_f32(hi - lo, c->n, c->x + lo * c->n, c->w, c->b, c->eps, c->out + lo * c->n);
}

void emb_gelu_f32(int form, int64_t n, uintptr_t x, uintptr_t out, int nthreads)
{
    nn_ctx c;
    c.kind = 0;
    c.form = form;
    c.n = n;
    c.x = (const float *)x;
    c.out = (float *)out;
    parallel(threads_for(nthreads, (double)n, 1 << 16), nn_task, &c);
}

void emb_softmax_f32(int64_t rows, int64_t n, uintptr_t x, uintptr_t out, int log_, int nthreads)
{
    nn_ctx c;
    int nt = threads_for(nthreads, (double)rows * n, 1 << 16);
    c.kind = 1;
    c.form = log_;
    c.rows = rows;
    c.n = n;
    c.x = (const float *)x;
    c.out = (float *)out;
    if (nt > rows)
        nt = (int)rows;
    parallel(nt, nn_task, &c);
}

void emb_layer_norm_f32(int64_t rows, int64_t n, uintptr_t x, uintptr_t w, uintptr_t b, double eps,
                        uintptr_t out, int nthreads)
{
    nn_ctx c;
    int nt = threads_for(nthreads, (double)rows * n, 1 << 16);
    c.kind = 2;
    c.rows = rows;
    c.n = n;
    c.x = (const float *)x;
    c.w = (const float *)w;
    c.b = (const float *)b;
    c.eps = eps;
    c.out = (float *)out;
    if (nt > rows)
        nt = (int)rows;
    parallel(nt, nn_task, &c);
}

void emb_bias_rows_f32(int64_t rows, int64_t n, uintptr_t bias, uintptr_t out)
{
    TABLE()->bias_rows_f32(rows, n, (const float *)bias, (float *)out);
}

/* ---- optimizers (k_optim.c): the group's elements end to end, a share per thread ---- */

typedef struct {
    int rule, dtype, rc;
    emb_i count, total;
    const int64_t *sizes;
    const uintptr_t *ptrs;
    const void *hyper;
} optim_ctx;

static void optim_task(void *ctx, int tid, int nt)
{
    optim_ctx *c = (optim_ctx *)ctx;
    emb_i lo, hi;
    share(c->total, tid, nt, 64, &lo, &hi);
    if (lo < hi && emb_optim_span(c->rule, c->dtype, c->count, c->sizes, c->ptrs, c->hyper, lo, hi) < 0)
        c->rc = -1;
}

int emb_optim_step(int rule, int dtype, int64_t count, uintptr_t sizes, uintptr_t ptrs, uintptr_t hyper,
                   int nthreads)
{
    optim_ctx c;
    emb_i k;
    c.rule = rule;
    c.dtype = dtype;
    c.rc = 0;
    c.count = count;
    c.sizes = (const int64_t *)sizes;
    c.ptrs = (const uintptr_t *)ptrs;
    c.hyper = (const void *)hyper;
    c.total = 0;
    for (k = 0; k < count; k++)
        c.total += c.sizes[k];
    if (c.total == 0)
        return emb_optim_span(rule, dtype, 0, c.sizes, c.ptrs, c.hyper, 0, 0);
    parallel(threads_for(nthreads, (double)c.total, 1 << 16), optim_task, &c);
    return c.rc;
}

/* ---- conv and pool gradients, reductions over several dims (convk) ------------------------------------ */

typedef struct {
    int op, dtype;
    const emb_i *p;
    const void *a, *b;
    void *out;
    void **partial; /* weight gradient: one buffer per thread (thread 0's is out) */
    int lanes;      /* conv: every share takes the batch-in-lanes kernel */
    int rc;
} grad_ctx;

static double conv_macs(const emb_i *p)
{
    return (double)p[EMB_CV_N] * p[EMB_CV_O] * (p[EMB_CV_C] / p[EMB_CV_G]) * p[EMB_CV_KH] * p[EMB_CV_KW] *
           p[EMB_CV_OH] * p[EMB_CV_OW];
}

static void grad_input_task(void *ptr, int tid, int nt)
{
    grad_ctx *c = (grad_ctx *)ptr;
    emb_i lo, hi;
    share(c->p[EMB_CV_N], tid, nt, 1, &lo, &hi);
    if (lo < hi && conv_share(c->dtype, EMB_LANES_INPUT, c->lanes, c->p, c->a, c->b, 0, c->out, lo, hi) < 0)
        c->rc = -1;
}

int emb_conv2d_grad_input(int dtype, uintptr_t params, uintptr_t g, uintptr_t w, uintptr_t gx, int nthreads)
{
    grad_ctx c;
    const emb_i *p = (const emb_i *)params;
    int nt = threads_for(nthreads, conv_macs(p), 1 << 21);
    c.dtype = dtype;
    c.p = p;
    c.a = (const void *)g;
    c.b = (const void *)w;
    c.out = (void *)gx;
    c.rc = 0;
    if (nt > p[EMB_CV_N])
        nt = (int)EMB_MAX_(1, p[EMB_CV_N]);
    c.lanes = lanes_for(TABLE(), dtype, p, EMB_LANES_INPUT, nt);
    parallel(nt, grad_input_task, &c);
    return c.rc;
}

static void grad_weight_task(void *ptr, int tid, int nt)
{
    grad_ctx *c = (grad_ctx *)ptr;
    emb_i lo, hi;
    share(c->p[EMB_CV_N], tid, nt, 1, &lo, &hi);
    /* an empty share writes zeros */
    if (conv_share(c->dtype, EMB_LANES_WEIGHT, c->lanes, c->p, c->a, c->b, 0, c->partial[tid], lo, hi) < 0)
        c->rc = -1;
}

int emb_conv2d_grad_weight(int dtype, uintptr_t params, uintptr_t x, uintptr_t g, uintptr_t gw, int nthreads)
{
    grad_ctx c;
    const emb_i *p = (const emb_i *)params;
    void *partial[EMB_MAX_THREADS], *raws[EMB_MAX_THREADS];
    emb_i size = p[EMB_CV_O] * (p[EMB_CV_C] / p[EMB_CV_G]) * p[EMB_CV_KH] * p[EMB_CV_KW], i;
    size_t es = dtype == EMB_F64 ? 8 : 4;
    int nt = threads_for(nthreads, conv_macs(p), 1 << 22), t;
    if (nt > p[EMB_CV_N])
        nt = (int)EMB_MAX_(1, p[EMB_CV_N]);
    c.dtype = dtype;
    c.p = p;
    c.a = (const void *)x;
    c.b = (const void *)g;
    c.partial = partial;
    c.rc = 0;
    c.lanes = lanes_for(TABLE(), dtype, p, EMB_LANES_WEIGHT, nt);
    partial[0] = (void *)gw;
    raws[0] = 0;
    for (t = 1; t < nt; t++) {
        partial[t] = aligned_alloc64((size_t)size * es, &raws[t]);
        if (!partial[t]) {
            nt = t;
            break;
        }
    }
    parallel(nt, grad_weight_task, &c);
    for (t = 1; t < nt; t++) { /* the threads' partial sums, in thread order */
        if (dtype == EMB_F64)
            for (i = 0; i < size; i++) ((double *)gw)[i] += ((double *)partial[t])[i];
        else
            for (i = 0; i < size; i++) ((float *)gw)[i] += ((float *)partial[t])[i];
        free(raws[t]);
    }
    return c.rc;
}

static void pool_grad_task(void *ptr, int tid, int nt)
{
    grad_ctx *c = (grad_ctx *)ptr;
    emb_i lo, hi;
    void *raw, *work;
    share(c->p[EMB_CV_N] * c->p[EMB_CV_C], tid, nt, 1, &lo, &hi);
    if (lo >= hi)
        return;
    work = work_get(0, (size_t)c->p[EMB_CV_H] * c->p[EMB_CV_W] * sizeof(double), &raw);
    if (!work) {
        c->rc = -1;
        return;
    }
    TABLE()->pool2d_grad(c->op, c->dtype, c->p, lo, hi, c->a, c->b, c->out, work);
    work_put(raw);
}

int emb_pool2d_grad(int op, int dtype, uintptr_t params, uintptr_t x, uintptr_t g, uintptr_t gx, int nthreads)
{
    grad_ctx c;
    const emb_i *p = (const emb_i *)params;
    int nt = pool_threads(p, nthreads);
    c.op = op;
    c.dtype = dtype;
    c.p = p;
    c.a = (const void *)x;
    c.b = (const void *)g;
    c.out = (void *)gx;
    c.rc = 0;
    parallel(nt, pool_grad_task, &c);
    return c.rc;
}

int emb_reduce_dims(int op, int dtype, int nd, uintptr_t shape, uintptr_t reduced, uintptr_t x, uintptr_t out)
{
    const emb_i *sh = (const emb_i *)shape, *red = (const emb_i *)reduced;
    emb_i nout = 1;
    int d, rc;
    void *raw, *work;
    for (d = 0; d < nd; d++)
        if (!red[d])
            nout *= sh[d];
    work = work_get(0, (size_t)nout * (sizeof(double) + 1) + 64, &raw);
    if (!work)
        return -2;
    rc = TABLE()->reduce_dims(op, dtype, nd, sh, red, (const void *)x, (void *)out, work);
    work_put(raw);
    return rc;
}
