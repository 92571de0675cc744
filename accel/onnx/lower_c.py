"""A specialised replay's calls on the C-backed Cpu, float32, as C kernel calls.

``fuse.py`` rewrites a replay onto view programs, ``F.linear``, ``F.layer_norm``, ``F.gelu`` and
``F.scaled_dot_product_attention``; through the frontend each view step costs a few microseconds of
Python, each fused composite its checks, the attention composite seven ops. On the C-backed Cpu
these calls (and the replay's plain elementwise ops) run here instead, with everything that depends
only on the shapes and layouts of their inputs worked out once per layout (a replay sees the same
ones every call):

- a movement program becomes the view it ends as (shape, strides, offset of its source's
  buffer), with one ``emb_copy_nd`` where a reshape cannot be a view;
- the attention ``softmax(q·kᵀ·scale)·v`` becomes two ``emb_matmul`` calls reading q, k and v
  where they lie (strided), the scaling and ``emb_softmax_f32``;
- a Gather of an int64 index, ``emb_copy_nd`` spreading the index then ``emb_gather``;
- Linear/Gemm, LayerNormalization, GELU, Tanh and the like, Add/Sub/Mul (broadcast, strided):
  the one kernel call each that the frontend's fused path or primitive makes.

Each runs the kernels the call it replaces runs, in its order, so the values are the same bit for
bit. Anything else (another device or dtype, a list-backed array, a rank the kernels do not take,
a non-dense input where the kernel wants a dense one, a mask, a bad index) runs that call
(``generic``, kept on each as ``.generic``: a step capture records those, see graph.Replay).
"""
from array import array

from ember.backends.cpu import ckernels
from ember.backends.cpu.array import CpuArray
from ember.backends.cpu.cdevice import CpuC
from ember.backends.cpu.cstorage import MAXDIM, threads
from ember.backends.cpu.pool import fresh
from ember.tensor import Tensor
import ember

from .fuse import _NARROW, _PERMUTE, _dense as dense, _numel, _view_strides

PLANS = 16  # layouts a call keeps plans for: a replay's inputs have the same ones every call


def applies(device):
    """Whether calls on ``device`` run here: the C-backed Cpu with its kernels loaded."""
    return type(device) is CpuC and ckernels.native()[0] is not None


def _is_dense(shape, strides):
    """Whether ``strides`` are row-major for ``shape`` (a size-1 dim's stride never matters)."""
    return all(s == t for n, s, t in zip(shape, strides, dense(shape)) if n != 1)


def _keep(plans, key, plan):
    """``plans[key] = plan``, the table started afresh when it holds ``PLANS`` layouts already."""
    if len(plans) >= PLANS:
        plans.clear()
    plans[key] = plan
    return plan


def _layout(shape, strides, offset, steps):
    """(copies, shape, strides, offset) of ``steps`` from the strided ``shape``: each copy is
    (shape, strides, offset) of a strided read written out dense, the result a view of the last
    buffer; None where a copy has more dims than the kernels take."""
    copies = []
    for st in steps:
        if st[0] == _PERMUTE:
            shape, strides = tuple(shape[d] for d in st[1]), tuple(strides[d] for d in st[1])
        elif st[0] == _NARROW:
            offset += st[2] * strides[st[1]]
            shape = shape[:st[1]] + (st[3],) + shape[st[1] + 1:]
        else:
            new = tuple(st[1])
            got = _view_strides(shape, strides, new) if _numel(shape) else None
            if got is None:
                if len(shape) > MAXDIM or not _numel(shape):
                    return None
                copies.append((shape, strides, offset))
                got, offset = dense(new), 0
            shape, strides = new, got
    return copies, shape, strides, offset


def movement(steps, generic):
    """The call running the view program ``steps`` (fuse.py's) on a tensor of the C Cpu: its
    result's layout worked out once per source layout; ``generic(node, x)`` where that does not apply."""
    lib = ckernels.native()[0]
    copy_nd = lib.emb_copy_nd
    plans = {}

    def plan(d, size):
        shape = d.shape
        strides = d.strides if d.strides is not None else dense(shape)
        got = _layout(tuple(shape), tuple(strides), d.offset, steps)
        if got is None:
            return False
        copies, out_shape, out_strides, out_offset = got
        prepared = []
        for cs, cst, coff in copies:  # the int64 arrays C reads, made once and kept with the plan
            prepared.append((_numel(cs), len(cs), array("q", cs), array("q", cst), coff, array("q", dense(cs))))
        size = _numel(copies[-1][0]) if copies else size  # the length of the buffer the result views
        implicit = out_offset == 0 and size == _numel(out_shape) and _is_dense(out_shape, out_strides)
        return tuple(prepared), out_shape, None if implicit else out_strides, 0 if implicit else out_offset

    def _movement(node, x):
        d = x._data
        buf = d.data if type(d) is CpuArray else None
        if type(buf) is not array or type(x.device) is not CpuC:
            return generic(node, x)
        key = (d.shape, d.strides, d.offset, len(buf))
        p = plans.get(key)
        if p is None:
            p = _keep(plans, key, plan(d, len(buf)))
        if p is False:
            return generic(node, x)
        copies, shape, strides, offset = p
        size = buf.itemsize
        for n, nd, sh, st, off, dst in copies:
            out = fresh(buf.typecode, n)
            copy_nd(size, nd, sh.buffer_info()[0], buf.buffer_info()[0] + off * size, st.buffer_info()[0],
                    out.buffer_info()[0], dst.buffer_info()[0])
            buf = out
        return Tensor(CpuArray(buf, shape, d.dtype, strides, offset), shape, x.dtype, x.device)
    _movement.steps = steps  # what the tests read
    _movement.generic = generic
    return _movement


def attention(scale, generic):
    """The call running ``softmax(q·kᵀ·scale)·v`` over (..., L, E) float32 tensors of the C Cpu
    (the composite's kernels, reading q, k, v where they lie); ``generic(node, q, k, v)`` elsewhere."""
    lib = ckernels.native()[0]
    matmul, binary1, softmax = lib.emb_matmul, lib.emb_binary1, lib.emb_softmax_f32
    F32, MUL = lib.EMB_F32, lib.EMB_B_MUL
    factor = array("f", (scale,))  # what ``scores * scale`` multiplies by: the scale as a float32
    f32 = ember.float32
    plans = {}

    def plan(a, b, c):
        batch, (L, E), (S, Ek), (Sv, Ev) = a.shape[:-2], a.shape[-2:], b.shape[-2:], c.shape[-2:]
        nb = len(batch)
        if b.shape[:-2] != batch or c.shape[:-2] != batch or E != Ek or S != Sv or nb + 2 > MAXDIM \
                or not (L and S and E and Ev) or not _numel(batch):
            return False
        sa, sb, sc = (x.strides if x.strides is not None else dense(x.shape) for x in (a, b, c))
        rows = _numel(batch) * L
        return (nb, array("q", batch), array("q", sa[:nb]), array("q", sb[:nb]), array("q", dense(batch + (L, S))[:nb]),
                array("q", sc[:nb]), L, S, E, Ev, sa[nb:], sb[nb:], sc[nb:], rows, batch + (L, Ev))

    def _attention(node, q, k, v):
        a, b, c = q._data, k._data, v._data
        if q.dtype is not f32 or k.dtype is not f32 or v.dtype is not f32 or type(q.device) is not CpuC \
                or _other(k.device, q.device) or _other(v.device, q.device) or type(a) is not CpuArray \
                or type(b) is not CpuArray or type(c) is not CpuArray or type(a.data) is not array \
                or type(b.data) is not array or type(c.data) is not array:
            return generic(node, q, k, v)
        key = (a.shape, a.strides, b.shape, b.strides, c.shape, c.strides)
        p = plans.get(key)
        if p is None:
            p = _keep(plans, key, plan(a, b, c))
        if p is False:
            return generic(node, q, k, v)
        nb, bs, sqa, ska, spa, sva, L, S, E, Ev, (qr, qc), (kr, kc), (vr, vc), rows, shape = p
        nt = threads()
        n = rows * S
        scores = fresh("f", n)
        scaled = fresh("f", n)
        weights = fresh("f", n)
        out = fresh("f", rows * Ev)
        bsa = bs.buffer_info()[0]
        if matmul(F32, nb, bsa, sqa.buffer_info()[0], ska.buffer_info()[0], L, S, E,
                  a.data.buffer_info()[0] + 4 * a.offset, qr, qc, b.data.buffer_info()[0] + 4 * b.offset, kc, kr,
                  scores.buffer_info()[0], 0, nt) < 0:
            raise MemoryError("scaled_dot_product_attention: the C kernels could not allocate their workspace")
        binary1(MUL, F32, n, scores.buffer_info()[0], 1, factor.buffer_info()[0], 0, scaled.buffer_info()[0])
        softmax(rows, S, scaled.buffer_info()[0], weights.buffer_info()[0], 0, nt)
        if matmul(F32, nb, bsa, spa.buffer_info()[0], sva.buffer_info()[0], L, Ev, S, weights.buffer_info()[0], S,
                  1, c.data.buffer_info()[0] + 4 * c.offset, vr, vc, out.buffer_info()[0], 0, nt) < 0:
            raise MemoryError("scaled_dot_product_attention: the C kernels could not allocate their workspace")
        return Tensor(CpuArray(out, shape, f32), shape, f32, q.device)
    _attention.generic = generic
    return _attention


def gather(axis, generic):
    """The call running an ONNX Gather of an int64 index along ``axis`` on the C Cpu: the index
    spread over the output's shape (``emb_copy_nd``) and ``emb_gather``; ``generic(node, x, idx)``
    elsewhere, and where an index is outside [0, d) (negatives wrap there, others raise)."""
    lib = ckernels.native()[0]
    copy_nd, gather_ = lib.emb_copy_nd, lib.emb_gather
    i64 = ember.int64
    plans = {}

    def plan(d, e):
        lead, rest = d.shape[:axis], d.shape[axis + 1:]
        n = _numel(e.shape)
        spread = lead + (n,) + rest
        if len(spread) > MAXDIM or not _numel(spread):
            return False
        strides = d.strides if d.strides is not None else dense(d.shape)
        picks = (0,) * len(lead) + (1,) + (0,) * len(rest)  # each index value read along its row
        return (len(spread), _numel(spread), array("q", spread), array("q", picks), array("q", dense(spread)),
                array("q", strides), d.offset, d.shape[axis], lead + tuple(e.shape) + rest)

    def _gather(node, x, idx):
        d, e = x._data, idx._data
        if idx.dtype is not i64 or type(d) is not CpuArray or type(e) is not CpuArray or e.strides is not None \
                or type(d.data) is not array or type(e.data) is not array or type(x.device) is not CpuC \
                or not 0 <= axis < len(d.shape):
            return generic(node, x, idx)
        key = (d.shape, d.strides, d.offset, e.shape)
        p = plans.get(key)
        if p is None:
            p = _keep(plans, key, plan(d, e))
        if p is False:
            return generic(node, x, idx)
        nd, n, spread, picks, out_strides, strides, offset, size, shape = p
        full = fresh("q", n)
        copy_nd(8, nd, spread.buffer_info()[0], e.data.buffer_info()[0], picks.buffer_info()[0], full.buffer_info()[0],
                out_strides.buffer_info()[0])
        buf = d.data
        out = fresh(buf.typecode, n)
        if gather_(buf.itemsize, nd, spread.buffer_info()[0], full.buffer_info()[0],
                   buf.buffer_info()[0] + offset * buf.itemsize, strides.buffer_info()[0], axis, size,
                   out.buffer_info()[0]) >= 0:
            return generic(node, x, idx)
        return Tensor(CpuArray(out, shape, d.dtype), shape, x.dtype, x.device)
    _gather.generic = generic
    return _gather


def _f32_array(t, f32):
    """``t``'s CpuArray where ``t`` is a float32 tensor of the C Cpu held in an array, else None."""
    d = t._data
    if t.dtype is f32 and type(d) is CpuArray and type(d.data) is array and type(t.device) is CpuC:
        return d
    return None


def _other(a, b):
    """Whether devices ``a`` and ``b`` differ (the same object, the common case, without ``key()``)."""
    return a is not b and a != b


def _at(d):
    return d.data.buffer_info()[0] + 4 * d.offset


def linear(transposed, generic):
    """The call running ``x·W + b`` (``transposed``: W given as (out, in), a torch Linear's Gemm;
    else (in, out), MatMul then Add) for a dense float32 ``x`` and a 1-d ``b`` on the C Cpu: the bias
    rows and one accumulating ``emb_matmul``, as ``F.linear``'s fused path; ``generic(node, x, w, b)``
    elsewhere."""
    lib = ckernels.native()[0]
    matmul, bias_rows, F32 = lib.emb_matmul, lib.emb_bias_rows_f32, lib.EMB_F32
    f32 = ember.float32

    def _linear(node, x, w, b):
        xd, wd, bd = _f32_array(x, f32), _f32_array(w, f32), _f32_array(b, f32)
        if xd is None or wd is None or bd is None or xd.strides is not None or bd.strides is not None \
                or len(wd.shape) != 2 or len(bd.shape) != 1 or not xd.shape or _other(w.device, x.device) \
                or _other(b.device, x.device):
            return generic(node, x, w, b)
        outf, inf = wd.shape if transposed else wd.shape[::-1]
        if xd.shape[-1] != inf or bd.shape[0] != outf or not inf or not outf:
            return generic(node, x, w, b)
        ws = wd.strides if wd.strides is not None else (wd.shape[1], 1)
        rs, cs = (ws[1], ws[0]) if transposed else ws  # how W·[k, j] steps along k and along j
        rows = len(xd.data) // inf
        shape = xd.shape[:-1] + (outf,)
        out = fresh("f", rows * outf)
        if rows:
            bias_rows(rows, outf, bd.data.buffer_info()[0], out.buffer_info()[0])
            if matmul(F32, 0, 0, 0, 0, rows, outf, inf, xd.data.buffer_info()[0], inf, 1, _at(wd), rs, cs,
                      out.buffer_info()[0], 1, threads()) < 0:
                raise MemoryError("linear: the C kernels could not allocate their workspace")
        return Tensor(CpuArray(out, shape, f32), shape, f32, x.device)
    _linear.generic = generic
    return _linear


def layer_norm(n, eps, generic):
    """The call running a LayerNormalization over the last dims (``n`` values each) of a dense
    float32 tensor, with a dense weight and bias, on the C Cpu (``emb_layer_norm_f32``, as
    ``F.layer_norm``'s fused path); ``generic(node, x, weight, bias)`` elsewhere."""
    lib = ckernels.native()[0]
    norm = lib.emb_layer_norm_f32
    f32 = ember.float32
    eps = float(eps)

    def _layer_norm(node, x, weight, bias=None):
        xd, wd = _f32_array(x, f32), _f32_array(weight, f32)
        bd = _f32_array(bias, f32) if bias is not None else None
        if xd is None or wd is None or bd is None or xd.strides is not None or wd.strides is not None \
                or bd.strides is not None or len(wd.data) != n or len(bd.data) != n or not len(xd.data) \
                or len(xd.data) % n or _other(weight.device, x.device) or _other(bias.device, x.device):
            return generic(node, x, weight, bias)
        out = fresh("f", len(xd.data))
        norm(len(xd.data) // n, n, xd.data.buffer_info()[0], wd.data.buffer_info()[0], bd.data.buffer_info()[0],
             eps, out.buffer_info()[0], threads())
        return Tensor(CpuArray(out, xd.shape, f32), x.shape, f32, x.device)
    _layer_norm.generic = generic
    return _layer_norm


def gelu(generic):
    """The call running the erf GELU of a dense float32 tensor on the C Cpu (``emb_gelu_f32``, as
    ``F.gelu``'s fused path); ``generic(node, x)`` elsewhere."""
    lib = ckernels.native()[0]
    gelu_, form = lib.emb_gelu_f32, lib.EMB_GELU_ERF
    f32 = ember.float32

    def _gelu(node, x):
        xd = _f32_array(x, f32)
        if xd is None or xd.strides is not None:
            return generic(node, x)
        n = len(xd.data)
        out = fresh("f", n)
        gelu_(form, n, xd.data.buffer_info()[0], out.buffer_info()[0], threads())
        return Tensor(CpuArray(out, xd.shape, f32), x.shape, f32, x.device)
    _gelu.generic = generic
    return _gelu


UNARY = {"Tanh": "EMB_U_TANH", "Sigmoid": "EMB_U_SIGMOID", "Exp": "EMB_U_EXP", "Abs": "EMB_U_ABS",
         "Neg": "EMB_U_NEG", "Sqrt": "EMB_U_SQRT"}
BINARY = {"Add": "EMB_B_ADD", "Sub": "EMB_B_SUB", "Mul": "EMB_B_MUL"}


def unary(op, generic):
    """The call running the ONNX elementwise ``op`` (one of ``UNARY``) on a dense float32 tensor of
    the C Cpu (``emb_unary``); ``generic(node, x)`` elsewhere."""
    lib = ckernels.native()[0]
    unary_, opc, F32 = lib.emb_unary, getattr(lib, UNARY[op]), lib.EMB_F32
    f32 = ember.float32

    def _unary(node, x):
        xd = _f32_array(x, f32)
        if xd is None or xd.strides is not None:
            return generic(node, x)
        n = len(xd.data)
        out = fresh("f", n)
        if unary_(opc, F32, n, xd.data.buffer_info()[0], out.buffer_info()[0], threads()) < 0:
            return generic(node, x)
        return Tensor(CpuArray(out, xd.shape, f32), x.shape, f32, x.device)
    _unary.generic = generic
    return _unary


def binary(op, generic):
    """The call running the ONNX ``op`` (one of ``BINARY``) on two float32 tensors of the C Cpu, their
    shapes broadcast, read where they lie (``emb_binary`` with strides worked out once per pair of
    layouts); ``generic(node, a, b)`` elsewhere."""
    lib = ckernels.native()[0]
    binary_, opc, F32 = lib.emb_binary, getattr(lib, BINARY[op]), lib.EMB_F32
    f32 = ember.float32
    plans = {}

    def plan(da, db):
        nd = max(len(da.shape), len(db.shape))
        if nd > MAXDIM:
            return False
        sa, sb = ((1,) * (nd - len(d.shape)) + tuple(d.shape) for d in (da, db))
        shape = []
        for m, k in zip(sa, sb):
            if m != k and m != 1 and k != 1:
                return False
            shape.append(max(m, k) if m and k else 0)
        if not _numel(shape):
            return False
        steps = []
        for d, s in ((da, sa), (db, sb)):
            st = (0,) * (nd - len(d.shape)) + tuple(d.strides if d.strides is not None else dense(d.shape))
            steps.append(array("q", (0 if n == 1 and m != 1 else t for n, m, t in zip(s, shape, st))))
        shape = tuple(shape)
        return nd, array("q", shape), steps[0], steps[1], _numel(shape), shape

    def _binary(node, a, b):
        da, db = _f32_array(a, f32), _f32_array(b, f32)
        if da is None or db is None or _other(a.device, b.device):
            return generic(node, a, b)
        key = (da.shape, da.strides, db.shape, db.strides)
        p = plans.get(key)
        if p is None:
            p = _keep(plans, key, plan(da, db))
        if p is False:
            return generic(node, a, b)
        nd, sh, sa, sb, n, shape = p
        out = fresh("f", n)
        if binary_(opc, F32, nd, sh.buffer_info()[0], _at(da), sa.buffer_info()[0], _at(db), sb.buffer_info()[0],
                   out.buffer_info()[0]) < 0:
            return generic(node, a, b)
        return Tensor(CpuArray(out, shape, f32), shape, f32, a.device)
    _binary.generic = generic
    return _binary
