"""Reductions, scans and sorting along one dim (Wgpu device methods).

``reduce``: one thread per output element loops over the reduced dim when there are many outputs
or the dim is short; otherwise one workgroup per output splits the dim among 256 threads and
combines their partial results in workgroup memory. Float sums and products accumulate in f64
and round once (the Cpu backend accumulates in double); integer ones in i64, wrapping.
``scan``: one thread per line, in order, accumulating like ``reduce``. ``sort``: each element's
rank among its line (stable: ties by position; nan last ascending, first descending).
"""
from ember import dtypes

from . import codegen, ops
from .arrays import contiguous_strides, numel

def _acc_type(self, dtype, op):
    """The type values accumulate in, and the type they load as."""
    st = self.storage[dtype].wgsl
    if op in ("sum", "prod", "cumsum", "cumprod"):
        if dtype.kind == "f":
            return ("f64" if self.rt.has_f64 else "f32"), st
        return ("i64" if self.rt.has_i64 else "i32"), st
    if dtype.kind == "f":
        return ("f64" if st == "f64" else "f32"), st
    return ("u32" if dtype.kind == "b" else st), st


def _isnan(ct):
    return ("isnan64" if ct == "f64" else "isnan32") if ct in ("f32", "f64") else None


def _lib_nan(ct):
    return ["bits64" if ct == "f64" else "bits32"] if ct in ("f32", "f64") else []


def _fold_init(op, ct):
    if op in ("sum", "cumsum"):
        return "%s(0)" % ct
    if op in ("prod", "cumprod"):
        return "%s(1)" % ct
    if op == "any":
        return "false"
    if op == "all":
        return "true"
    raise ValueError(op)


def _out_dtype(op, dtype):
    if op in ("argmax", "argmin"):
        return dtypes.int64
    if op in ("any", "all"):
        return dtypes.bool_
    if op in ("sum", "prod") and dtype.kind == "b":
        return dtypes.int64
    return dtype


# -- reduce -------------------------------------------------------------------------------------------

def _combine_src(op, ct):
    """WGSL statements folding value ``v`` (index ``t``) into ``acc`` (and ``at`` for arg ops);
    ``done`` set true stops the loop (a nan decides max/min/argmax/argmin)."""
    nan = _isnan(ct)
    if op == "sum":
        return "acc = acc + v;"
    if op == "prod":
        return "acc = acc * v;"
    if op == "any":
        return "acc = acc || !(v == %s(0));" % ct
    if op == "all":
        return "acc = acc && !(v == %s(0));" % ct
    cmp = ">" if op in ("max", "argmax") else "<"
    if nan is None:
        return "if (v %s acc) { acc = v; at = t; }" % cmp
    return "if (%s(v)) { acc = v; at = t; done = true; } else if (v %s acc) { acc = v; at = t; }" % (nan, cmp)


def reduce(self, op, x, dim):
    """The primitive ``reduce``: a thread per output, or a workgroup per output for long dims; float sums accumulate
    in f64 where the GPU has it."""
    dtype = x.dtype
    out_dtype = _out_dtype(op, dtype)
    shape = x.shape
    out_shape = shape[:dim] + (1,) + shape[dim + 1:]
    out = self._alloc(out_shape, out_dtype)
    n_out = numel(out_shape)
    length = shape[dim]
    if n_out == 0:
        return out
    strides, _ = x.layout()
    xspec = self._spec(x, strides[:dim] + (0,) + strides[dim + 1:])
    return _run(self, "reduce", op, dtype, xspec, out, length, (length, strides[dim]))


def _run(self, name, op, dtype, xspec, out, length, extra, at="o0 + i32(t) * step", helpers=""):
    """Launch reduction kernel ``name`` folding ``length`` elements into each of ``out``'s:
    ``at`` addresses element t of an output's line (``helpers``: WGSL functions it calls)."""
    ct, st = _acc_type(self, dtype, op)
    ost = self.storage[out.dtype].wgsl
    if op in ("argmax", "argmin"):
        store, slibs = ost + "({})", ()
    elif op in ("any", "all"):
        store, slibs = "select(0u, 1u, {})", ()
    else:
        store, slibs = ops.store(ct, out.dtype, ost)
    libs = _lib_nan(ct) + list(slibs)
    load = ops.load(st, ct)
    f16 = "f16" in (st, ost)
    n_out = numel(out.shape)
    wide = length >= 512 and n_out <= 8192
    key = (name, op, dtype.name, wide)
    specs = [xspec, self._spec(out)]
    if not wide:
        body = _reduce_thread_body(op, ct, load, store, at)
        build = lambda: codegen.strided_source([st, ost], 2, body, libs, f16, helpers)  # noqa: E731
        self._launch(key, build, specs, out.shape, extra)
        return out
    body = _reduce_group_body(op, ct, load, store, at)
    build = lambda: codegen.workgroup_source([st, ost], body, libs, f16, _group_memory(op, ct) + helpers)  # noqa: E731
    self._launch(key, build, specs, out.shape, extra, groups=n_out)
    return out


def _reduce_thread_body(op, ct, load, store, at="o0 + i32(t) * step"):
    """One thread per output folds its line; ``at``: the address of element t of the line."""
    arg = op in ("argmax", "argmin")
    init = None if op in ("max", "min", "argmax", "argmin") else _fold_init(op, ct)
    s = ["  let n = pw(48u);\n  let step = pi(49u);\n"]
    if init is None:
        s.append("  var acc = %s;\n  var at = 0u;\n  var done = false;\n" % load.format("b0[u32(o0)]"))
        s.append("  if (%s) { done = true; }\n" % ("%s(acc)" % _isnan(ct) if _isnan(ct) else "false"))
        s.append("  for (var t = 1u; t < n && !done; t = t + 1u) {\n")
    else:
        s.append("  var acc = %s;\n  for (var t = 0u; t < n; t = t + 1u) {\n" % init)
    s.append("    let v = %s;\n    %s\n  }\n" % (load.format("b0[u32(%s)]" % at), _combine_src(op, ct)))
    s.append("  b1[u32(o1)] = %s;\n" % store.format("at" if arg else "acc"))
    return "".join(s)


def _group_memory(op, ct):
    arg = op in ("argmax", "argmin")
    t = "bool" if op in ("any", "all") else ct
    s = "var<workgroup> part: array<%s, %d>;\n" % ("u32" if t == "bool" else t, codegen.WG)
    if arg or op in ("max", "min"):
        s += "var<workgroup> part_at: array<u32, %d>;\nvar<workgroup> part_nan: array<u32, %d>;\n" % (codegen.WG, codegen.WG)
    return s


def _reduce_group_body(op, ct, load, store, at="o0 + i32(t) * step"):
    """One workgroup per output: thread ``lid`` folds t = lid, lid + 256, ...; then a tree."""
    arg = op in ("argmax", "argmin")
    ext = op in ("max", "min") or arg
    nan = _isnan(ct)
    s = ["  let i = gid;\n  if (i >= pw(0u)) { return; }\n", codegen.offsets(2),
         "  let n = pw(48u);\n  let step = pi(49u);\n"]
    if ext:
        # per thread: (acc, at, nan seen); threads with no element start as "empty" (at = n)
        s.append("  var acc = %s(0);\n  var at = n;\n  var isn = 0u;\n" % ct)
        s.append("  for (var t = lid; t < n; t = t + %du) {\n" % codegen.WG)
        s.append("    let v = %s;\n" % load.format("b0[u32(%s)]" % at))
        cmp = ">" if op in ("max", "argmax") else "<"
        if nan:
            s.append("    if (isn == 0u) {\n      if (%s(v)) { acc = v; at = t; isn = 1u; }\n"
                     "      else if (at == n || v %s acc) { acc = v; at = t; }\n    }\n" % (nan, cmp))
        else:
            s.append("    if (at == n || v %s acc) { acc = v; at = t; }\n" % cmp)
        s.append("  }\n  part[lid] = acc;\n  part_at[lid] = at;\n  part_nan[lid] = isn;\n")
        s.append("  workgroupBarrier();\n")
        s.append("  for (var h = %du; h > 0u; h = h >> 1u) {\n    if (lid < h) {\n" % (codegen.WG // 2))
        s.append("      let a_at = part_at[lid]; let b_at = part_at[lid + h];\n")
        s.append("      let a_n = part_nan[lid]; let b_n = part_nan[lid + h];\n")
        s.append("      let a = part[lid]; let b = part[lid + h];\n")
        # b wins if: a empty; or b is nan and (a not nan or b earlier); or neither nan and b better or tie-earlier
        s.append("      var take_b = false;\n")
        s.append("      if (b_at != n) {\n")
        s.append("        if (a_at == n) { take_b = true; }\n")
        s.append("        else if (a_n == 1u || b_n == 1u) { take_b = (b_n == 1u) && (a_n == 0u || b_at < a_at); }\n")
        s.append("        else { take_b = (b %s a) || (b == a && b_at < a_at); }\n      }\n" % cmp)
        s.append("      if (take_b) { part[lid] = b; part_at[lid] = b_at; part_nan[lid] = b_n; }\n")
        s.append("    }\n    workgroupBarrier();\n  }\n")
        if arg:
            s.append("  if (lid == 0u) { b1[u32(o1)] = %s; }\n" % store.format("part_at[0]"))
        else:
            s.append("  if (lid == 0u) { b1[u32(o1)] = %s; }\n" % store.format("part[0]"))
        return "".join(s)
    boolean = op in ("any", "all")
    s.append("  var acc = %s;\n" % _fold_init(op, ct))
    s.append("  for (var t = lid; t < n; t = t + %du) {\n" % codegen.WG)
    s.append("    let v = %s;\n    %s\n  }\n" % (load.format("b0[u32(%s)]" % at), _combine_src(op, ct)))
    s.append("  part[lid] = %s;\n  workgroupBarrier();\n" % ("select(0u, 1u, acc)" if boolean else "acc"))
    s.append("  for (var h = %du; h > 0u; h = h >> 1u) {\n    if (lid < h) {\n" % (codegen.WG // 2))
    comb = {"sum": "part[lid] + part[lid + h]", "prod": "part[lid] * part[lid + h]",
            "any": "part[lid] | part[lid + h]", "all": "part[lid] & part[lid + h]"}[op]
    s.append("      part[lid] = %s;\n    }\n    workgroupBarrier();\n  }\n" % comb)
    res = "(part[0] != 0u)" if boolean else "part[0]"
    s.append("  if (lid == 0u) { b1[u32(o1)] = %s; }\n" % store.format(res))
    return "".join(s)



# up to this many runs of reduced dims (after merging neighbours) go through one reduce_dims kernel
REDUCED_RUNS = 3
_RUN_OFFSET = """fn roff(t: u32) -> i32 {
  var rem = t;
  let c2 = rem % pw(54u); rem = rem / pw(54u);
  let c1 = rem % pw(52u); rem = rem / pw(52u);
  return i32(rem) * pi(51u) + i32(c1) * pi(53u) + i32(c2) * pi(55u);
}
"""


def _reduced_runs(shape, strides, dims):
    """[(size, stride)] of the reduced dims, outermost first: size-1 dims dropped, neighbours
    merged where the outer one's stride steps over the inner one."""
    runs = []
    joined = False  # whether the previous dim kept was reduced
    for d in range(len(shape)):
        if shape[d] == 1:
            continue
        if d not in dims:
            joined = False
            continue
        if joined and runs[-1][1] == strides[d] * shape[d]:
            runs[-1] = (runs[-1][0] * shape[d], strides[d])
        else:
            runs.append((shape[d], strides[d]))
        joined = True
    return runs


def reduce_dims(self, op, x, dims):
    """``op`` over several ``dims`` at once (kept with size 1), reading ``x`` once: what the
    ``reduce_dims`` composite is replaced by (reduce_dims.py). None where it does not apply (arg
    ops, a change of dtype, more than ``REDUCED_RUNS`` runs of reduced dims, an empty max or
    min). Float sums and products accumulate in f64 where the GPU has it and round once."""
    dtype = x.dtype
    if op not in ("sum", "prod", "max", "min", "any", "all") or _out_dtype(op, dtype) is not dtype:
        return None
    shape = x.shape
    strides, _ = x.layout()
    runs = _reduced_runs(shape, strides, dims)
    if len(runs) > REDUCED_RUNS:
        return None
    out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape))
    n_out = numel(out_shape)
    length = numel(shape) // n_out if n_out else 0
    if n_out and not length:
        if op in ("max", "min"):
            return None  # the one-dim reduce raises the error an empty max has
        return self.full(out_shape, 1 if op in ("prod", "all") else 0, dtype)
    out = self._alloc(out_shape, dtype)
    if n_out == 0:
        return out
    runs = [(1, 0)] * (REDUCED_RUNS - len(runs)) + runs
    xspec = self._spec(x, tuple(0 if d in dims else s for d, s in enumerate(strides)))
    return _run(self, "reduce_dims", op, dtype, xspec, out, length, [length, 0] + [w for run in runs for w in run],
                "o0 + roff(t)", _RUN_OFFSET)


# -- scan ------------------------------------------------------------------------------------------------

def scan(self, op, x, dim):
    """Inclusive scans along ``dim``; one thread walks each line in order."""
    dtype = x.dtype
    shape = x.shape
    arg = op in ("cumargmax", "cumargmin")
    out_dtype = dtypes.int64 if arg else dtype
    out = self._alloc(shape, out_dtype)
    length = shape[dim]
    lines = shape[:dim] + (1,) + shape[dim + 1:]
    if numel(shape) == 0:
        return out
    ct, st = _acc_type(self, dtype, op)
    ost = self.storage[out_dtype].wgsl
    strides, _ = x.layout()
    ostrides = contiguous_strides(shape)
    xspec = self._spec(x, strides[:dim] + (0,) + strides[dim + 1:])
    ospec = (out.block.buffer, ostrides[:dim] + (0,) + ostrides[dim + 1:], self._base(out))
    load = ops.load(st, ct)
    if arg:
        store, slibs = ost + "({})", ()
    else:
        store, slibs = ops.store(ct, out_dtype, ost)
    libs = _lib_nan(ct) + list(slibs)
    s = ["  let n = pw(48u);\n  let step = pi(49u);\n  let ostep = pi(50u);\n"]
    if op in ("cumsum", "cumprod"):
        s.append("  var acc = %s;\n" % _fold_init(op, ct))
        s.append("  for (var t = 0u; t < n; t = t + 1u) {\n")
        s.append("    let v = %s;\n" % load.format("b0[u32(o0 + i32(t) * step)]"))
        s.append("    acc = acc %s v;\n" % ("+" if op == "cumsum" else "*"))
        s.append("    b1[u32(o1 + i32(t) * ostep)] = %s;\n  }\n" % store.format("acc"))
    else:
        # the running extreme: ties move to the later index; a nan, once seen, stays
        cmp = ">" if op in ("cummax", "cumargmax") else "<"
        nan = _isnan(ct)
        s.append("  var best = %s;\n  var at = 0u;\n" % load.format("b0[u32(o0)]"))
        s.append("  for (var t = 0u; t < n; t = t + 1u) {\n")
        s.append("    let v = %s;\n" % load.format("b0[u32(o0 + i32(t) * step)]"))
        if nan:
            s.append("    if (t == 0u || (!%s(best) && (%s(v) || v %s best || v == best))) { best = v; at = t; }\n"
                     % (nan, nan, cmp))
        else:
            s.append("    if (t == 0u || v %s best || v == best) { best = v; at = t; }\n" % cmp)
        s.append("    b1[u32(o1 + i32(t) * ostep)] = %s;\n  }\n" % store.format("at" if arg else "best"))
    body = "".join(s)
    f16 = "f16" in (st, ost)
    key = ("scan", op, dtype.name)
    self._launch(key, lambda: codegen.strided_source([st, ost], 2, body, libs, f16), [xspec, ospec], lines,
                 (length, strides[dim], ostrides[dim]))
    return out


# -- sort ------------------------------------------------------------------------------------------------

def sort(self, x, dim, descending):
    """(values, int64 indices) along ``dim``: element ``t`` goes to its rank among its line."""
    dtype = x.dtype
    shape = x.shape
    vals = self._alloc(shape, dtype)
    idxs = self._alloc(shape, dtypes.int64)
    if numel(shape) == 0:
        return vals, idxs
    st = self.storage[dtype].wgsl
    ist = self.storage[dtypes.int64].wgsl
    ct = "f64" if st == "f64" else ("f32" if dtype.kind == "f" else st)
    nan = _isnan(ct)
    load = ops.load(st, ct)
    strides, _ = x.layout()
    ostrides = contiguous_strides(shape)
    # one thread per element: slot 0 is the element, slot 1 its line's start, slot 2 the outputs' line
    line = strides[:dim] + (0,) + strides[dim + 1:]
    oline = ostrides[:dim] + (0,) + ostrides[dim + 1:]
    specs = [self._spec(x), self._spec(x, line), (vals.block.buffer, oline, self._base(vals)),
             (idxs.block.buffer, oline, self._base(idxs))]
    if nan:
        before = ("(jn && !tn) || (jn && tn && j < t) || (!jn && !tn && (w > v || (w == v && j < t)))"
                  if descending else
                  "(!jn && tn) || (jn && tn && j < t) || (!jn && !tn && (w < v || (w == v && j < t)))")
        nanv = "let tn = %s(v);\n" % nan
        nanw = "let jn = %s(w);" % nan
    else:
        cmp = ">" if descending else "<"
        before = "(w %s v) || (w == v && j < t)" % cmp
        nanv = nanw = ""
    body = ("  let n = pw(48u);\n  let step = pi(49u);\n  let ostep = pi(50u);\n"
            "  let t = (i / pw(51u)) %% n;\n"
            "  let v = %s;\n  %s  var rank = 0u;\n"
            "  for (var j = 0u; j < n; j = j + 1u) {\n"
            "    let w = %s;\n    %s\n"
            "    if (%s) { rank = rank + 1u; }\n  }\n"
            "  b1[u32(o2 + i32(rank) * ostep)] = b0[u32(o0)];\n"
            "  b2[u32(o3 + i32(rank) * ostep)] = %s(t);\n"
            % (load.format("b0[u32(o0)]"), nanv, load.format("b0[u32(o1 + i32(j) * step)]"), nanw, before, ist))
    f16 = st == "f16"
    inner = numel(shape[dim + 1:])
    key = ("sort", dtype.name, bool(descending))
    self._launch(key, lambda: codegen.strided_source([st, st, ist], 4, body, _lib_nan(ct), f16),
                 specs, shape, (shape[dim], strides[dim], ostrides[dim], inner),
                 buffers=[x.block.buffer, vals.block.buffer, idxs.block.buffer])
    return vals, idxs
