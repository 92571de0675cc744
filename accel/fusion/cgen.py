"""C source for a fused kernel and a layout variant: the loops around cexpr's node expressions.

A **variant** is what the compiler specialises beyond ``kernel.key``: for each input, how it moves
along the innermost loop -- ``"c"`` (stride 1), ``"s"`` (stride 0: one value per line or row,
hoisted) or ``"g"`` (a run-time stride) -- and, for row kernels, whether the output rows are
contiguous. With every input "c" or "s" the hot loop is a plain ``for (i = lo; i < hi; i++)`` over
unit-stride pointers, which gcc vectorizes. Outer dims (any number, collapsed by the caller) are
addressed by run-time strides.

Every generated module exports one function:

    int fk_run(uintptr_t ctx_args, int nthreads, uintptr_t parallel)

whose ``ctx_args`` is an int64 array laid out by ``args_layout`` (see compile_c.py), and
``parallel`` the address of ember._ckernels' ``emb_parallel`` (one worker pool per process, shared
with the C kernels), or 0 for the module's own threads made per call.

A row kernel of two phases or more reads each row from memory in its first phase only; its second
phase (working in cache) prefetches the next row of the unit-stride inputs, so that read overlaps
computing rather than stalling the next row's first phase (rows up to ``PREFETCH_BYTES``).

Fast float32 approximations with a guard (exp's) run in blocks: each element's guard is OR-ed into
``bad``, and a block (or row phase) with a guard raised is recomputed by the loop without guards,
where exp takes libm in double for the elements beyond the approximation's range only (nan, inf
and the overflow edge: the pure Cpu's values there) and the approximation for the others: an
element's value never depends on its block (fk_erff needs no guard).
"""
from . import ir
from .cexpr import CTYPE, node_expr

BLOCK = 512
LANES = 16
# hot loops go 4 vectors an iteration: the independent chains hide a long body's latency (erf's
# divide): the GELU over 1M floats 0.94-0.95x the time on an AVX-512 Xeon (bench/gelu_loop.c,
# 2026-12-06); a pragma other compilers ignore
UNROLL = "#pragma GCC unroll 4"
CHUNK = 128  # elements a reduce computes before folding them into its lanes
MAXD = 16  # outer dims after collapsing (the caller checks)
PREFETCH_BYTES = 1 << 16  # rows up to this size (per input) prefetch the next row: it then waits in cache


def _operands(node):
    return node[3:] if node[0] in ("unary", "binary") else node[2:] if node[0] in ("where", "cast") else ()


def _needed(nodes, roots, stop=()):
    """The nodes ``roots`` depend on, in order; a node in ``stop`` is a leaf (read, not computed)."""
    seen, todo = set(), list(roots)
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            if i not in stop:
                todo.extend(_operands(nodes[i]))
    return sorted(seen)


class _Body:
    """The statements computing ``order``'s nodes at one element (``v<i>`` locals); a node in
    ``saved`` is read from its row scratch instead (``S<i>[i]``)."""

    def __init__(self, kernel, order, load, row, acc, saved=()):
        self.kernel, self.order = kernel, order
        self.load, self.row, self.acc = load, row, acc
        self.saved = saved

    def lines(self, fast):
        nodes = self.kernel.nodes
        out, flags = [], []
        for i in self.order:
            if i in self.saved:
                out.append("%s v%d = S%d[i];" % (CTYPE[nodes[i][1]], i, i))
                continue
            expr, flag = node_expr(nodes, i, lambda j: "v%d" % j, fast, self.load, self.row, self.acc,
                                   lambda j: j not in self.saved)
            out.append("%s v%d = %s;" % (CTYPE[nodes[i][1]], i, expr))
            if flag is not None:
                flags.append(flag)
        return out, flags

    def has_fast(self):
        return bool(self.lines(True)[1])


def _indent(lines, n):
    return ["    " * n + s for s in lines]


def _blocked_loop(body, lo, hi, stores, depth, prefetch=None):
    """``for i in [lo, hi)``: the fast body with its guards, then the exact body where raised (a
    fast body with no guard, such as erf's, holds everywhere: one plain loop). ``prefetch(at,
    count)`` gives statements run before each block (then the loop goes by blocks)."""
    fast, flags = body.lines(True)
    exact, _ = body.lines(False)
    if not flags and prefetch is None:
        return _indent([UNROLL, "for (i = %s; i < %s; i++) {" % (lo, hi)] + _indent(fast + stores, 1) + ["}"], depth)
    out = ["for (b = %s; b < %s; b += %d) {" % (lo, hi, BLOCK),
           "    fk_i e = b + %d < %s ? b + %d : %s;" % (BLOCK, hi, BLOCK, hi)]
    out += _indent(prefetch("b", BLOCK) if prefetch else [], 1)
    if not flags:
        out += ["    " + UNROLL, "    for (i = b; i < e; i++) {"] + _indent(fast + stores, 2) + ["    }", "}"]
        return _indent(out, depth)
    out += ["    int bad = 0;", "    " + UNROLL,
            "    for (i = b; i < e; i++) {"]
    out += _indent(fast + stores + ["bad |= %s;" % " | ".join("(%s)" % f for f in flags)], 2)
    out += ["    }", "    if (bad) {", "        for (i = b; i < e; i++) {"]
    out += _indent(exact + stores, 3) + ["        }", "    }", "}"]
    return _indent(out, depth)


def _load_expr(classes):
    def load(k):
        c = classes[k]
        return "p%d[i]" % k if c == "c" else "s%d" % k if c == "s" else "p%d[i * st%d]" % (k, k)
    return load


def _pointers(kernel, classes, base):
    """Declarations of each input's pointer at this line/row (``base(k)`` its element offset)."""
    out = []
    used = set(node[2] for node in kernel.nodes if node[0] == "load")
    for k, dtype in enumerate(kernel.inputs):
        if k not in used:
            continue
        t = CTYPE[dtype]
        out.append("const %s *restrict p%d = (const %s *)A->in[%d] + %s;" % (t, k, t, k, base(k)))
        if classes[k] == "s":
            out.append("const %s s%d = p%d[0];" % (t, k, k))
        elif classes[k] == "g":
            out.append("const fk_i st%d = A->inner[%d];" % (k, k))
    return out


_ARGS = r"""
typedef struct {
    fk_i nd, total, n;               /* outer dims; elements (flat) or rows; inner size */
    fk_i shape[%(maxd)d];            /* outer sizes */
    const char *in[%(ni)d];
    fk_i inner[%(ni)d];              /* each input's stride along the inner loop */
    fk_i st[%(ni)d][%(maxd)d];       /* each input's outer strides */
    char *out[%(no)d];
    fk_i out_inner, out_st[%(maxd)d];/* map outputs: inner stride and outer strides */
    const char *acc;
} fk_args;

/* one row scratch slot: n values of up to 8 bytes, a whole number of cache lines */
#define FK_SLOT(n) (((n) * 8 + 63) / 64 * 64)

typedef struct {
    const fk_args *A;
    char *scratch;                   /* FK_SLOTS slots per thread, or null */
    fk_i per_thread;
} fk_ctx;

static void fk_offsets(const fk_args *A, fk_i line, fk_i *off, fk_i *ooff)
{
    fk_i d, k, idx;
    for (k = 0; k < %(ni)d; k++)
        off[k] = 0;
    *ooff = 0;
    for (d = A->nd - 1; d >= 0; d--) {
        idx = line %% A->shape[d];
        line /= A->shape[d];
        for (k = 0; k < %(ni)d; k++)
            off[k] += idx * A->st[k][d];
        *ooff += idx * A->out_st[d];
    }
}
"""


_ENTRY = r"""
/* par: ember._ckernels' emb_parallel (its worker pool), or 0 for threads made per call;
   -1: no memory for the row scratch */
int fk_run(uintptr_t args, int nthreads, uintptr_t par)
{
    fk_ctx c;
    int nt = nthreads < 1 ? 1 : nthreads > FK_MAXT ? FK_MAXT : nthreads;
    c.A = (const fk_args *)args;
    if (c.A->total <= 0)
        return 0;
    c.per_thread = FK_SLOTS * FK_SLOT(c.A->n);
    c.scratch = 0;
    if (FK_SLOTS && !(c.scratch = (char *)malloc((size_t)(nt * c.per_thread))))
        return -1;
    if (par)
        ((fk_parallel_fn)par)(nt, fk_task_fn, &c);
    else
        fk_parallel(nt, fk_task_fn, &c);
    free(c.scratch);
    return 0;
}
"""


def _outputs(kernel, per_row):
    return [(j, i) for j, (i, p) in enumerate(kernel.outputs) if p == per_row]


def flat_source(kernel, classes):
    """A Map over lines of ``A->n`` elements (outer dims by strides); outputs contiguous."""
    nodes = kernel.nodes
    outs = _outputs(kernel, False)
    acc = None
    if kernel.kind == "matmul":
        acc = "pa[i]"
    body = _Body(kernel, _needed(nodes, [i for _, i in outs]), _load_expr(classes), None, acc)
    stores = ["o%d[i] = v%d;" % (j, i) for j, i in outs]
    lines = ["static void fk_segment(const fk_args *A, fk_i line, fk_i j0, fk_i j1)", "{",
             "    fk_i off[%d], ooff, i, b;" % max(1, len(kernel.inputs)),
             "    fk_offsets(A, line, off, &ooff);", "    (void)b;"]
    lines += _indent(_pointers(kernel, classes, lambda k: "off[%d]" % k), 1)
    for j, i in outs:
        t = CTYPE[nodes[i][1]]
        lines.append("    %s *restrict o%d = (%s *)A->out[%d] + line * A->n;" % (t, j, t, j))
    if acc is not None:
        t = CTYPE[kernel.acc_dtype]
        lines.append("    const %s *restrict pa = (const %s *)A->acc + line * A->n;" % (t, t))
    lines += _blocked_loop(body, "j0", "j1", stores, 1)
    lines += ["}", "",
              "#define FK_SLOTS 0",
              "static void fk_task_fn(void *p, int tid, int nt)", "{",
              "    const fk_args *A = ((const fk_ctx *)p)->A;",
              "    fk_i lo, hi, at;",
              "    fk_share(A->total, tid, nt, 64, &lo, &hi);",
              "    for (at = lo; at < hi;) {",
              "        fk_i line = at / A->n, j0 = at % A->n;",
              "        fk_i j1 = A->n < j0 + (hi - at) ? A->n : j0 + (hi - at);",
              "        fk_segment(A, line, j0, j1);",
              "        at += j1 - j0;",
              "    }", "}"]
    return "\n".join(lines)


def _reduce_block(kernel, j, phase, classes, row_of, saved, stores, prefetch=None):
    """Statements folding phase ``j`` over the row into ``row<j>``; the nodes in ``saved`` are read
    from the scratch, those in ``stores`` written to it for the later phases; ``prefetch(at,
    count)`` gives statements run after each whole chunk of the fast loop."""
    nodes = kernel.nodes
    src = nodes[phase.node][1]
    out_t = CTYPE[phase.dtype]
    body = _Body(kernel, _needed(nodes, [phase.node], saved), _load_expr(classes), row_of, None, saved)
    keep = ["S%d[i] = v%d;" % (c, c) for c in stores]
    v = "v%d" % phase.node
    op = phase.op
    floats = src in ir.FLOATS
    if op in ("sum", "prod"):
        acc_t = "double" if floats else "uint64_t"
        init = ("0" if op == "sum" else "1")
        sym = "+" if op == "sum" else "*"
        pad = "(%s)%s" % (CTYPE[src], init)
        final = ["%s t = %s;" % (acc_t, init), "for (l = 0; l < %d; l++) t %s= L[l];" % (LANES, sym)]
        final.append("row%d = (%s)t;" % (j, out_t) if floats else "row%d = (%s)(%s)t;" % (j, out_t, _u(phase.dtype)))
        nan_lanes = False
    else:
        acc_t = CTYPE[src]
        sym = ">" if op == "max" else "<"
        if floats:
            init = "-(%s)INFINITY" % acc_t if op == "max" else "(%s)INFINITY" % acc_t
        else:
            init = _int_extreme(src, op)
        pad = init
        final = ["%s t = L[0]; int nan = N[0];" % acc_t if floats else "%s t = L[0];" % acc_t,
                 "for (l = 1; l < %d; l++) { t = L[l] %s t ? L[l] : t;%s }" % (LANES, sym, " nan |= N[l];" if floats else "")]
        if floats:
            final += ["if (nan) t = (%s)NAN;" % acc_t]
        final.append("row%d = t;" % j)
        nan_lanes = floats
    fast, flags = body.lines(True)
    exact, _ = body.lines(False)
    mask_t = {1: "int8_t", 4: "int32_t", 8: "int64_t"}[_SIZE[acc_t]]
    decl = ["typedef %s fk_va __attribute__((vector_size(%d)));" % (acc_t, LANES * _SIZE[acc_t]),
            "typedef %s fk_vt __attribute__((vector_size(%d)));" % (CTYPE[src], LANES * _SIZE[CTYPE[src]]),
            "typedef %s fk_vm __attribute__((vector_size(%d)));" % (mask_t, LANES * _SIZE[acc_t]),
            "fk_va L;"] + (["fk_vm N;"] if nan_lanes else [])
    if op in ("sum", "prod"):
        fold = "L %s= __builtin_convertvector(x, fk_va);" % sym
    else:
        fold = ("fk_vm m = x %s L; L = (fk_va)(((fk_vm)x & m) | ((fk_vm)L & ~m));" % sym
                + (" N |= (x != x);" if nan_lanes else ""))
    init_lines = ["for (l = 0; l < %d; l++) { L[l] = %s;%s }" % (LANES, init, " N[l] = 0;" if nan_lanes else "")]

    at = _in_memory(kernel, phase.node, classes, saved, stores)

    def loops(stmts, guard, prefetch=None):
        # a chunk of node values computed by a plain (vectorizable) loop, then folded into the
        # lanes by a second plain loop: the lanes are the only reassociation
        g = ["bad |= %s;" % " | ".join("(%s)" % f for f in flags)] if guard and flags else []
        # the last chunk is padded with the identity, so every element goes through the vector loops
        # a whole chunk runs a loop of constant trip count (vectorized with no prologue or
        # epilogue); only the row's last, partial chunk a variable one. A whole chunk of values
        # that lie in memory already (``at``) is folded from there: the same values in the same order
        full = _indent(stmts + keep + ([] if at else ["T[q] = %s;" % v]) + g, 3)
        inner = _indent(stmts + keep + ["T[q] = %s;" % v] + g, 3)
        out = ["for (i0 = 0; i0 < n; i0 += %d) {" % CHUNK,
               "    %s T[%d];" % (CTYPE[src], CHUNK),
               "    const %s *F = T;" % CTYPE[src],
               "    if (n - i0 >= %d) {" % CHUNK,
               "        for (fk_i q = 0; q < %d; q++) {" % CHUNK, "            fk_i i = i0 + q;"]
        out += full + ["        }"] + (["        F = %s + i0;" % at] if at else [])
        out += _indent(prefetch("i0", CHUNK) if prefetch else [], 2) + ["    } else {",
                        "        const fk_i m = n - i0;",
                        "        for (fk_i q = 0; q < m; q++) {", "            fk_i i = i0 + q;"]
        out += inner + ["        }",
                        "        for (fk_i q = m; q < %d; q++)" % CHUNK, "            T[q] = %s;" % pad, "    }"]
        if op == "sum" and floats:
            # the chunk's values summed in float, lane by lane (each lane adds CHUNK / LANES of
            # them: a few roundings, far inside the tolerance), then once into the double lanes
            out += ["    {", "        fk_vt x, y; memcpy(&x, F, sizeof x);",
                    "        for (fk_i q = %d; q < %d; q += %d) { memcpy(&y, F + q, sizeof y); x += y; }"
                    % (LANES, CHUNK, LANES),
                    "        " + fold, "    }", "}"]
        else:
            out += ["    for (fk_i q = 0; q < %d; q += %d) {" % (CHUNK, LANES),
                    "        fk_vt x; memcpy(&x, F + q, sizeof x);", "        " + fold, "    }", "}"]
        return out
    out = ["{"] + _indent(decl + ["int bad = 0;", "fk_i i0, l;"] + init_lines + loops(fast, True, prefetch), 1)
    if flags:
        out += _indent(["if (bad) {"] + _indent(init_lines + loops(exact, False), 1) + ["}"], 1)
    out += _indent(["{"] + _indent(final, 1) + ["}"], 1)
    if floats and op in ("max", "min"):
        # Python's max keeps the first of equal values: only zeros differ (-0.0 == 0.0)
        out += _indent(["if (row%d == 0) {" % j,
                        "    for (fk_i i = 0; i < n; i++) {"] + _indent(exact, 2) +
                       ["        if (%s == 0) { row%d = %s; break; }" % (v, j, v), "    }", "}"], 1)
    out.append("}")
    return out


def _in_memory(kernel, i, classes, saved, stores):
    """Where node ``i``'s values along the row already lie contiguously in memory (a unit-stride
    input, or its row scratch), as a C pointer expression; None when only computing gives them."""
    node = kernel.nodes[i]
    if i in saved or i in stores:
        return "S%d" % i
    if node[0] == "load" and classes[node[2]] == "c":
        return "p%d" % node[2]
    return None


_SIZE = {"float": 4, "double": 8, "int8_t": 1, "int32_t": 4, "int64_t": 8, "uint8_t": 1, "uint64_t": 8}


def _u(dtype):
    return {"int8": "uint8_t", "int32": "uint32_t", "int64": "uint64_t"}[dtype]


def _int_extreme(dtype, op):
    bits = {"int8": 8, "int32": 32, "int64": 64}[dtype]
    if op == "max":
        return "((%s)(-%dLL - 1))" % (CTYPE[dtype], (1 << (bits - 1)) - 1)
    return "((%s)%dLL)" % (CTYPE[dtype], (1 << (bits - 1)) - 1)


def _weight(node):
    """About how many plain float ops recomputing ``node`` costs (transcendentals and divisions
    cost more)."""
    if node[0] == "unary" and node[2] not in ("neg", "abs", "sign", "isnan", "isinf", "logical_not",
                                              "bitwise_not", "floor", "ceil", "trunc", "round"):
        return 8
    if node[0] == "binary" and node[2] in ("div", "pow", "floordiv", "mod", "atan2"):
        return 4
    return 0 if node[0] in ("load", "const", "row", "acc") else 1


def _worth_saving(nodes, i):
    """A node whose value moves along the row and costs more to recompute than a scratch load."""
    sub = _needed(nodes, [i])
    return any(nodes[k][0] == "load" for k in sub) and sum(_weight(nodes[k]) for k in sub) >= 4


def scratch_plan(kernel):
    """Which row values a phase keeps for the later ones: ``(reads, stores, slots)`` -- per phase,
    the nodes it reads from the scratch and those it writes there; all saved nodes in slot order.

    A softmax's sum phase computes ``exp(x - max)`` at every element; its Map phase reads it back
    from the row scratch instead of computing exp again (the values are the same bits)."""
    nodes = kernel.nodes
    maps = [i for _, i in _outputs(kernel, False)]
    roots = [[p.node] if type(p) is ir.Reduce else maps for p in kernel.phases]
    writer, reads = {}, []
    for j, r in enumerate(roots):
        avail = set(writer)
        need = _needed(nodes, r, avail)
        reads.append(set(need) & avail)
        for i in need:
            if i not in avail and _worth_saving(nodes, i):
                writer[i] = j
    slots = sorted(set().union(*reads)) if reads else []
    stores = [[i for i in slots if writer[i] == j] for j in range(len(roots))]
    return reads, stores, slots


def _streamed(kernel, classes):
    """The inputs a row kernel reads at unit stride along its rows: each row of them comes from
    memory in the first phase (then from cache in the later ones)."""
    used = set(node[2] for node in kernel.nodes if node[0] == "load")
    return [k for k in range(len(kernel.inputs)) if k in used and classes[k] == "c"]


def _next_row(kernel, streamed):
    """Declarations of ``q<k>``, input k's next row (null for the last row or a row too long to
    wait in cache)."""
    out = ["fk_i noff[%d], nooff;" % max(1, len(kernel.inputs)),
           "const int pf = r + 1 < A->total && n * %d <= %d;" % (max(_ITEM[kernel.inputs[k]] for k in streamed),
                                                               PREFETCH_BYTES),
           "if (pf)", "    fk_offsets(A, r + 1, noff, &nooff);"]
    for k in streamed:
        t = CTYPE[kernel.inputs[k]]
        out.append("const %s *q%d = pf ? (const %s *)A->in[%d] + noff[%d] : 0;" % (t, k, t, k, k))
    return out


def _prefetch(kernel, streamed, at, count):
    """Statements asking for the next row's elements [at, at + count) of each streamed input, one
    cache line at a time: the second phase, working in cache, overlaps the next row's loads (the
    first phase would wait for them)."""
    out = ["if (pf) {"]
    for k in streamed:
        step = 64 // _ITEM[kernel.inputs[k]]
        out.append("    for (fk_i k = 0; k < %d && %s + k < n; k += %d) __builtin_prefetch(q%d + %s + k);"
                   % (count, at, step, k, at))
    return out + ["}"]


_ITEM = {"float32": 4, "float64": 8, "int8": 1, "int32": 4, "int64": 8, "bool": 1}


def rows_source(kernel, classes, out_contig):
    """Rows of ``A->n`` elements along the kernel's dim: Reduce phases, then the Map, then the
    per-row outputs (index ``r`` of each). ``S`` is this thread's row scratch (scratch_plan)."""
    nodes = kernel.nodes
    maps, per_rows = _outputs(kernel, False), _outputs(kernel, True)
    reads, stores, slots = scratch_plan(kernel)
    lines = ["static void fk_row(const fk_args *A, fk_i r, char *S)", "{",
             "    const fk_i n = A->n;",
             "    fk_i off[%d], ooff, i, b;" % max(1, len(kernel.inputs)),
             "    fk_offsets(A, r, off, &ooff);", "    (void)b; (void)ooff; (void)S;"]
    lines += _indent(_pointers(kernel, classes, lambda k: "off[%d]" % k), 1)
    streamed = _streamed(kernel, classes)
    prefetch = None
    if streamed and len(kernel.phases) > 1:
        lines += _indent(_next_row(kernel, streamed), 1)
        prefetch = lambda at, count: _prefetch(kernel, streamed, at, count)
    for s, c in enumerate(slots):
        t = CTYPE[nodes[c][1]]
        lines.append("    %s *restrict S%d = (%s *)(S + %d * FK_SLOT(n));" % (t, c, t, s))
    for j, p in enumerate(kernel.phases):
        if type(p) is ir.Reduce:
            lines.append("    %s row%d;" % (CTYPE[p.dtype], j))
    row_of = lambda j: "row%d" % j
    for j, p in enumerate(kernel.phases):
        if type(p) is ir.Reduce:
            lines += _indent(_reduce_block(kernel, j, p, classes, row_of, reads[j], stores[j],
                                           prefetch if j == 1 else None), 1)
    if maps:
        m = len(kernel.phases) - 1
        body = _Body(kernel, _needed(nodes, [i for _, i in maps], reads[m]), _load_expr(classes), row_of, None,
                     reads[m])
        ost = "i" if out_contig else "i * A->out_inner"
        for j, i in maps:
            t = CTYPE[nodes[i][1]]
            lines.append("    %s *restrict o%d = (%s *)A->out[%d] + ooff;" % (t, j, t, j))
        lines += _blocked_loop(body, "0", "n", ["o%d[%s] = v%d;" % (j, ost, i) for j, i in maps], 1,
                               prefetch if m == 1 else None)
    if per_rows:
        first = lambda k: "p%d[0]" % k
        body = _Body(kernel, _needed(nodes, [i for _, i in per_rows]), first, row_of, None)
        exact, _ = body.lines(False)
        lines += _indent(["{", "    fk_i i = 0; (void)i;"] + _indent(exact, 1), 1)
        for j, i in per_rows:
            t = CTYPE[nodes[i][1]]
            lines.append("        ((%s *)A->out[%d])[r] = v%d;" % (t, j, i))
        lines.append("    }")
    lines += ["}", "",
              "#define FK_SLOTS %d" % len(slots),
              "static void fk_task_fn(void *p, int tid, int nt)", "{",
              "    const fk_ctx *c = (const fk_ctx *)p;",
              "    const fk_args *A = c->A;",
              "    char *S = c->scratch ? c->scratch + tid * c->per_thread : 0;",
              "    fk_i lo, hi, r;",
              "    fk_share(A->total, tid, nt, 1, &lo, &hi);",
              "    for (r = lo; r < hi; r++)",
              "        fk_row(A, r, S);", "}"]
    return "\n".join(lines)


def source(kernel, variant, prelude):
    """The whole C module of ``kernel`` specialised for ``variant`` (see compile_c.variant)."""
    kind, classes, out_contig = variant
    ni = max(1, len(kernel.inputs))
    no = max(1, len(kernel.outputs))
    head = prelude + _ARGS % {"maxd": MAXD, "ni": ni, "no": no}
    loops = flat_source(kernel, classes) if kind == "flat" else rows_source(kernel, classes, out_contig)
    return "/* ember fused kernel: %s; variant %r */\n%s\n%s\n%s" % (ir.describe(kernel), variant, head, loops, _ENTRY)
