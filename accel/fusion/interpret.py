"""``Interpreter``: runs fused kernels on the pure-Python Cpu, bit for bit what the unfused ops give.

It is the fusion compiler of ``Cpu(kernels="python")`` and the fallback of ``CCompiler`` where no C
compiler works. Each node runs through the pure backend's own value functions
(``elementwise.unary_data``, ``binary_data``, ``where_data``, ``storage.convert``; rows fold with
``reduce.folder``; a matmul is ``linalg.matmul``), over chunks of ``storage.CHUNK`` elements or one
row at a time, and each result is stored as the pure Cpu stores its dtype before the next node
reads it. So a fused chain rounds exactly as the unfused one, and no intermediate the size of the
input is ever made.

>>> outs = Interpreter().run(kernel, (4, 3), [(x, (3, 1), 0)])
"""
from ember import dtypes
from ember.backends.cpu import elementwise as ew
from ember.backends.cpu import linalg, reduce, storage
from ember.backends.cpu.array import CpuArray, flat_indices, numel, values
from ember.shapes import row_major_strides

from . import check, ir

_SCALARS = (bool, int, float)
_INF = float("inf")


def _stored_scalar(value, dtype):
    """A Python value as ``dtype`` stores it (a const as the pure Cpu would hold it in an array)."""
    return storage.convert([value], dtype)[0]


def _seq(v, dtype, n):
    """``v`` as a stored sequence of length ``n`` (a scalar repeated)."""
    if type(v) in _SCALARS:
        return storage.repeat(_stored_scalar(v, dtype), n, dtype)
    return v


# -- one closure per node: step(vals, env) -> a stored sequence or a Python scalar --------------

def _load(node):
    k = node[2]
    return lambda vals, env: env.load(k)


def _const(node):
    value = node[2]
    return lambda vals, env: value


def _row(node):
    j = node[2]
    return lambda vals, env: env.rows[j]


def _acc(node):
    return lambda vals, env: env.acc


def _unary(node, nodes):
    op, x = node[2], node[3]
    xd = dtypes.get(nodes[x][1])

    def step(vals, env):
        v = vals[x]
        if type(v) in _SCALARS:
            return ew.unary_data(op, xd, storage.convert([v], xd))[0]
        return ew.unary_data(op, xd, v)
    return step


def _binary(node, nodes):
    op, x, y = node[2], node[3], node[4]
    xd = dtypes.get(nodes[x][1])

    def step(vals, env):
        a, b = vals[x], vals[y]
        if type(a) in _SCALARS and type(b) in _SCALARS:
            return ew.binary_data(op, xd, storage.convert([a], xd), b, 1)[0]
        return ew.binary_data(op, xd, a, b, env.n)
    return step


def _where(node, nodes):
    c, x, y = node[2], node[3], node[4]
    dtype = dtypes.get(node[1])

    def step(vals, env):
        cv, a, b = vals[c], vals[x], vals[y]
        if type(cv) in _SCALARS and type(a) in _SCALARS and type(b) in _SCALARS:
            return _stored_scalar(a if cv else b, dtype)
        n = env.n
        return ew.where_data(dtype, _seq(cv, dtypes.bool_, n), _seq(a, dtype, n), _seq(b, dtype, n))
    return step


def _cast(node, nodes):
    x = node[2]
    src, dtype = dtypes.get(nodes[x][1]), dtypes.get(node[1])

    def step(vals, env):
        v = vals[x]
        if src is dtype:
            return v
        if type(v) in _SCALARS:
            return storage.convert([_stored_scalar(v, src)], dtype)[0]
        return storage.convert(v, dtype)
    return step


_STEPS = {"load": _load, "const": _const, "row": _row, "acc": _acc}
_NODE_STEPS = {"unary": _unary, "binary": _binary, "where": _where, "cast": _cast}


def _needed(nodes, roots):
    """The sorted indices of the nodes ``roots`` depend on (themselves included)."""
    seen = set()
    todo = list(roots)
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        node = nodes[i]
        if node[0] in ("unary", "binary"):
            todo.extend(node[3:])
        elif node[0] in ("where", "cast"):
            todo.extend(node[2:])
    return sorted(seen)


class _Env:
    """What the steps read: loads for the current chunk or row, the row's reduced values, acc."""

    __slots__ = ("n", "rows", "acc", "_loads", "_get")

    def __init__(self, get):
        self._get = get
        self.rows = []
        self.acc = None
        self.n = 0
        self._loads = {}

    def start(self, n):
        self.n = n
        self._loads = {}

    def load(self, k):
        v = self._loads.get(k)
        if v is None:
            v = self._loads[k] = self._get(k)
        return v


class _Program:
    """A kernel's node steps, and the node lists each phase evaluates."""

    def __init__(self, kernel):
        nodes = kernel.nodes
        self.steps = []
        for node in nodes:
            make = _STEPS.get(node[0])
            self.steps.append(make(node) if make is not None else _NODE_STEPS[node[0]](node, nodes))
        self.map_outputs = [i for i, per_row in kernel.outputs if not per_row]
        self.row_outputs = [i for i, per_row in kernel.outputs if per_row]
        phases = getattr(kernel, "phases", ())
        self.reduces = [(j, p, _needed(nodes, [p.node])) for j, p in enumerate(phases) if type(p) is ir.Reduce]
        self.map_nodes = _needed(nodes, self.map_outputs)
        self.row_nodes = _needed(nodes, self.row_outputs)
        self.source = "\n".join(_listing(kernel))

    def eval(self, order, env):
        vals = [None] * len(self.steps)
        steps = self.steps
        for i in order:
            vals[i] = steps[i](vals, env)
        return vals


def _listing(kernel):
    """A readable listing of the kernel (what ``source`` returns: the interpreter has no code)."""
    yield "# interpreted: %s" % (ir.describe(kernel),)
    for i, node in enumerate(kernel.nodes):
        args = ", ".join(("v%d" % a) if node[0] in ("unary", "binary", "where", "cast") and type(a) is int
                         and pos > (0 if node[0] in ("where", "cast") else 1) else repr(a)
                         for pos, a in enumerate(node[2:]))
        yield "v%d: %s = %s(%s)" % (i, node[1], node[0], args)
    for p in getattr(kernel, "phases", ()):
        yield "phase " + (p.op + " v%d -> %s" % (p.node, p.dtype) if type(p) is ir.Reduce else "map")
    for node, per_row in kernel.outputs:
        yield "out v%d%s" % (node, " per row" if per_row else "")


def _identity(op, dtype):
    if op == "sum":
        return 0.0 if dtype.kind == "f" else 0
    if op == "prod":
        return 1.0 if dtype.kind == "f" else 1
    if dtype.kind == "f":
        return -_INF if op == "max" else _INF
    return dtype.lo if op == "max" else dtype.hi


def _size(a):
    return len(a.data)


def _dtype(a):
    return a.dtype.name if type(a) is CpuArray else type(a).__name__


class Interpreter:
    """The fusion compiler of the pure Cpu (``ir.py`` states the contract)."""

    name = "interpreter"

    def __init__(self):
        self._programs = {}

    def layout(self, array):
        return array.layout() if type(array) is CpuArray else None

    def supports(self, kernel):
        return not check.kernel_errors(kernel)

    def source(self, kernel):
        return self._program(kernel).source

    def _program(self, kernel):
        program = self._programs.get(kernel.key)
        if program is None:
            check.kernel(kernel)
            program = self._programs[kernel.key] = _Program(kernel)
        return program

    def run(self, kernel, space, inputs):
        program = self._program(kernel)
        check.run_args(kernel, space, inputs, _size, _dtype)
        space = tuple(space)
        if kernel.kind == "matmul":
            return _run_matmul(program, kernel, space, inputs)
        if kernel.dim is None:
            return _run_flat(program, kernel, space, inputs, None)
        return _run_rows(program, kernel, space, inputs)


def _out_dtypes(kernel, per_row):
    return [dtypes.get(kernel.nodes[i][1]) for i, p in kernel.outputs if p == per_row]


def _flat_values(space, item):
    """An input's values over ``space``, row-major (a Python scalar where it is one value)."""
    a, strides, offset = item
    if not any(strides):
        return a.data[offset]
    return values(CpuArray(a.data, space, a.dtype, tuple(strides), offset))


def _run_flat(program, kernel, space, inputs, acc):
    """A Map over the flat ``space`` in chunks; ``acc`` is a matmul's result (or None)."""
    total = numel(space)
    loads = {}
    out_dt = _out_dtypes(kernel, False)
    outs = [storage.empty(dt, total) for dt in out_dt]
    chunk = storage.CHUNK
    at = [0, 0]

    def get(k):
        v = loads.get(k)
        if v is None:
            v = loads[k] = _flat_values(space, inputs[k])
        if type(v) in _SCALARS:
            return v
        i, j = at
        return v if i == 0 and j == len(v) else v[i:j]
    env = _Env(get)
    for i in range(0, total, chunk):
        j = min(i + chunk, total)
        at[0], at[1] = i, j
        env.start(j - i)
        if acc is not None:
            env.acc = acc if i == 0 and j == len(acc) else acc[i:j]
        vals = program.eval(program.map_nodes, env)
        for out, dt, node in zip(outs, out_dt, program.map_outputs):
            storage.copy_into(out, i, _seq(vals[node], dt, j - i), dt)
    return [CpuArray(o, space, dt) for o, dt in zip(outs, out_dt)]


def _run_rows(program, kernel, space, inputs):
    """Phases one row at a time: each Reduce folds the row, then the Map writes it."""
    d = kernel.dim
    n = space[d]
    other = space[:d] + space[d + 1:]
    rows = numel(other)
    bases, row_st = [], []
    for a, strides, offset in inputs:
        bases.append(flat_indices(other, tuple(strides[:d]) + tuple(strides[d + 1:]), offset) if rows else [])
        row_st.append(strides[d])
    inner = numel(space[d + 1:])
    out_bases = flat_indices(other, tuple(row_major_strides(space)[:d]) + tuple(row_major_strides(space)[d + 1:]), 0)
    map_dt, row_dt = _out_dtypes(kernel, False), _out_dtypes(kernel, True)
    maps = [storage.empty(dt, numel(space)) for dt in map_dt]
    per_rows = [storage.empty(dt, rows) for dt in row_dt]
    folds = [(j, reduce.folder(p.op, dtypes.get(kernel.nodes[p.node][1])), p, order)
             for j, p, order in program.reduces]
    state = {"r": 0, "first": False}

    def get(k):
        a, base = inputs[k][0], bases[k][state["r"]]
        s = row_st[k]
        if s == 0 or state["first"]:
            return a.data[base]
        return storage.strided(a.data, base, n, s)
    env = _Env(get)
    env.rows = [None] * len(kernel.phases)
    for r in range(rows):
        state["r"], state["first"] = r, False
        env.start(n)
        for j, (fold, out_dtype), p, order in folds:
            node_dt = dtypes.get(kernel.nodes[p.node][1])
            seg = _seq(program.eval(order, env)[p.node], node_dt, n)
            value = fold(seg) if n else _identity(p.op, out_dtype)
            env.rows[j] = storage.pack([value], out_dtype)[0]
        if maps and n:
            vals = program.eval(program.map_nodes, env)
            b = out_bases[r]
            for out, dt, node in zip(maps, map_dt, program.map_outputs):
                _put_row(out, b, inner, n, _seq(vals[node], dt, n), dt)
        if per_rows:
            state["first"] = True
            env.start(1)
            vals = program.eval(program.row_nodes, env)
            for out, dt, node in zip(per_rows, row_dt, program.row_outputs):
                out[r] = _seq(vals[node], dt, 1)[0]
    row_shape = space[:d] + (1,) + space[d + 1:]
    return _in_order(kernel, [CpuArray(o, space, dt) for o, dt in zip(maps, map_dt)],
                     [CpuArray(o, row_shape, dt) for o, dt in zip(per_rows, row_dt)])


def _in_order(kernel, maps, per_rows):
    """The outputs in ``kernel.outputs`` order from the map and per-row lists."""
    maps, per_rows = iter(maps), iter(per_rows)
    return [next(per_rows) if per_row else next(maps) for _, per_row in kernel.outputs]




def _put_row(out, base, step, n, seq, dtype):
    if type(seq) is not type(out):
        seq = storage.pack(list(seq), dtype) if type(out) is not list else list(seq)
    if step == 1:
        out[base:base + n] = seq
    else:
        out[base:base + step * (n - 1) + 1:step] = seq


def _run_matmul(program, kernel, space, inputs):
    """``linalg.matmul`` (the pure accumulation order), then the epilogue as a flat Map."""
    batch, (m, n, k) = space[:-3], space[-3:]
    (ad, ast, aoff), (bd, bst, boff) = inputs[kernel.a], inputs[kernel.b]
    acc_dtype = dtypes.get(kernel.acc_dtype)
    a = CpuArray(ad.data, batch + (m, k), acc_dtype, tuple(ast), aoff)
    b = CpuArray(bd.data, batch + (k, n), acc_dtype, tuple(bst), boff)
    acc = linalg.matmul(a, b) if numel(batch + (m, n)) else CpuArray(storage.empty(acc_dtype, 0),
                                                                      batch + (m, n), acc_dtype)
    out_space = batch + (m, n)
    return _run_flat(program, kernel, out_space, inputs, values(acc))
