"""A numpy implementation of the fused-kernel contract (accel/fusion/ir.py) over the pure Cpu's
arrays: an independent oracle for the scheduler's tests (it shares no code with the compilers)."""
import math

import numpy as np

import ember
from ember.accel.fusion import ir

_NP = {"float32": np.float32, "float64": np.float64, "int8": np.int8, "int32": np.int32,
       "int64": np.int64, "bool": np.bool_}
_UNARY = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
          "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "rsqrt": lambda v: 1 / np.sqrt(v),
          "erf": np.vectorize(math.erf, otypes=[np.float64]), "reciprocal": lambda v: 1 / v,
          "logical_not": np.logical_not, "sin": np.sin, "cos": np.cos}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
           "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal, "ne": np.not_equal,
           "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


class Oracle:
    def __init__(self, device):
        self.device = device
        self.runs = []

    def layout(self, a):
        return a.layout()

    def supports(self, kernel):
        return all(n[0] != "unary" or n[2] in _UNARY for n in kernel.nodes) and \
            all(n[0] != "binary" or n[3 - 1] in _BINARY for n in kernel.nodes)

    def source(self, kernel):
        return repr(kernel.key)

    def _view(self, array, strides, offset, dtype, shape):
        data = np.asarray(list(array.data) if type(array.data) is list else np.frombuffer(array.data, _NP[dtype]),
                          dtype=_NP[dtype])
        item = data.itemsize
        return np.lib.stride_tricks.as_strided(data[offset:], shape, [s * item for s in strides])

    def run(self, kernel, space, inputs):
        self.runs.append(kernel)
        if kernel.kind == "matmul":
            shape = space[:-1]
            a_arr, a_st, a_off = inputs[kernel.a]
            b_arr, b_st, b_off = inputs[kernel.b]
            k = space[-1]
            a = self._view(a_arr, a_st, a_off, kernel.inputs[kernel.a], shape[:-1] + (k,))
            b = self._view(b_arr, b_st, b_off, kernel.inputs[kernel.b], shape[:-2] + (k, shape[-1]))
            acc = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(_NP[kernel.acc_dtype])
            vals = self._eval(kernel, shape, inputs, {}, acc)
            return [self._out(vals[i], n_dtype(kernel, i)) for i, _ in kernel.outputs]
        rows = {}
        for j, p in enumerate(kernel.phases):
            if type(p) is ir.Reduce:
                vals = self._eval(kernel, space, inputs, rows, None)
                rows[j] = _REDUCE[p.op](vals[p.node], axis=kernel.dim, keepdims=True).astype(_NP[p.dtype])
        vals = self._eval(kernel, space, inputs, rows, None)
        out = []
        for i, per_row in kernel.outputs:
            v = vals[i]
            if per_row:
                v = np.take(np.broadcast_to(v, space), [0], axis=kernel.dim)
            out.append(self._out(np.broadcast_to(v, space) if not per_row else v, n_dtype(kernel, i)))
        return out

    def _eval(self, kernel, space, inputs, rows, acc):
        with np.errstate(all="ignore"):
            return self._eval_nodes(kernel, space, inputs, rows, acc)

    def _eval_nodes(self, kernel, space, inputs, rows, acc):
        vals = []
        for n in kernel.nodes:
            kind, dtype = n[0], _NP[n[1]]
            if kind == "load":
                arr, st, off = inputs[n[2]]
                v = self._view(arr, st, off, kernel.inputs[n[2]], space)
            elif kind == "const":
                v = np.array(n[2], dtype=dtype)
            elif kind == "unary":
                v = _UNARY[n[2]](vals[n[3]])
            elif kind == "binary":
                v = _BINARY[n[2]](vals[n[3]], vals[n[4]])
            elif kind == "where":
                v = np.where(vals[n[2]], vals[n[3]], vals[n[4]])
            elif kind == "cast":
                v = vals[n[2]]
            elif kind == "row":
                v = rows.get(n[2], np.zeros((), dtype))
            elif kind == "acc":
                v = acc
            vals.append(np.asarray(v).astype(dtype))
        return vals

    def _out(self, v, dtype):
        v = np.ascontiguousarray(v)
        return self.device.from_list(v.ravel().tolist(), v.shape, ember.dtypes.get(dtype, "oracle"))


def n_dtype(kernel, i):
    return kernel.nodes[i][1]
