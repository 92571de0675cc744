"""Validation shared by the Cpu compilers: a kernel's structure, then each run's arguments.

Both run before any code touches memory, so a malformed kernel or a stride that would reach past an
input's storage raises an ``ember.errors`` exception instead of reading garbage (or, in C,
crashing). ``kernel_errors`` returns the problems as text for ``supports``; ``kernel`` raises them.
"""
from ember import dtypes
from ember.backend import BINARY_OPS, COMPARISONS, UNARY_OPS
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError

from . import ir

_TO_BOOL = ("isnan", "isinf", "logical_not")
_INT_ONLY = ("and", "or", "xor", "lshift", "rshift")
_FLOAT_ONLY_BINARY = ("div", "atan2")
_SAME_ON_INT = ("neg", "abs", "sign", "bitwise_not", "floor", "ceil", "round", "trunc")
_BOOL_BINARY = ("and", "or", "xor", "maximum", "minimum") + COMPARISONS


def _node_error(nodes, i, node, kernel):
    """What is wrong with ``nodes[i]`` (None when it is well formed)."""
    if type(node) is not tuple or len(node) < 2:
        return "expected a tuple (kind, dtype, ...), found %r" % (node,)
    kind, dtype = node[0], node[1]
    if dtype not in ir.DTYPES:
        return "dtype %r is not one of %s" % (dtype, ", ".join(ir.DTYPES))
    arity = {"load": 3, "const": 3, "unary": 4, "binary": 5, "where": 5, "cast": 3, "row": 3, "acc": 2}
    if arity.get(kind) != len(node):
        return "expected a known kind with its fields, found %r" % (node,)
    refs = {"unary": node[3:], "binary": node[3:], "where": node[2:], "cast": node[2:]}.get(kind, ())
    for r in refs:
        if type(r) is not int or not 0 <= r < i:
            return "refers to node %r, expected an earlier node (0..%d)" % (r, i - 1)
    if kind == "load":
        if type(node[2]) is not int or not 0 <= node[2] < len(kernel.inputs):
            return "loads input %r, expected 0..%d" % (node[2], len(kernel.inputs) - 1)
        if kernel.inputs[node[2]] != dtype:
            return "loads input %d of dtype %s as %s" % (node[2], kernel.inputs[node[2]], dtype)
    elif kind == "const":
        if type(node[2]) not in (bool, int, float):
            return "expected a Python bool/int/float value, found %r" % (node[2],)
    elif kind == "unary":
        return _unary_error(node[2], nodes[node[3]][1], dtype)
    elif kind == "binary":
        return _binary_error(node[2], nodes[node[3]][1], nodes[node[4]][1], dtype)
    elif kind == "where":
        c, x, y = (nodes[r][1] for r in node[2:])
        if c != "bool" or x != dtype or y != dtype:
            return "where expects (bool, %s, %s), found (%s, %s, %s)" % (dtype, dtype, c, x, y)
    elif kind == "row":
        phases = getattr(kernel, "phases", ())
        j = node[2]
        if type(j) is not int or not 0 <= j < len(phases) or type(phases[j]) is not ir.Reduce:
            return "reads phase %r, expected the index of a Reduce phase" % (j,)
        if phases[j].dtype != dtype:
            return "reads phase %d of dtype %s as %s" % (j, phases[j].dtype, dtype)
    elif kind == "acc":
        if kernel.kind != "matmul" or dtype != kernel.acc_dtype:
            return "acc is only in a MatmulKernel, with its acc_dtype"
    return None


def _unary_error(op, x, dtype):
    if op not in UNARY_OPS:
        return "unknown unary op %r" % (op,)
    want = "bool" if op in _TO_BOOL else x
    if x in ir.INTS + ("bool",) and op not in _SAME_ON_INT + _TO_BOOL:
        return "unary %s is float only, found %s" % (op, x)
    if x in ir.FLOATS and op == "bitwise_not":
        return "bitwise_not expects an integer or bool, found %s" % (x,)
    if x == "bool" and op not in ("bitwise_not", "logical_not", "isnan", "isinf", "floor", "ceil",
                                  "round", "trunc"):
        return "unary %s on bool: the frontend casts bool first" % (op,)
    if dtype != want:
        return "unary %s of %s gives %s, found %s" % (op, x, want, dtype)
    return None


def _binary_error(op, x, y, dtype):
    if op not in BINARY_OPS:
        return "unknown binary op %r" % (op,)
    if x != y:
        return "binary %s expects operands of one dtype, found %s and %s" % (op, x, y)
    want = "bool" if op in COMPARISONS else x
    if x in ir.FLOATS and op in _INT_ONLY:
        return "%s expects integers or bool, found %s" % (op, x)
    if x in ir.INTS and op in _FLOAT_ONLY_BINARY:
        return "%s expects floats, found %s" % (op, x)
    if x == "bool" and op not in _BOOL_BINARY:
        return "%s on bool: the frontend casts bool first" % (op,)
    if dtype != want:
        return "binary %s of %s gives %s, found %s" % (op, x, want, dtype)
    return None


def _phase_errors(kernel):
    errors = []
    phases = kernel.phases
    if kernel.dim is None and [type(p) for p in phases] != [ir.Map]:
        errors.append("a flat RowKernel (dim None) has exactly one Map phase")
    if kernel.dim is not None and not (type(kernel.dim) is int and 0 <= kernel.dim < kernel.rank):
        errors.append("dim %r is outside rank %d" % (kernel.dim, kernel.rank))
    for j, p in enumerate(phases):
        if type(p) is ir.Map and j != len(phases) - 1:
            errors.append("the Map phase must be last, found it at %d of %d" % (j, len(phases)))
        if type(p) is ir.Reduce:
            if p.op not in ir.REDUCE_OPS:
                errors.append("reduce op %r is not one of %s" % (p.op, ", ".join(ir.REDUCE_OPS)))
            elif not (type(p.node) is int and 0 <= p.node < len(kernel.nodes)):
                errors.append("phase %d reduces node %r, which does not exist" % (j, p.node))
            else:
                src = kernel.nodes[p.node][1]
                want = "int64" if src == "bool" and p.op in ("sum", "prod") else src
                if p.dtype != want:
                    errors.append("reduce %s of %s gives %s, found %s" % (p.op, src, want, p.dtype))
                elif src == "bool" and p.op in ("max", "min"):
                    errors.append("reduce %s of bool is not a primitive" % (p.op,))
    has_map = any(type(p) is ir.Map for p in phases)
    for node, per_row in kernel.outputs:
        if per_row and kernel.dim is None:
            errors.append("a per-row output needs a RowKernel with a dim")
        if not per_row and not has_map:
            errors.append("a map output needs a Map phase")
    return errors


def kernel_errors(kernel):
    """The problems of ``kernel`` as text (an empty list when it is well formed)."""
    kind = getattr(kernel, "kind", None)
    if kind not in ("row", "matmul"):
        return ["expected a RowKernel or MatmulKernel, found %r" % (type(kernel).__name__,)]
    errors = []
    for k, dtype in enumerate(kernel.inputs):
        if dtype not in ir.DTYPES:
            errors.append("input %d has dtype %r, not one of %s" % (k, dtype, ", ".join(ir.DTYPES)))
    nodes = kernel.nodes
    for i, node in enumerate(nodes):
        problem = _node_error(nodes, i, node, kernel)
        if problem is not None:
            errors.append("node %d: %s" % (i, problem))
    if errors:
        return errors
    if not kernel.outputs:
        errors.append("a kernel needs at least one output")
    for node, per_row in kernel.outputs:
        if type(node) is not int or not 0 <= node < len(nodes):
            errors.append("output node %r does not exist" % (node,))
    if kind == "row":
        errors += _phase_errors(kernel)
    else:
        errors += _matmul_errors(kernel)
    return errors


def _matmul_errors(kernel):
    errors = []
    if type(kernel.rank) is not int or kernel.rank < 2:
        errors.append("a MatmulKernel's rank is >= 2, found %r" % (kernel.rank,))
    for name in ("a", "b"):
        k = getattr(kernel, name)
        if type(k) is not int or not 0 <= k < len(kernel.inputs):
            errors.append("%s is input %r, which does not exist" % (name, k))
        elif kernel.inputs[k] != kernel.acc_dtype:
            errors.append("%s has dtype %s, expected acc_dtype %s" % (name, kernel.inputs[k], kernel.acc_dtype))
    if kernel.acc_dtype not in ir.FLOATS + ir.INTS:
        errors.append("matmul of %r is not a primitive" % (kernel.acc_dtype,))
    if any(per_row for _, per_row in kernel.outputs):
        errors.append("a MatmulKernel has no per-row outputs")
    for i, node in enumerate(kernel.nodes):
        if node[0] == "load" and node[2] in (kernel.a, kernel.b):
            errors.append("node %d loads a matmul operand; the epilogue reads it as acc" % (i,))
    return errors


def kernel(kernel):
    """Raise ``ArgumentError`` (``DTypeError`` for a dtype) naming what is wrong with ``kernel``."""
    errors = kernel_errors(kernel)
    if errors:
        cls = DTypeError if any("dtype" in e for e in errors) else ArgumentError
        raise cls("fusion kernel: " + "; ".join(errors))


def _reach(space, strides, offset):
    """The lowest and highest storage index that ``strides`` and ``offset`` address over ``space``."""
    lo = hi = offset
    for n, s in zip(space, strides):
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi


def run_args(kernel, space, inputs, size_of, dtype_of):
    """Check ``run``'s arguments: ``space`` a tuple of sizes of the kernel's rank (plus K for a
    matmul), one ``(array, strides, offset)`` per input whose dtype matches and whose addresses all
    fall inside its storage (``size_of(array)`` elements)."""
    if type(space) not in (tuple, list) or any(type(n) is not int or n < 0 for n in space):
        raise ArgumentTypeError("fusion run: expected space as a tuple of sizes >= 0, found %r" % (space,))
    rank = kernel.rank + (1 if kernel.kind == "matmul" else 0)
    if len(space) != rank:
        raise ShapeError("fusion run: expected a space of %d dims, found %r" % (rank, tuple(space)))
    if type(inputs) not in (tuple, list) or len(inputs) != len(kernel.inputs):
        raise ArgumentError("fusion run: expected %d inputs, found %s"
                            % (len(kernel.inputs), len(inputs) if type(inputs) in (tuple, list) else inputs))
    empty = any(n == 0 for n in space)
    for k, item in enumerate(inputs):
        if type(item) not in (tuple, list) or len(item) != 3:
            raise ArgumentTypeError("fusion run: input %d: expected (array, strides, offset), found %r" % (k, item))
        array, strides, offset = item
        found = dtype_of(array)
        if found != kernel.inputs[k]:
            raise DTypeError("fusion run: input %d: expected %s, found %s" % (k, kernel.inputs[k], found))
        if type(strides) not in (tuple, list) or len(strides) != kernel.rank or \
                any(type(s) is not int for s in strides) or type(offset) is not int:
            raise ShapeError("fusion run: input %d: expected %d int strides and an int offset, found %r, %r"
                             % (k, kernel.rank, strides, offset))
        if empty:
            continue
        lo, hi = _reach(_input_space(kernel, space, k), strides, offset)
        size = size_of(array)
        if lo < 0 or hi >= size:
            raise ArgumentError("fusion run: input %d: strides %r and offset %d address %d..%d, outside its "
                                "%d stored elements" % (k, tuple(strides), offset, lo, hi, size))


def _input_space(kernel, space, k):
    """The sizes input ``k``'s strides walk: the output space, or (..., M, K) / (..., K, N)."""
    if kernel.kind != "matmul":
        return space
    m, n, kk = space[-3], space[-2], space[-1]
    batch = tuple(space[:-3])
    if k == kernel.a:
        return batch + (m, kk)
    if k == kernel.b:
        return batch + (kk, n)
    return batch + (m, n)


def dtype_name(dtype):
    return dtype.name if isinstance(dtype, dtypes.DType) else str(dtype)
