"""gather and scatter along one dim (Wgpu device methods), with device-side index checks.

A GPU cannot raise, so an out-of-range index is recorded in a small error buffer (the value and
the dim's size) and ``IndexOutOfRange`` is raised at the next read, the first point where the
host waits for the GPU anyway (docs/gpu.md, "Errors").

scatter: one thread per index "column" (all coordinates but ``dim``) walks its index entries in
order, so repeated positions see the last write (``set``) or every addition in order (``add``).
Float additions accumulate in f64 and round once, as the Cpu backend adds in double.
"""
import struct

from ember import dtypes
from ember.errors import IndexOutOfRange

from . import codegen, ops
from .arrays import contiguous_strides, numel


class ErrorRecord:
    """A small device buffer, one per runtime: [flag, op, index low, index high, size, dim].
    Kernels that check indices write it; the runtime reads it back with the next read."""

    nbytes = 32

    def __init__(self, dev):
        self.dev = dev
        self.block = dev.mem.alloc(self.nbytes)

    def arm(self):
        self.dev.rt.error_check = self

    def check(self, data):
        flag, op, lo, hi, size, dim = struct.unpack("<6I", data[:24])
        if flag:
            dev = self.dev
            dev.rt.write(self.block.buffer, self.block.offset, bytes(self.nbytes))
            value = lo | (hi << 32)
            if value >= 1 << 63:
                value -= 1 << 64
            name = "gather" if op == 1 else "scatter"
            raise IndexOutOfRange("%s: index %d is out of range for dim %d of size %d (found by the GPU; "
                                  "raised at the first read after it)" % (name, value, dim, size))


def _errors(dev):
    err = dev.rt.__dict__.get("index_errors")
    if err is None:
        err = dev.rt.index_errors = ErrorRecord(dev)
        dev.rt.write(err.block.buffer, err.block.offset, bytes(ErrorRecord.nbytes))
    return err


_REPORT = ("fn report(op: u32, v: i64, size: u32, dim: u32) {\n"
           "  b_err[1] = op; b_err[2] = u32(bitcast<u64>(v) & 0xfffffffflu); b_err[3] = u32(bitcast<u64>(v) >> 32u);\n"
           "  b_err[4] = size; b_err[5] = dim; b_err[0] = 1u;\n}\n")


def _report_fn(ist):
    if ist == "i64":
        return _REPORT
    return _REPORT.replace("v: i64", "v32: i32").replace("b_err[1] = op;", "let v = i64(v32); b_err[1] = op;")


def _with_err_binding(src, nbind):
    """Rename the last binding to b_err (the error buffer, u32)."""
    return src.replace("var<storage, read_write> b%d: array<u32>;" % nbind,
                       "var<storage, read_write> b_err: array<u32>;")


def gather(self, x, dim, index):
    """The primitive ``gather``; an out-of-range index is recorded on the GPU and raised at the next read."""
    out = self._alloc(index.shape, x.dtype)
    if numel(index.shape) == 0:
        return out
    err = _errors(self)
    st = self.storage[x.dtype].wgsl
    ist = self.storage[dtypes.int64].wgsl
    strides, _ = x.layout()
    xspec = self._spec(x, strides[:dim] + (0,) + strides[dim + 1:])
    body = ("  let j = b1[u32(o1)];\n"
            "  if (j < %s(0) || j >= %s(pw(49u))) { report(1u, %s, pw(49u), pw(50u)); return; }\n"
            "  b2[u32(o2)] = b0[u32(o0 + i32(j) * pi(48u))];\n" % (ist, ist, "j" if ist == "i64" else "i32(j)"))

    def build():
        src = codegen.strided_source([st, ist, st, "u32"], 3, body, (), st == "f16", _report_fn(ist))
        return _with_err_binding(src, 3)
    self._launch(("gather", st), build, [xspec, self._spec(index), self._spec(out)], index.shape,
                 (strides[dim], x.shape[dim], dim),
                 buffers=[x.block.buffer, index.block.buffer, out.block.buffer, err.block.buffer])
    err.arm()
    return out


def scatter(self, x, dim, index, src, mode):
    """The primitive ``scatter`` ('set': the last write wins; 'add': in index order); faults raise at the next read."""
    dtype = x.dtype
    err = _errors(self)
    st = self.storage[dtype].wgsl
    ist = self.storage[dtypes.int64].wgsl
    accumulate = mode == "add" and dtype.kind == "f" and st != "f64" and self.rt.has_f64
    # the array the additions land in: x's values, in f64 when they must round once at the end
    acc = self.cast(x, dtypes.float64) if accumulate else self._copy_into(x, self._alloc(x.shape, dtype))
    if numel(index.shape) == 0:
        return self.cast(acc, dtype) if accumulate else acc
    ast = self.storage[acc.dtype].wgsl
    length = index.shape[dim]
    columns = index.shape[:dim] + (1,) + index.shape[dim + 1:]
    istrides, _ = index.layout()
    sstrides, _ = src.layout()
    astrides = contiguous_strides(x.shape)
    specs = [self._spec(index, istrides[:dim] + (0,) + istrides[dim + 1:]),
             self._spec(src, sstrides[:dim] + (0,) + sstrides[dim + 1:]),
             (acc.block.buffer, astrides[:dim] + (0,) + astrides[dim + 1:], self._base(acc))]
    if mode == "set":
        write = "b2[p] = %s;" % ops.load(st, ast).format("b1[u32(o1 + i32(t) * pi(49u))]")
    elif dtype.kind == "b":
        write = "b2[p] = b2[p] | b1[u32(o1 + i32(t) * pi(49u))];"
    else:
        store, _ = ops.store(ast, acc.dtype, ast)
        write = "b2[p] = %s;" % store.format("b2[p] + %s" % ops.load(st, ast).format("b1[u32(o1 + i32(t) * pi(49u))]"))
        if dtype is dtypes.int8:
            write = "b2[p] = wrap8(b2[p] + b1[u32(o1 + i32(t) * pi(49u))]);"
        elif dtype is dtypes.uint8:
            write = "b2[p] = wrapu8(b2[p] + b1[u32(o1 + i32(t) * pi(49u))]);"
    jv = "j" if ist == "i64" else "i32(j)"
    body = ("  for (var t = 0u; t < pw(48u); t = t + 1u) {\n"
            "    let j = b0[u32(o0 + i32(t) * pi(50u))];\n"
            "    if (j < %s(0) || j >= %s(pw(52u))) { report(2u, %s, pw(52u), pw(53u)); return; }\n"
            "    let p = u32(o2 + i32(j) * pi(51u));\n    %s\n  }\n" % (ist, ist, jv, write))
    libs = ("wrap8",) if dtype is dtypes.int8 else ("wrapu8",) if dtype is dtypes.uint8 else ()

    def build():
        f16 = "f16" in (st, ast)
        src_ = codegen.strided_source([ist, st, ast, "u32"], 3, body, libs, f16, _report_fn(ist))
        return _with_err_binding(src_, 3)
    self._launch(("scatter", mode, dtype.name, ast), build, specs, columns,
                 (length, sstrides[dim], istrides[dim], astrides[dim], x.shape[dim], dim),
                 buffers=[index.block.buffer, src.block.buffer, acc.block.buffer, err.block.buffer])
    err.arm()
    if accumulate:
        return self.cast(acc, dtype)
    return acc
