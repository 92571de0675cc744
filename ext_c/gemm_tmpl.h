/* Blocked, register-tiled GEMM for one float type, included by k_gemm.c with
   T (float or double), SUF (f32 or f64), MR x NR (the register tile), VL (elements per vector,
   0 for plain C), KC/MC/NC (cache blocks), TRANSPOSE (k_transpose.h's function for T).

   C[m, n] (row stride ldc) = A[m, k] @ B[k, n], or += with `accumulate`, where
     A(i, p) = a[i * rsa + p * csa]
     B(p, j) = b[(boff ? boff[p] : p * rsb) + j * csb]
   The row-offset table boff lets conv2d feed its input as B without an im2col copy.
   Rows below MR take a path without packing: at batch 1 packing the weights would cost more than
   the product itself. */

#define G_CAT3(a, b, c) a##b##c
#define G_NAME3(a, b, c) G_CAT3(a, b, c)
#define G(name) G_NAME3(name, _, SUF)

#if VL > 0
typedef T G(vec) __attribute__((vector_size(VL * sizeof(T)), aligned(sizeof(T)), may_alias));
#define NV (NR / VL)

static void G(micro)(emb_i kc, const T *EMB_RESTRICT ap, const T *EMB_RESTRICT bp, T *EMB_RESTRICT c,
                     emb_i ldc, int accumulate)
{
    G(vec) acc[MR][NV];
    emb_i p;
    int i, j;
    for (i = 0; i < MR; i++)
        for (j = 0; j < NV; j++)
            acc[i][j] = (G(vec)){0};
    for (p = 0; p < kc; p++) {
        const T *aa = ap + p * MR;
        G(vec) bv[NV];
        for (j = 0; j < NV; j++)
            bv[j] = *(const G(vec) *)(bp + p * NR + j * VL);
        for (i = 0; i < MR; i++) {
            T av = aa[i];
            for (j = 0; j < NV; j++)
                acc[i][j] += av * bv[j];
        }
    }
    for (i = 0; i < MR; i++)
        for (j = 0; j < NV; j++) {
            G(vec) *dst = (G(vec) *)(c + i * ldc + j * VL);
            if (accumulate)
                *dst += acc[i][j];
            else
                *dst = acc[i][j];
        }
}

/* dot products of contiguous rows, with vector accumulators */
static T G(dot)(const T *EMB_RESTRICT x, const T *EMB_RESTRICT y, emb_i k)
{
    G(vec) s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    T r = 0;
    emb_i p = 0;
    int l;
    for (; p + 4 * VL <= k; p += 4 * VL) {
        s0 += *(const G(vec) *)(x + p) * *(const G(vec) *)(y + p);
        s1 += *(const G(vec) *)(x + p + VL) * *(const G(vec) *)(y + p + VL);
        s2 += *(const G(vec) *)(x + p + 2 * VL) * *(const G(vec) *)(y + p + 2 * VL);
        s3 += *(const G(vec) *)(x + p + 3 * VL) * *(const G(vec) *)(y + p + 3 * VL);
    }
    for (; p + VL <= k; p += VL)
        s0 += *(const G(vec) *)(x + p) * *(const G(vec) *)(y + p);
    s0 += s1 + s2 + s3;
    for (l = 0; l < VL; l++)
        r += s0[l];
    for (; p < k; p++)
        r += x[p] * y[p];
    return r;
}

/* four dot products of x with the rows y, y + ys, y + 2 ys, y + 3 ys: x is loaded once for all */
static void G(dot4)(const T *EMB_RESTRICT x, const T *EMB_RESTRICT y, emb_i ys, emb_i k, T *r)
{
    G(vec) s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    const T *y1 = y + ys, *y2 = y + 2 * ys, *y3 = y + 3 * ys;
    T r0 = 0, r1 = 0, r2 = 0, r3 = 0;
    emb_i p = 0;
    int l;
    for (; p + VL <= k; p += VL) {
        G(vec) xv = *(const G(vec) *)(x + p);
        s0 += xv * *(const G(vec) *)(y + p);
        s1 += xv * *(const G(vec) *)(y1 + p);
        s2 += xv * *(const G(vec) *)(y2 + p);
        s3 += xv * *(const G(vec) *)(y3 + p);
    }
    for (l = 0; l < VL; l++) {
        r0 += s0[l];
        r1 += s1[l];
        r2 += s2[l];
        r3 += s3[l];
    }
    for (; p < k; p++) {
        r0 += x[p] * y[p];
        r1 += x[p] * y1[p];
        r2 += x[p] * y2[p];
        r3 += x[p] * y3[p];
    }
    r[0] = r0;
    r[1] = r1;
    r[2] = r2;
    r[3] = r3;
}
#ifndef EMB_GEMM_MODES
#define EMB_GEMM_MODES
enum { G_WRITE, G_FROM_C, G_ADD }; /* how G(direct) writes C */
#endif

/* C[R rows, NVT vectors of type VT] (+)= A[R rows, k] @ B[k, those columns] with B's rows read in place
   (no packing): each element summed over p in order, from 0 (mode G_WRITE), from C (G_FROM_C, as
   G(small)'s axpy loop sums it) or from 0 and then added to C (G_ADD, as the packed path sums one
   K block) */
#define G_DIRECT_TILE(NAME, VT) \
    static inline __attribute__((always_inline)) void NAME(int R, int NVT, emb_i k, const T *a, emb_i rsa, \
                                                           emb_i csa, const T *b, const emb_i *boff, emb_i rsb, \
                                                           T *c, emb_i ldc, int mode) \
    { \
        enum { W = sizeof(VT) / sizeof(T) }; \
        VT acc[MR][NV]; \
        emb_i p; \
        int i, j; \
        for (i = 0; i < R; i++) \
            for (j = 0; j < NVT; j++) \
                acc[i][j] = mode == G_FROM_C ? *(const VT *)(c + i * ldc + j * W) : (VT){0}; \
        for (p = 0; p < k; p++) { \
            const T *brow = b + (boff ? boff[p] : p * rsb); \
            VT bv[NV]; \
            for (j = 0; j < NVT; j++) \
                bv[j] = *(const VT *)(brow + j * W); \
            for (i = 0; i < R; i++) { \
                T av = a[i * rsa + p * csa]; \
                for (j = 0; j < NVT; j++) \
                    acc[i][j] += av * bv[j]; \
            } \
        } \
        for (i = 0; i < R; i++) \
            for (j = 0; j < NVT; j++) { \
                VT *dst = (VT *)(c + i * ldc + j * W); \
                if (mode == G_ADD) \
                    *dst += acc[i][j]; \
                else \
                    *dst = acc[i][j]; \
            } \
    }

/* half and quarter vectors for the last columns of a row */
typedef T G(hvec) __attribute__((vector_size(VL * sizeof(T) / 2), aligned(sizeof(T)), may_alias));
typedef T G(qvec) __attribute__((vector_size(VL * sizeof(T) / 4 > sizeof(T) ? VL * sizeof(T) / 4 : sizeof(T)),
                                 aligned(sizeof(T)), may_alias));
G_DIRECT_TILE(G(direct_tile), G(vec))
G_DIRECT_TILE(G(direct_htile), G(hvec))
G_DIRECT_TILE(G(direct_qtile), G(qvec))
#undef G_DIRECT_TILE

/* rows [0, R) of C where B's rows are contiguous: NR-wide tiles, then narrower ones, then a scalar tail */
static inline __attribute__((always_inline)) void G(direct_rows)(int R, emb_i n, emb_i k, const T *a, emb_i rsa,
                                                                 emb_i csa, const T *b, const emb_i *boff,
                                                                 emb_i rsb, T *c, emb_i ldc, int mode)
{
    enum { HW = sizeof(G(hvec)) / sizeof(T), QW = sizeof(G(qvec)) / sizeof(T) };
    emb_i j = 0, p;
    int i;
    for (; j + NR <= n; j += NR)
        G(direct_tile)(R, NV, k, a, rsa, csa, b + j, boff, rsb, c + j, ldc, mode);
    for (; j + VL <= n; j += VL)
        G(direct_tile)(R, 1, k, a, rsa, csa, b + j, boff, rsb, c + j, ldc, mode);
    if (j + HW <= n) {
        G(direct_htile)(R, 1, k, a, rsa, csa, b + j, boff, rsb, c + j, ldc, mode);
        j += HW;
    }
    if (j + QW <= n) {
        G(direct_qtile)(R, 1, k, a, rsa, csa, b + j, boff, rsb, c + j, ldc, mode);
        j += QW;
    }
    if (j == n)
        return;
    for (i = 0; i < R; i++) { /* fewer than QW columns (at most 4) */
        T *crow = c + i * ldc, sum[4];
        emb_i q, nq = n - j;
        for (q = 0; q < nq; q++)
            sum[q] = mode == G_FROM_C ? crow[j + q] : 0;
        for (p = 0; p < k; p++) {
            T av = a[i * rsa + p * csa];
            const T *brow = b + (boff ? boff[p] : p * rsb) + j;
            for (q = 0; q < nq; q++)
                sum[q] += av * brow[q];
        }
        for (q = 0; q < nq; q++)
            crow[j + q] = mode == G_ADD ? crow[j + q] + sum[q] : sum[q];
    }
}

/* MR rows of A side by side, dst[p * MR + r] = A(r, p): read by the tiles from one pointer (with
   A's own strides they keep MR offsets in registers, and spill them) */
static inline __attribute__((always_inline)) void G(pack_rows)(const T *a, emb_i rsa, emb_i csa, emb_i k, T *dst)
{
    emb_i p;
    int r;
    if (csa == 1) {
        TRANSPOSE(a, rsa, MR, k, dst, MR, 0);
        return;
    }
    for (p = 0; p < k; p++)
        for (r = 0; r < MR; r++)
            dst[p * MR + r] = a[r * rsa + p * csa];
}

/* MR rows of C from A's rows packed by G(pack_rows); B without an offset table gets its own copy of
   the tiles' loop, free of the table's test */
static inline __attribute__((always_inline)) void G(direct_packed)(emb_i n, emb_i k, const T *ap, const T *b,
                                                                   const emb_i *boff, emb_i rsb, T *c, emb_i ldc,
                                                                   int mode)
{
    if (boff)
        G(direct_rows)(MR, n, k, ap, 1, MR, b, boff, rsb, c, ldc, mode);
    else
        G(direct_rows)(MR, n, k, ap, 1, MR, b, 0, rsb, c, ldc, mode);
}

/* the whole product with B's rows contiguous and few rows of A: no packing of B (at these sizes it
   costs more than it saves); rows in blocks of MR, then 4, 2, 1 */
static void G(direct)(emb_i m, emb_i n, emb_i k, const T *a, emb_i rsa, emb_i csa, const T *b, const emb_i *boff,
                      emb_i rsb, T *c, emb_i ldc, int mode, T *work, emb_i room)
{
    T ap[MR * KC]; /* one block's rows packed, where they fit */
    emb_i i = 0, mb = m / MR * MR, j;
    if (k <= KC && n >= NR && work && mb * k <= room) {
        /* every block of rows packed into work first, then B by columns: one NR-wide column of B
           stays in L1 while each block of rows passes over it */
        for (i = 0; i < mb; i += MR)
            G(pack_rows)(a + i * rsa, rsa, csa, k, work + i * k);
        for (j = 0; j < n; j += NR)
            for (i = 0; i < mb; i += MR)
                G(direct_packed)(EMB_MIN(NR, n - j), k, work + i * k, b + j, boff, rsb, c + i * ldc + j, ldc, mode);
    } else if (k <= KC && n >= NR) {
        for (; i < mb; i += MR) {
            G(pack_rows)(a + i * rsa, rsa, csa, k, ap);
            G(direct_packed)(n, k, ap, b, boff, rsb, c + i * ldc, ldc, mode);
        }
    }
    for (; i + MR <= m; i += MR)
        G(direct_rows)(MR, n, k, a + i * rsa, rsa, csa, b, boff, rsb, c + i * ldc, ldc, mode);
    if (MR > 4 && i + 4 <= m) {
        G(direct_rows)(4, n, k, a + i * rsa, rsa, csa, b, boff, rsb, c + i * ldc, ldc, mode);
        i += 4;
    }
    if (i + 2 <= m) {
        G(direct_rows)(2, n, k, a + i * rsa, rsa, csa, b, boff, rsb, c + i * ldc, ldc, mode);
        i += 2;
    }
    if (i < m)
        G(direct_rows)(1, n, k, a + i * rsa, rsa, csa, b, boff, rsb, c + i * ldc, ldc, mode);
}
#define G_DIRECT 1
#else
static void G(micro)(emb_i kc, const T *EMB_RESTRICT ap, const T *EMB_RESTRICT bp, T *EMB_RESTRICT c,
                     emb_i ldc, int accumulate)
{
    T acc[MR][NR];
    emb_i p;
    int i, j;
    for (i = 0; i < MR; i++)
        for (j = 0; j < NR; j++)
            acc[i][j] = 0;
    for (p = 0; p < kc; p++) {
        const T *aa = ap + p * MR;
        const T *bb = bp + p * NR;
        for (i = 0; i < MR; i++) {
            T av = aa[i];
            for (j = 0; j < NR; j++)
                acc[i][j] += av * bb[j];
        }
    }
    for (i = 0; i < MR; i++)
        for (j = 0; j < NR; j++) {
            if (accumulate)
                c[i * ldc + j] += acc[i][j];
            else
                c[i * ldc + j] = acc[i][j];
        }
}

static void G(dot4)(const T *EMB_RESTRICT x, const T *EMB_RESTRICT y, emb_i ys, emb_i k, T *r);

static T G(dot)(const T *EMB_RESTRICT x, const T *EMB_RESTRICT y, emb_i k)
{
    T s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r = 0;
    emb_i p = 0;
    int l;
    for (; p + 8 <= k; p += 8)
        for (l = 0; l < 8; l++)
            s[l] += x[p + l] * y[p + l];
    for (l = 0; l < 8; l++)
        r += s[l];
    for (; p < k; p++)
        r += x[p] * y[p];
    return r;
}

static void G(dot4)(const T *EMB_RESTRICT x, const T *EMB_RESTRICT y, emb_i ys, emb_i k, T *r)
{
    int q;
    for (q = 0; q < 4; q++)
        r[q] = G(dot)(x, y + q * ys, k);
}
#endif

emb_i EMB_FN(G_NAME3(gemm_, SUF, _work))(void)
{
    /* packed B block, packed A block, one edge tile, and room to align each to 64 bytes */
    return (emb_i)KC * (NC + NR) + (emb_i)(MC + MR) * KC + MR * NR + 3 * 64;
}

static T *G(align64)(T *p)
{
    uintptr_t u = (uintptr_t)p;
    return (T *)((u + 63) & ~(uintptr_t)63);
}

static void G(small)(emb_i m, emb_i n, emb_i k, const T *a, emb_i rsa, emb_i csa, const T *b,
                     const emb_i *boff, emb_i rsb, emb_i csb, T *c, emb_i ldc, int accumulate)
{
    emb_i i, j, p;
    if (!boff && rsb == 1 && csa == 1) {
        /* B's columns are contiguous (x @ w.T with w row-major): one dot product per output */
        for (i = 0; i < m; i++) {
            for (j = 0; j + 4 <= n; j += 4) {
                T s[4];
                int q;
                G(dot4)(a + i * rsa, b + j * csb, csb, k, s);
                for (q = 0; q < 4; q++)
                    c[i * ldc + j + q] = accumulate ? c[i * ldc + j + q] + s[q] : s[q];
            }
            for (; j < n; j++) {
                T s = G(dot)(a + i * rsa, b + j * csb, k);
                c[i * ldc + j] = accumulate ? c[i * ldc + j] + s : s;
            }
        }
        return;
    }
    for (i = 0; i < m; i++) {
        T *EMB_RESTRICT crow = c + i * ldc;
        if (!accumulate)
            for (j = 0; j < n; j++)
                crow[j] = 0;
        if (csb == 1) {
            /* B's rows are contiguous: axpy along each row */
            for (p = 0; p < k; p++) {
                T av = a[i * rsa + p * csa];
                const T *EMB_RESTRICT brow = b + (boff ? boff[p] : p * rsb);
                for (j = 0; j < n; j++)
                    crow[j] += av * brow[j];
            }
        } else {
            for (p = 0; p < k; p++) {
                T av = a[i * rsa + p * csa];
                const T *brow = b + (boff ? boff[p] : p * rsb);
                for (j = 0; j < n; j++)
                    crow[j] += av * brow[j * csb];
            }
        }
    }
}

void EMB_FN(G(gemm))(emb_i m, emb_i n, emb_i k, const T *a, emb_i rsa, emb_i csa, const T *b,
                     const emb_i *boff, emb_i rsb, emb_i csb, T *c, emb_i ldc, int accumulate, T *work)
{
    T *bp, *ap, *tile;
    emb_i jc, pc, ic, jr, ir, p, i, j;
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        if (!accumulate)
            for (i = 0; i < m; i++)
                for (j = 0; j < n; j++)
                    c[i * ldc + j] = 0;
        return;
    }
#ifdef G_DIRECT
    /* B's rows contiguous and few rows, a short K or a narrow B: register tiles straight from A
       and B, each sum the one G(small)'s axpy loop makes, or (one K block) the packed path's */
    if (csb == 1 && (boff || rsb != 1 || csa != 1)) {
        if (m < MR || !work) {
            G(direct)(m, n, k, a, rsa, csa, b, boff, rsb, c, ldc, accumulate ? G_FROM_C : G_WRITE, 0, 0);
            return;
        }
        /* narrow B: packed tiles would be mostly padding */
        if (k <= KC && (m <= 2 * MR || k <= EMB_GEMM_DIRECT_K || n < NR)) {
            G(direct)(m, n, k, a, rsa, csa, b, boff, rsb, c, ldc, accumulate ? G_ADD : G_WRITE, G(align64)(work),
                      EMB_FN(G_NAME3(gemm_, SUF, _work))() - 64);
            return;
        }
    }
#endif
    if (m < MR || !work) {
        G(small)(m, n, k, a, rsa, csa, b, boff, rsb, csb, c, ldc, accumulate);
        return;
    }
    bp = G(align64)(work);
    ap = G(align64)(bp + (emb_i)KC * (NC + NR));
    tile = G(align64)(ap + (emb_i)(MC + MR) * KC);
    for (jc = 0; jc < n; jc += NC) {
        emb_i nc = EMB_MIN(NC, n - jc);
        for (pc = 0; pc < k; pc += KC) {
            emb_i kc = EMB_MIN(KC, k - pc);
            int acc = accumulate || pc > 0;
            /* pack B[pc:pc+kc, jc:jc+nc] into NR-wide panels, zero-padded */
            for (jr = 0; jr < nc; jr += NR) {
                emb_i nr = EMB_MIN(NR, nc - jr);
                T *dst = bp + jr * kc;
                if (csb == 1 && nr == NR) {
                    /* the common case: whole contiguous panel rows, a fixed-size copy */
                    for (p = 0; p < kc; p++) {
                        const T *EMB_RESTRICT src = b + (boff ? boff[pc + p] : (pc + p) * rsb) + jc + jr;
                        T *EMB_RESTRICT d = dst + p * NR;
                        for (j = 0; j < NR; j++)
                            d[j] = src[j];
                    }
                    continue;
                }
                if (!boff && rsb == 1) {
                    /* B's columns contiguous (x @ w.T): the panel is a transpose of nr rows of w,
                       the columns past them zero */
                    TRANSPOSE(b + (jc + jr) * csb + pc, csb, nr, kc, dst, NR, 0);
                    if (nr < NR)
                        for (p = 0; p < kc; p++)
                            for (j = nr; j < NR; j++)
                                dst[p * NR + j] = 0;
                    continue;
                }
                for (p = 0; p < kc; p++) {
                    const T *src = b + (boff ? boff[pc + p] : (pc + p) * rsb) + (jc + jr) * csb;
                    T *d = dst + p * NR;
                    if (csb == 1)
                        for (j = 0; j < nr; j++)
                            d[j] = src[j];
                    else
                        for (j = 0; j < nr; j++)
                            d[j] = src[j * csb];
                    for (j = nr; j < NR; j++)
                        d[j] = 0;
                }
            }
            for (ic = 0; ic < m; ic += MC) {
                emb_i mc = EMB_MIN(MC, m - ic);
                /* pack A[ic:ic+mc, pc:pc+kc] into MR-tall panels, zero-padded */
                for (ir = 0; ir < mc; ir += MR) {
                    emb_i mr = EMB_MIN(MR, mc - ir);
                    T *dst = ap + ir * kc;
                    const T *src = a + (ic + ir) * rsa + pc * csa;
                    if (csa == 1) { /* A's rows contiguous: the panel is their transpose, rows past them zero */
                        TRANSPOSE(src, rsa, mr, kc, dst, MR, 0);
                        if (mr < MR)
                            for (p = 0; p < kc; p++)
                                for (i = mr; i < MR; i++)
                                    dst[p * MR + i] = 0;
                        continue;
                    }
                    for (p = 0; p < kc; p++) {
                        T *d = dst + p * MR;
                        for (i = 0; i < mr; i++)
                            d[i] = src[i * rsa + p * csa];
                        for (i = mr; i < MR; i++)
                            d[i] = 0;
                    }
                }
                for (jr = 0; jr < nc; jr += NR) {
                    emb_i nr = EMB_MIN(NR, nc - jr);
                    for (ir = 0; ir < mc; ir += MR) {
                        emb_i mr = EMB_MIN(MR, mc - ir);
                        T *cp = c + (ic + ir) * ldc + jc + jr;
                        if (mr == MR && nr == NR) {
                            G(micro)(kc, ap + ir * kc, bp + jr * kc, cp, ldc, acc);
                        } else {
                            G(micro)(kc, ap + ir * kc, bp + jr * kc, tile, NR, 0);
                            for (i = 0; i < mr; i++)
                                for (j = 0; j < nr; j++)
                                    cp[i * ldc + j] = acc ? cp[i * ldc + j] + tile[i * NR + j]
                                                          : tile[i * NR + j];
                        }
                    }
                }
            }
        }
    }
}

#undef NV
#undef G_DIRECT
#undef G
#undef G_NAME3
#undef G_CAT3
