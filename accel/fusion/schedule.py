"""Cut the pending graph below a node into fused kernels (see ir.py) and run them.

``realize(device, node)`` computes ``node`` and every pending node it depends on that the program
still holds. Each node to compute (a *root*) becomes one kernel, built by walking its expression:

- elementwise ops and views (expand, permute, size-1 reshapes) are **inlined**: views only change
  how the inputs are indexed (strides), elementwise ops become expression nodes;
- a pending reduce whose input has the root's shape and that the root reads broadcast along the
  reduced dim becomes a **Reduce phase** of a row kernel (softmax, layer norm: fuse-on-read);
- a pending matmul the root reads at its own index becomes the **acc** of a matmul kernel whose
  epilogue is the root (bias + activation: fuse-on-write);
- anything else pending (a reduce read another way, a node the program holds but reads through a
  broadcast) is a **boundary**: computed first, by its own kernel, then loaded.

Nodes the program still holds that the walk inlines at the kernel's own index are written as extra
outputs of the same kernel, so nothing is computed twice; intermediates nobody holds are never
written. When the compiler cannot take a kernel (``supports`` False, an array it cannot address),
the root's ops run unfused on the inner device, one primitive each.

A model's calls repeat their graphs, so what a build found is kept by the graph's shape
(``_Graph.key``): the kernel (``_Schedule``, with the compiler's prepared call once it has run),
or, for a graph with boundaries, which of its nodes to compute first (``_Boundaries``) beside the
kernel of the graph left after them. A repeated graph builds nothing.
"""
from . import ir
from .explain import TRACERS
from .graph import ELEMENTWISE, Node, topo

FUSABLE_REDUCES = ir.REDUCE_OPS
SCHEDULES = 512  # graph shapes a device remembers (then it starts afresh)
# True while something wraps the compilers' ``run`` to see every kernel (a step capture recording,
# accel/capture/trace.py): then a repeated graph goes through ``run`` too, not its prepared call
WATCHED = False


class Unfusable(Exception):
    """Raised while building a kernel that the compiler cannot run; the root then runs unfused."""


def realize(device, node):
    """Compute ``node`` (and what it needs) on ``device.inner``; returns its inner value."""
    if node.value is None:
        _compute(device, node)
    return node.value


def _compute(device, node, graph=None):
    """Compute ``node``'s pending graph (``graph``: that graph, already walked); returns the graph
    it walked, or None where no kernel of a graph ran (a view, unfused ops)."""
    if node.value is not None:
        return None
    inner = device.inner
    if node.op in ("expand", "permute", "reshape"):  # a view of a computed array: no kernel
        src = node.args[0]
        value = realize(device, src) if type(src) is Node else src
        node.set(getattr(inner, node.op)(value, node.args[1]))
        return None
    compiler = device.compiler
    if compiler is not None:
        walked = graph = graph or _Graph(compiler, node)
        known = _known(device, graph)
        if type(known) is _Boundaries:  # nodes computed first; the graph left is another key
            known.compute_first(device, graph)
            graph = known.rest.read(graph, compiler) if known.rest is not None else None
            known = _known(device, graph) if graph is not None else None
            if type(known) is not _Schedule:  # not the graph left last time: walk it
                _compute(device, node)
                return walked
        # a repeated graph runs its prepared call, nothing built or checked -- unless something
        # watches every kernel: explain's traces, a step capture recording (WATCHED)
        if known is not None and known.call is not None and not TRACERS and not WATCHED:
            known.run(graph, inner)
            return walked
        if known is not None:
            kernel, space, inputs, outputs, shapes = known.bind(graph)
        else:
            try:
                builder = _Builder(device, node)
                kernel, space, inputs, outputs = builder.build()
                shapes = builder.output_shapes
            except Unfusable:
                kernel = None
            if kernel is not None and graph.key is not None:
                known = _remember(device, graph, builder, node, kernel, space, inputs, outputs, shapes)
        if kernel is not None:
            values = compiler.run(kernel, space, inputs)
            if known is not None and known.call is None and hasattr(compiler, "prepare"):
                known.call = compiler.prepare(kernel, space, inputs)  # once its code is built
            device._launched(kernel, space, inputs, compiler)
            for n, v, shape in zip(outputs, values, shapes):
                n.set(v if shape == n.shape else inner.reshape(v, n.shape))
            return walked
    _eager(device, node)
    return None


def _known(device, graph):
    """What ``device`` keeps for ``graph``'s key: a ``_Schedule``, ``_Boundaries`` or None."""
    try:
        return device.schedules.get(graph.key)  # the key is hashed here only (tuples keep no hash)
    except TypeError:  # a parameter that is not hashable: this graph is built every time
        graph.key = None
        return None


def _remember(device, graph, builder, root, kernel, space, inputs, outputs, shapes):
    """Keep the kernel built for ``graph`` (its ``_Schedule``, returned), or None. Where the
    build computed boundaries first, ``graph``'s key is kept as those nodes' positions
    (``_Boundaries``) and the kernel under the key of the graph left once they are computed."""
    if len(device.schedules) >= SCHEDULES:
        device.schedules.clear()
    if not builder.boundaries:
        known = _Schedule.of(graph, kernel, space, inputs, outputs, shapes)
        if known is not None:
            device.schedules[graph.key] = known
        return known
    at = dict((id(n), i) for i, n in enumerate(graph.nodes))
    if any(id(b) not in at for b in builder.boundaries):
        return None
    rest = _Graph(device.compiler, root)
    known = _Schedule.of(rest, kernel, space, inputs, outputs, shapes)
    try:
        if known is not None:
            device.schedules[rest.key] = known
    except TypeError:
        return None
    made = dict((id(n.value), i) for i, n in enumerate(graph.nodes) if n.value is not None)
    compiler = device.compiler
    parts = [_Part.of(graph, g, made, compiler) if g is not None else None for g in builder.walked]
    device.schedules[graph.key] = _Boundaries([at[id(b)] for b in builder.boundaries], parts,
                                              _Part.of(graph, rest, made, compiler))
    return known


class _Boundaries:
    """A graph key whose kernel needs some of its nodes computed first (each by its own kernel):
    their positions in the graph's walk, in the order the build computed them. Each of their
    graphs, and the graph left once they are computed, is kept as a ``_Part`` of the first graph,
    so a repeated graph is walked once, not once more for every graph inside it."""

    __slots__ = ("positions", "parts", "rest")

    def __init__(self, positions, parts, rest):
        self.positions, self.parts, self.rest = positions, parts, rest

    def compute_first(self, device, graph):
        nodes, compiler = graph.nodes, device.compiler
        for i, part in zip(self.positions, self.parts):
            if nodes[i].value is None:
                _compute(device, nodes[i], part.read(graph, compiler) if part is not None else None)


def _layout_key(compiler):
    """What fixes an array's layout in a graph's key: the compiler's cheaper ``layout_key`` where
    it has one, else its ``layout`` (ir.py)."""
    return getattr(compiler, "layout_key", compiler.layout)


class _Part:
    """A graph inside a bigger one, as positions in it: its nodes (positions in the bigger graph's
    nodes), its arrays (positions in its values, or -1 - the position of a node computed by then)
    and the layouts of those computed arrays. ``read`` gives the graph again from the bigger
    graph's next walk without walking it."""

    __slots__ = ("key", "nodes", "values", "layouts")

    @staticmethod
    def of(graph, part, made, compiler):
        """``part``, a graph walked inside ``graph`` (``made``: id of a computed array -> its
        node's position), as positions in ``graph``; None where it is not made of it."""
        if part.key is None:
            return None
        at = dict((id(n), i) for i, n in enumerate(graph.nodes))
        value_at = dict((id(v), j) for j, v in enumerate(graph.values))
        layout = _layout_key(compiler)
        self = _Part()
        self.key, self.nodes = part.key, [at.get(id(n)) for n in part.nodes]
        self.values, self.layouts = [], []
        for v in part.values:
            j = value_at.get(id(v))
            if j is None and id(v) in made:
                j = -1 - made[id(v)]
                self.layouts.append(layout(v))
            self.values.append(j)
        return None if None in self.nodes or None in self.values else self

    def read(self, graph, compiler):
        """This part of ``graph`` (a graph of the key it was read from), or None where it is not
        as it was: a node computed that was pending, or pending that was computed, another layout."""
        nodes = graph.nodes
        part_nodes = [nodes[i] for i in self.nodes]
        for n in part_nodes:
            if n.value is not None:
                return None
        values, computed = graph.values, []
        part_values = [values[j] if j >= 0 else nodes[-1 - j].value for j in self.values]
        for j, v in zip(self.values, part_values):
            if j < 0:
                if v is None:
                    return None
                computed.append(v)
        if computed:
            layout = _layout_key(compiler)
            if [layout(v) for v in computed] != self.layouts:
                return None
        part = _Graph.__new__(_Graph)
        part.key, part.nodes, part.values = self.key, part_nodes, part_values
        return part


class _Graph:
    """The pending graph below a root, named by its shape: ``key`` holds an entry per pending node
    (its op, shape, dtype, whether the program holds it, then its arguments), with the arguments
    as positions in ``nodes`` (the walk order) or in ``values`` (the computed arrays it reads,
    with their layouts). Two graphs of one key build the same kernel, so a schedule found once is
    bound to the next graph of that key without building it again (a model's calls repeat their
    graphs). ``_compute`` sets ``key`` to None for a graph holding a parameter that is not
    hashable.

    An entry is one flat tuple, read left to right: a bare int is a pending node's position, None
    starts a computed array (its position, shape, dtype and layout follow), a type is followed by
    one value of it (``float``: a float, its hex spelling when zero or nan, since 0.0 == -0.0 and
    nan != nan; 1, 1.0 and True are three graphs), a str is an op's name. Flat tuples hash and
    compare about twice as fast as nested ones (the key is made at every flush)."""

    __slots__ = ("key", "nodes", "values")

    def __init__(self, compiler, root):
        nodes, at, values, value_at, key = [], {}, [], {}, []
        layout = _layout_key(compiler)

        def visit(n, depth):  # places n's pending arguments, then n; returns n's position
            entry = [n.op, n.shape, n.dtype, n.handle() is not None]
            for a in n.args:
                t = type(a)
                if t is Node:
                    v = a.value
                    if v is None:
                        i = at.get(id(a))
                        if i is None:
                            if depth >= _DEPTH:
                                raise _Deep
                            i = visit(a, depth + 1)
                        entry.append(i)
                        continue
                    j = value_at.get(id(v))
                    if j is None:
                        j = value_at[id(v)] = len(values)
                        values.append(v)
                    entry += (None, j, a.shape, a.dtype, layout(v))
                elif t is float:
                    entry += (float, a) if a and a == a else (float, a.hex())
                elif t is str:
                    entry.append(a)
                else:
                    entry += (t, a)
            i = at[id(n)] = len(nodes)
            nodes.append(n)
            key.append(tuple(entry))
            return i

        try:
            visit(root, 0)
        except _Deep:
            # a chain deeper than _DEPTH: place the nodes inputs first, so no visit recurses
            del nodes[:], values[:], key[:]
            at.clear()
            value_at.clear()
            for n in topo(root):
                visit(n, 0)
        finally:
            # visit's closure holds visit: a cycle that would keep these lists (and the arrays
            # of the nodes computed from them) until the garbage collector ran
            visit = None
        self.nodes, self.values = nodes, values
        self.key = tuple(key)


_DEPTH = 64  # nested visits before _Graph walks a chain without recursion


class _Deep(Exception):
    """A graph deeper than ``_DEPTH``: ``_Graph`` places its nodes in topological order instead."""


class _Schedule:
    """A built kernel and how it binds to a graph of its key: ``inputs`` as (value position,
    strides, offset), ``outputs`` as node positions."""

    __slots__ = ("kernel", "space", "inputs", "outputs", "shapes", "call", "picks", "reshaped")

    @staticmethod
    def of(graph, kernel, space, inputs, outputs, shapes):
        """The schedule of a kernel built for ``graph``, or None when its arrays are not the graph's."""
        value_at = dict((id(v), j) for j, v in enumerate(graph.values))
        node_at = dict((id(n), i) for i, n in enumerate(graph.nodes))
        if any(id(v) not in value_at for v, _, _ in inputs) or any(id(n) not in node_at for n in outputs):
            return None
        self = _Schedule()
        self.kernel, self.space, self.shapes = kernel, space, shapes
        self.inputs = [(value_at[id(v)], st, off) for v, st, off in inputs]
        self.outputs = [node_at[id(n)] for n in outputs]
        self.call = None  # the compiler's prepared call (``prepare``), made after the first run
        self.picks = [j for j, _, _ in self.inputs]
        if self.picks == list(range(len(graph.values))):
            self.picks = None  # the kernel reads the graph's arrays as they are listed
        self.reshaped = [shape != n.shape for n, shape in zip(outputs, shapes)]
        return self

    def run(self, graph, inner):
        """Run the prepared call on ``graph``'s arrays and set its output nodes."""
        values = graph.values
        results = self.call(values if self.picks is None else [values[j] for j in self.picks])
        nodes = graph.nodes
        for i, v, reshaped in zip(self.outputs, results, self.reshaped):
            n = nodes[i]
            n.set(inner.reshape(v, n.shape) if reshaped else v)

    def bind(self, graph):
        values, nodes = graph.values, graph.nodes
        return (self.kernel, self.space, [(values[j], st, off) for j, st, off in self.inputs],
                [nodes[i] for i in self.outputs], self.shapes)


def _eager(device, node):
    """Run ``node``'s pending ops one primitive each (what the inner device does without Fusion)."""
    inner = device.inner
    for n in topo(node):
        args = [realize(device, a) if type(a) is Node else a for a in n.args]
        if n.op == "unary":
            value = inner.unary(args[0], args[1])
        elif n.op == "reduce":
            value = inner.reduce(args[0], args[1], args[2])
        elif n.op == "binary":
            value = inner.binary(args[0], args[1], args[2])
        elif n.op == "where":
            value = inner.where(args[0], args[1], args[2])
        elif n.op in ("cast", "expand", "permute", "reshape"):
            value = getattr(inner, n.op)(args[0], args[1])
        elif n.op == "matmul":
            value = inner.matmul(args[0], args[1])
        else:
            raise AssertionError("fusion: no eager rule for %r" % (n.op,))
        if n.op not in ("expand", "permute", "reshape"):
            device._launched(None, n.op, args, None)
        n.set(value)


def _identity(rank):
    return tuple(range(rank))


def _row_identity(rank, dim):
    return tuple(None if k == dim else k for k in range(rank))


def _squeeze_map(src_out, out_shape, in_shape):
    """The index map of a reshape that only inserts or removes size-1 dims, or None."""
    kept_out = [k for k, s in enumerate(out_shape) if s != 1]
    kept_in = [k for k, s in enumerate(in_shape) if s != 1]
    if [out_shape[k] for k in kept_out] != [in_shape[k] for k in kept_in]:
        return None
    src = [None] * len(in_shape)
    for ki, ko in zip(kept_in, kept_out):
        src[ki] = src_out[ko]
    return tuple(src)


def _per_row(reduce, src, root_shape):
    """How a root reads ``reduce`` at one value per row (its index map into the reduce's input
    space), or None. ``src`` maps the reduce's dims to the root's: the reduced dim must be read at
    0, the others in order (dropping or keeping size-1 dims), so the root's row-major order is the
    order of the rows."""
    dim, shape = reduce.args[2], reduce.shape
    mapped = []
    for k, s in enumerate(src):
        if k == dim:
            if s is not None and shape[k] != 1:
                return None
            continue
        if s is None:
            if shape[k] != 1:
                return None
            continue
        mapped.append((s, k))
    if [s for s, _ in mapped] != sorted(set(s for s, _ in mapped)):
        return None
    root_src = [None] * len(root_shape)
    for s, k in mapped:
        root_src[s] = k
    if any(m is None and n != 1 for m, n in zip(root_src, root_shape)):
        return None  # the root reads each row's value more than once
    return tuple(root_src)


def squeeze_only(in_shape, out_shape):
    """True when reshaping ``in_shape`` to ``out_shape`` only adds or drops dims of size 1."""
    return [s for s in in_shape if s != 1] == [s for s in out_shape if s != 1]


class _Builder:
    """Builds the kernel for one root (see the module docstring)."""

    def __init__(self, device, root):
        self.device = device
        self.compiler = device.compiler
        self.root = root
        self.nodes = []
        self.memo = {}  # (id(node), src) -> IR node index
        self.inputs = []  # dtype names
        self.args = []  # (array, strides, offset)
        self.input_memo = {}
        self.phases = []
        self.reduce_phase = {}  # id(reduce node) -> phase index
        self.outputs = []  # (IR index, per_row)
        self.output_nodes = []
        self.output_shapes = []  # what the compiler returns for each output (reshaped to the node's)
        self.matmul = None
        self.boundaries = []  # the pending nodes computed first, by kernels of their own
        self.walked = []  # the graph each of them walked (None: none)

    # -- choosing the kernel --------------------------------------------------------------------
    def build(self):
        root = self.root
        kind, anchor, root_src = self._kind(root)
        if kind == "matmul":
            self.space = anchor.shape
            self.rank = len(self.space)
            self.dim = None
            self.matmul = anchor
            self.k = anchor.args[0].shape[-1]
            a, b = (self._boundary(x) for x in anchor.args[:2])
            self.a = self._input(a, tuple(range(self.rank)), anchor.args[0])
            self.b = self._input(b, tuple(range(self.rank)), anchor.args[1])
            top = self._expr(root, _identity(self.rank))
            self._output(root, top, False)
        elif kind == "row":
            self.space = anchor.args[1].shape
            self.rank = len(self.space)
            self.dim = anchor.args[2]
            per_row = root_src != _identity(self.rank)
            top = self._expr(root, root_src)
            self._output(root, top, per_row)
        else:
            self.space = root.shape
            self.rank = len(self.space)
            self.dim = None
            top = self._expr(root, _identity(self.rank))
            self._output(root, top, False)
        if any(not p for _, p in self.outputs) and (not self.phases or type(self.phases[-1]) is not ir.Map):
            if self.matmul is None:
                self.phases.append(ir.Map())
        if kind == "row" and id(anchor) not in self.reduce_phase:
            raise Unfusable()  # its anchor sat below a held node this kernel computes first
        if self.matmul is not None:
            kernel = ir.MatmulKernel(self.rank, self.a, self.b, self.matmul.dtype.name, self.inputs,
                                     self.nodes, self.outputs)
            space = tuple(self.space) + (self.k,)
        else:
            kernel = ir.RowKernel(self.rank, self.dim, self.inputs, self.nodes, self.phases, self.outputs)
            space = tuple(self.space)
        if not self.compiler.supports(kernel):
            raise Unfusable()
        return kernel, space, self.args, self.output_nodes

    def _kind(self, root):
        """("matmul", m) / ("row", reduce) / ("flat", None): the kernel ``root`` anchors."""
        if root.op == "reduce":
            if root.args[0] in FUSABLE_REDUCES and root.dtype.name in ir.DTYPES:
                return "row", root, _row_identity(len(root.shape), root.args[2])
            raise Unfusable()
        if root.op == "matmul":
            return "matmul", root, None
        found = []
        self._scan(root, _identity(len(root.shape)), root.shape, found, set())
        # a reduction read over its rows beats an epilogue: softmax(q @ k.T) computes the matmul
        # once (a boundary) and then one row kernel, where a matmul kernel would leave the
        # reductions to kernels of their own that recompute the matmul
        for kind, anchor, root_src in found:
            if kind == "row":
                return kind, anchor, root_src
        if found:
            return found[0]
        return "flat", None, None

    def _scan(self, node, src, space, found, seen):
        """Find pending reduces/matmuls ``node`` reads at a fusable index (depth first)."""
        key = (id(node), src)
        if key in seen or type(node) is not Node or node.value is not None:
            return
        seen.add(key)
        rank = len(space)
        if node.op == "reduce":
            x, dim = node.args[1], node.args[2]
            if node.args[0] not in FUSABLE_REDUCES:
                return
            if tuple(x.shape) == tuple(space) and src == _row_identity(rank, dim):
                found.append(("row", node, _identity(rank)))  # read broadcast: a Map phase
                return
            root_src = _per_row(node, src, space)
            if root_src is not None:
                found.append(("row", node, root_src))  # one value per row: a per-row output
            return
        if node.op == "matmul":
            if tuple(node.shape) == tuple(space) and src == _identity(rank):
                found.append(("matmul", node, None))
            return
        if self._held(node) and src != _identity(rank) and not any(
                src == _row_identity(rank, d) and node.shape[d] == 1 for d in range(rank)):
            return  # read where no kernel over this space can store it: a boundary (see _expr)
        for a, s in self._children(node, src):
            self._scan(a, s, space, found, seen)

    def _children(self, node, src):
        """(argument node, its index map) for an inlinable node."""
        op = node.op
        if op in ELEMENTWISE:
            return [(a, src) for a in node.args if type(a) is Node]
        x = node.args[0]
        if type(x) is not Node:
            return []
        if op == "expand":
            return [(x, tuple(None if xs == 1 and os != 1 else s
                              for xs, os, s in zip(x.shape, node.shape, src)))]
        if op == "permute":
            inv = [None] * len(src)
            for k, d in enumerate(node.args[1]):
                inv[d] = src[k]
            return [(x, tuple(inv))]
        if op == "reshape":
            m = _squeeze_map(src, node.shape, x.shape)
            return [(x, m)] if m is not None else []
        return []

    # -- expressions ----------------------------------------------------------------------------
    def _emit(self, node):
        self.nodes.append(node)
        return len(self.nodes) - 1

    def _expr(self, node, src):
        key = (id(node), src)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if self._held(node) and self._written_as(node, src) is None:
            # the program holds it, but this kernel reads it where it cannot store it (a bias read
            # broadcast over a batch): inlined, it would never be stored, and the next graph would
            # compute it again -- a parameter updated every step grew every step's kernel
            idx = self._load(self._boundary(node), src, node)
        else:
            idx = self._translate(node, src)
            if self._held(node):
                self._output(node, idx, None, src)  # the program holds it: write it from this kernel
        self.memo[key] = idx
        return idx

    def _held(self, node):
        """A pending node other than the root that the program holds (views and reduces aside: a
        view is read through, a reduce's phase writes its own output)."""
        return node is not self.root and node.value is None and node.alive() and \
            node.op not in ("reduce", "expand", "permute", "reshape")

    def _translate(self, node, src):
        if node.value is not None:
            return self._load(node.value, src, node)
        op, dtype = node.op, node.dtype.name
        if dtype not in ir.DTYPES:
            raise Unfusable()
        if op == "unary":
            return self._emit(("unary", dtype, node.args[0], self._arg(node.args[1], src, node)))
        if op == "binary":
            a, b = node.args[1], node.args[2]
            other = b if type(b) is Node else a
            return self._emit(("binary", dtype, node.args[0], self._arg(a, src, other),
                               self._arg(b, src, other)))
        if op == "where":
            c, a, b = (self._arg(x, src, node) for x in node.args)
            return self._emit(("where", dtype, c, a, b))
        if op == "cast":
            return self._emit(("cast", dtype, self._arg(node.args[0], src, node)))
        if op in ("expand", "permute", "reshape"):
            children = self._children(node, src)
            if not children:
                return self._load(self._boundary(node), src, node)
            x, s = children[0]
            return self._expr(x, s)
        if op == "reduce":
            if self.dim is not None and node.args[0] in FUSABLE_REDUCES and \
                    tuple(node.args[1].shape) == tuple(self.space) and node.args[2] == self.dim and \
                    src == _row_identity(self.rank, self.dim):
                return self._row(node)
            return self._load(self._boundary(node), src, node)
        if op == "matmul":
            if node is self.matmul and src == _identity(self.rank) and node.value is None:
                return self._emit(("acc", dtype))
            return self._load(self._boundary(node), src, node)
        raise Unfusable()

    def _arg(self, a, src, like):
        if type(a) is Node:
            return self._expr(a, src)
        dtype = like.dtype.name
        return self._emit(("const", dtype, a))

    def _row(self, node):
        j = self.reduce_phase.get(id(node))
        if j is None:
            body = self._expr(node.args[1], _identity(self.rank))
            self.phases.append(ir.Reduce(node.args[0], body, node.dtype.name))
            j = len(self.phases) - 1
            self.reduce_phase[id(node)] = j
        idx = self._emit(("row", node.dtype.name, j))
        if node is not self.root and node.alive():
            self._output(node, idx, True)
        return idx

    def _boundary(self, node):
        """A pending node this kernel cannot inline: compute it first, return its value."""
        if type(node) is not Node:
            return node
        if node.value is None:
            self.boundaries.append(node)
            self.walked.append(_compute(self.device, node))
        return node.value

    def _load(self, value, src, node):
        layout = self.compiler.layout(value)
        if layout is None:
            raise Unfusable()
        strides, offset = layout
        st = [0] * self.rank
        for k, s in enumerate(src):
            if s is not None and node.shape[k] != 1:
                st[s] += strides[k]
        key = (id(value), tuple(st), offset)
        k = self.input_memo.get(key)
        if k is None:
            k = len(self.inputs)
            self.inputs.append(node.dtype.name)
            self.args.append((value, tuple(st), offset))
            self.input_memo[key] = k
        return self._emit(("load", node.dtype.name, k))

    def _input(self, value, dims, node):
        layout = self.compiler.layout(value)
        if layout is None:
            raise Unfusable()
        strides, offset = layout
        k = len(self.inputs)
        self.inputs.append(node.dtype.name)
        self.args.append((value, tuple(strides[d] if node.shape[d] != 1 else 0 for d in dims), offset))
        return k

    def _written_as(self, node, src):
        """How a node read at index map ``src`` is stored by this kernel: False (at every index of
        the space), True (once per row), or None (it cannot be: read through a broadcast or a
        permutation)."""
        if src == _identity(self.rank) and tuple(node.shape) == tuple(self.space):
            return False
        if self.dim is not None and src == _row_identity(self.rank, self.dim) and \
                tuple(node.shape) == tuple(self.space[:self.dim]) + (1,) + tuple(self.space[self.dim + 1:]):
            return True
        return None

    def _output(self, node, idx, per_row, src=None):
        if per_row is None:  # an inlined node the program holds: only at the kernel's own index
            per_row = self._written_as(node, src)
            if per_row is None:
                return
        if any(n is node for n in self.output_nodes):
            return
        self.outputs.append((idx, per_row))
        self.output_nodes.append(node)
        shape = tuple(self.space)
        if per_row:
            shape = shape[:self.dim] + (1,) + shape[self.dim + 1:]
        self.output_shapes.append(shape)

