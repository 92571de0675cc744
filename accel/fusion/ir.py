"""The fused-kernel IR: what ``Fusion`` hands a backend's compiler, and the compiler's contract.

``Fusion(inner)`` records fusable ops lazily; at a read (or a non-fusable op, or a long stream) the
scheduler cuts the recorded graph into **kernels** and asks the inner backend's **compiler** to run
each one. A kernel is plain data (tuples of strings, ints and floats), hashable, and says nothing
about sizes: the same model at another batch size makes an equal kernel, so compiled code is
cached by ``kernel.key``. Kernels compare and hash by that key (the hash computed once per kernel
object), so a compiler keys its tables by the kernel itself.

Two kinds of kernel:

- ``RowKernel`` -- a loop over an iteration ``space`` (a shape given at run time). With ``dim``
  None the space is flat and the kernel has one ``Map`` phase: an elementwise kernel. With ``dim``
  an int, the space is cut into **rows** along ``dim`` (every index of the other dims is one row of
  ``space[dim]`` elements) and the phases run in order for each row: a ``Reduce`` phase folds an
  expression over the row into one value per row (a softmax's max, then its sum); a ``Map`` phase
  evaluates expressions at every element of the row and may read the row's earlier reduced values
  (a softmax's ``exp(x - max) / sum``). So softmax, layer norm and ``mean((x - m) ** 2)`` are one
  kernel each, and no intermediate that dies inside it is written to memory.
- ``MatmulKernel`` -- ``acc = a @ b`` over the output space ``(..., M, N)`` followed by an
  epilogue: expressions over the output space that may read ``acc`` and other inputs (a bias,
  then an activation). Only the epilogue's outputs are written.

Expressions
-----------
``kernel.nodes`` is a tuple of nodes in topological order; a node refers to earlier nodes by their
position. Every node carries the ember dtype name of its value (``"float32"``, ``"float64"``,
``"int8"``, ``"int32"``, ``"int64"``, ``"bool"``). A node's value is rounded to its dtype, exactly as
the unfused backend would store it (per-op rounding is kept inside a fused chain: a float32 chain is
computed op by op in float32, never carried in float64).

    ("load", dtype, k)              input k at the current index (see Inputs)
    ("const", dtype, value)         a Python int/float/bool, already of the dtype's range
    ("unary", dtype, op, x)         op from ember.backend.UNARY_OPS, same meaning as the primitive
    ("binary", dtype, op, x, y)     op from BINARY_OPS (comparisons give "bool")
    ("where", dtype, c, x, y)       c is a bool node
    ("cast", dtype, x)              the cast primitive's rounding and saturation rules
    ("row", dtype, j)               the value phase j (a Reduce) produced for the current row
    ("acc", dtype)                  MatmulKernel only: the matmul result at the current index

The op semantics are the primitives' (``docs/architecture.md``): a compiler produces what the
unfused inner backend gives for the same op chain, bit for bit for ``+ - * /``, ``sqrt``, compares,
casts, ``where``, and within the conformance suite's tolerance for transcendental functions.

Inputs
------
``kernel.inputs`` is a tuple of dtype names, one per input buffer. At run time each input comes as
``(array, strides, offset)``: the inner backend's array, and the element ``strides`` (one per dim
of the kernel's space; 0 where the input is broadcast) and ``offset`` into that array's **storage**
that address the element at each index of the space. The scheduler builds them from
``compiler.layout(array)``, so views (slices, permutes, expands) are read in place. A
``MatmulKernel``'s inputs ``a`` and ``b`` are ordinary inputs whose strides address
``(..., M, K)`` and ``(..., K, N)`` (batch dims broadcast already, strides 0 where broadcast).

Outputs
-------
``kernel.outputs`` is a tuple of ``(node, per_row)``. A map output (``per_row`` False) is stored at
every index of the space; a per-row output (``per_row`` True, RowKernel with ``dim`` only) is an
expression of ``row`` values (and of loads whose stride along ``dim`` is 0) stored once per row, at
index 0 of ``dim``, into an array of the space's shape with ``space[dim] = 1``. Outputs are fresh,
contiguous (row-major) arrays of the inner backend, of their node's dtype.

Reduce ops: ``"sum"``, ``"prod"``, ``"max"``, ``"min"`` (identity 0, 1, -inf, +inf for floats; the
dtype's min/max for integers), with the reduce primitive's NaN behaviour (max/min propagate NaN).
The row is folded in index order; a compiler may reassociate a float sum (as the C and GPU reduce
primitives do), within the conformance tolerance.

The compiler contract
---------------------
A backend that fuses provides ``compiler()`` returning an object with:

    layout(array) -> (strides, offset) | None   where ``array``'s elements live in its storage
                                               (None: not addressable; the scheduler then runs
                                               the ops unfused)
    supports(kernel) -> bool                   False for what it cannot compile (e.g. float16)
    run(kernel, space, inputs) -> [array, ...] one inner array per output
    source(kernel) -> str                      the generated code (for ``explain``)

``run`` is where compiled code is cached (in memory by ``kernel.key``; on disk where compiling is
slow: see ``cache.py``). It must not read anything back to the host.

Two optional methods make a repeated graph cheaper (a model calls the same graphs every step):

    layout_key(array) -> hashable              what fixes ``layout(array)`` for an array of a
                                               known shape, cheaper to get (the C Cpu's
                                               ``(strides, offset)`` attributes, None while
                                               implicit); the scheduler's graph key holds it
    prepare(kernel, space, inputs) -> call | None
                                               after a ``run`` of these arguments: a callable
                                               ``call(arrays)`` running the kernel again on
                                               arrays of the same strides and offsets (in the
                                               kernel's input order), without ``run``'s checks
                                               and lookups; the scheduler keeps it with the graph

Decisions the compilers follow where the text above leaves room
---------------------------------------------------------------
- A ``const`` stands for the Python scalar the primitive would have received. The frontend has
  already rounded a float scalar to the tensor's precision (``elementwise._scalar_as``), so a
  float32 const is a float32 value (``CCompiler.supports`` refuses one that is not); an op reads it
  as the primitive reads a scalar operand, and where a const is a value of its own (a ``where``
  branch, a cast's input, an output) it is rounded to its dtype.
- A binary node's operands have one dtype (the node's, or any for a comparison); a Reduce's
  ``dtype`` is its node's, except ``int64`` for a sum or prod of bools; max/min of bools are refused.
- A Reduce over an empty row gives the identity listed above (the reduce primitive raises there).
  Reduce phases may fold in any order (a tree across threads): a max/min over equal values of
  different zero signs may return either zero.
- ``MatmulKernel``: ``run(kernel, space, inputs)`` gets ``space = (..., M, N, K)``; every input's
  strides have ``rank`` entries: ``a`` addresses ``(..., M, K)``, ``b`` ``(..., K, N)``, the others
  the output ``(..., M, N)``. The epilogue never loads ``a`` or ``b`` (it reads ``acc``).
- A per-row output may load only inputs whose stride along ``dim`` is 0; the compilers read such a
  load at index 0 of ``dim``.
- ``layout(array)``'s offset counts elements from the start of the array's own storage (for
  ``Wgpu``: its block of device memory, whatever buffer the block lives in).
- A compiler may compute a float32 op in float32 where the primitive goes through float64, if the
  result stays what the contract asks: bit for bit for ``/`` (the WGSL compiler's float32 division
  by a constant is correctly rounded, which is the primitive's result), within the conformance
  tolerance for transcendental functions (the float32 ``erf``/``exp`` of both compilers).
- Validation (``check.py``) raises ``ArgumentError``, ``DTypeError`` or ``ShapeError`` for a
  malformed kernel, a wrong number of inputs, strides of the wrong length, a dtype mismatch, or
  strides and an offset that reach outside an input's storage.
"""

FLOATS = ("float32", "float64")
INTS = ("int8", "int32", "int64")
DTYPES = FLOATS + INTS + ("bool",)
REDUCE_OPS = ("sum", "prod", "max", "min")


class Reduce:
    """Fold ``node`` over the row with ``op``; the result is the ``("row", dtype, j)`` of this phase."""

    __slots__ = ("op", "node", "dtype")

    def __init__(self, op, node, dtype):
        self.op = op
        self.node = node
        self.dtype = dtype

    def key(self):
        return ("reduce", self.op, self.node, self.dtype)


class Map:
    """Evaluate the map outputs at every element of the row (or of the flat space)."""

    __slots__ = ()

    def key(self):
        return ("map",)


class _Keyed:
    """Equality and hash by ``key``: kernels are dict keys of the compilers' tables, so the large
    nested ``key`` is hashed once per kernel (on first use), not on every lookup."""

    def __eq__(self, other):
        return self is other or (type(other) is type(self) and other.key == self.key)

    def __hash__(self):
        h = self._hash
        if h is None:
            h = self._hash = hash(self.key)
        return h


class RowKernel(_Keyed):
    """A loop over ``space`` (rows along ``dim``, or flat when ``dim`` is None) running ``phases``.

    ``dim`` is given relative to the rank (``rank`` is part of the kernel; sizes are not). Map
    outputs are computed in the last Map phase; a kernel has at most one Map phase and it is last.
    """

    kind = "row"

    def __init__(self, rank, dim, inputs, nodes, phases, outputs):
        self.rank = rank
        self.dim = dim
        self.inputs = tuple(inputs)
        self.nodes = tuple(nodes)
        self.phases = tuple(phases)
        self.outputs = tuple(outputs)
        self.key = ("row", rank, dim, self.inputs, _keyed(self.nodes), tuple(p.key() for p in self.phases),
                    self.outputs)
        self._hash = None


def _keyed(nodes):
    """``nodes`` with each constant's value as its type and exact bits: kernels of ``x * 0.0`` and
    ``x * -0.0`` (equal as floats) are two kernels, as are those of ``1``, ``1.0`` and ``True``, and
    a nan constant keys like itself."""
    out = []
    for n in nodes:
        if n[0] == "const":
            v = n[2]
            n = n[:2] + (("float", v.hex()) if type(v) is float else (type(v).__name__, v),) + n[3:]
        out.append(n)
    return tuple(out)


class MatmulKernel(_Keyed):
    """``acc = inputs[a] @ inputs[b]`` over ``(..., M, N)``, then the epilogue ``outputs``.

    ``rank`` is the output's rank (>= 2); the contraction size K is a run-time size, read from
    the ``k`` argument of ``run`` (see ``space``: the scheduler passes ``space + (K,)``).
    """

    kind = "matmul"

    def __init__(self, rank, a, b, acc_dtype, inputs, nodes, outputs):
        self.rank = rank
        self.a = a
        self.b = b
        self.acc_dtype = acc_dtype
        self.inputs = tuple(inputs)
        self.nodes = tuple(nodes)
        self.outputs = tuple(outputs)
        self.key = ("matmul", rank, a, b, acc_dtype, self.inputs, _keyed(self.nodes), self.outputs)
        self._hash = None


def describe(kernel):
    """A short human description: ``row(dim=1) reduce max, reduce sum, map -> 1 output``."""
    if kernel.kind == "matmul":
        ops = [n[2] for n in kernel.nodes if n[0] in ("unary", "binary")]
        return "matmul + epilogue(%s) -> %d output(s)" % (", ".join(ops) or "store", len(kernel.outputs))
    parts = ["reduce " + p.op if type(p) is Reduce else "map" for p in kernel.phases]
    where = "flat" if kernel.dim is None else "rows along dim %d" % kernel.dim
    return "%s: %s -> %d output(s)" % (where, ", ".join(parts), len(kernel.outputs))
