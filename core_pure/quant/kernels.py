"""int8 x int8 -> int32 products of quantized layers: the C kernels (``ext_c/quant.c``) on the
C-backed Cpu, else a composite of ember's primitives that every device runs.

The composite casts to int32 and uses the int32 ``matmul`` primitive, which sums exactly in int32 on
every backend (the pure Cpu sums Python ints, which stay small ints on MicroPython: |sum| <
127 * 127 * fan-in). Conv is im2col (slices of the zero-padded input) into the same matmul. Both
paths give the same integers; ``tests/accel/test_quant_c.py`` checks it.

>>> acc = int8_linear(q_x, q_w)      # q_x int8 (..., k), q_w int8 (out, k) -> int32 (..., out)
"""
from .. import dtypes
from ..creation import zeros
from ..errors import DTypeError, ShapeError
from ..movement import cat, stack
from ..shapes import conv_out_size
from ..tensor import Tensor

i8, i32 = dtypes.int8, dtypes.int32

_native = []  # [(lib, ffi)] once looked up; (None, None) without the C kernels


def _c(device):
    """(lib, ffi) when ``device`` is the C-backed Cpu and the module has the int8 kernels."""
    if getattr(device, "kernels", None) != "c":
        return None, None
    if not _native:
        from ..backends.cpu import ckernels
        lib, ffi = ckernels.native()
        # a module built before quant.c existed lacks them: the composite serves
        _native.append((lib, ffi) if lib is not None and hasattr(lib, "emb_q8_gemm") else (None, None))
    return _native[0]


def _work(ffi, nbytes):
    """The int16 workspace a kernel asks for (its operands widened)."""
    return ffi.from_buffer("int16_t[]", bytearray(max(2, nbytes)))


def _from_int32(buf, shape, device):
    return Tensor(device.from_bytes(buf, shape, i32), shape, i32, device)


def _int8(op, q_x, q_w, ndims):
    for name, t, nd in (("input", q_x, ndims[0]), ("weight", q_w, ndims[1])):
        if type(t) is not Tensor or t.dtype is not i8:
            raise DTypeError("%s: expected an int8 %s tensor, found %s"
                             % (op, name, t.dtype.name if type(t) is Tensor else type(t).__name__))
        if nd is not None and len(t.shape) != nd:
            raise ShapeError("%s: expected a %d-dim %s, found shape %s" % (op, nd, name, t.shape))


def int8_linear(q_x, q_w):
    """int32 sums ``q_x @ q_w.T``: ``q_x`` int8 ``(..., k)``, ``q_w`` int8 ``(out, k)``."""
    _int8("int8_linear", q_x, q_w, (None, 2))
    if not q_x.shape or q_x.shape[-1] != q_w.shape[1]:
        raise ShapeError("int8_linear: expected input of shape (..., %d), found %s" % (q_w.shape[1], q_x.shape))
    k = q_w.shape[1]
    rows = q_x.reshape(-1, k)
    out_shape = q_x.shape[:-1] + (q_w.shape[0],)
    lib, ffi = _c(q_x.device)
    if lib is None:
        return (rows.to(i32) @ q_w.to(i32).T).reshape(out_shape)
    m, n = rows.shape[0], q_w.shape[0]
    acc = bytearray(4 * m * n)
    if m and n:
        lib.emb_q8_gemm(m, n, k, ffi.from_buffer("int8_t[]", rows.to_bytes()),
                        ffi.from_buffer("int8_t[]", q_w.to_bytes()), ffi.from_buffer("int32_t[]", acc),
                        _work(ffi, lib.emb_q8_gemm_work(m, n, k)))
    return _from_int32(acc, out_shape, q_x.device)


def int8_conv2d(q_x, q_w, stride, pads, dilation, groups):
    """int32 sums of conv2d: ``q_x`` int8 ``(N, C, H, W)``, ``q_w`` int8 ``(O, C/groups, KH, KW)``;
    ``stride``, ``dilation`` pairs, ``pads`` ``((top, bottom), (left, right))``; zero padding."""
    _int8("int8_conv2d", q_x, q_w, (4, 4))
    n, c, h, w = q_x.shape
    o, cg, kh, kw = q_w.shape
    if groups < 1 or o % groups or cg * groups != c:
        raise ShapeError("int8_conv2d: weight %s with groups=%d does not fit input %s" % (q_w.shape, groups, q_x.shape))
    oh = conv_out_size(h, kh, stride[0], pads[0], dilation[0])
    ow = conv_out_size(w, kw, stride[1], pads[1], dilation[1])
    if oh < 1 or ow < 1:
        raise ShapeError("int8_conv2d: input %s (padded %s) is smaller than the dilated kernel %s"
                         % (q_x.shape, pads, q_w.shape[2:]))
    lib, ffi = _c(q_x.device)
    if lib is None:
        return _conv_composite(q_x, q_w, stride, pads, dilation, groups, oh, ow)
    params = ffi.new("int64_t[]", [n, c, h, w, o, kh, kw, stride[0], stride[1], pads[0][0], pads[0][1],
                                   pads[1][0], pads[1][1], dilation[0], dilation[1], groups, oh, ow])
    acc = bytearray(4 * n * o * oh * ow)
    if len(acc):
        lib.emb_q8_conv2d(params, ffi.from_buffer("int8_t[]", q_x.to_bytes()),
                          ffi.from_buffer("int8_t[]", q_w.to_bytes()), ffi.from_buffer("int32_t[]", acc),
                          _work(ffi, lib.emb_q8_conv2d_work(params)))
    return _from_int32(acc, (n, o, oh, ow), q_x.device)


def _pad(x, dim, before, after):
    parts = []
    for size in (before, after):
        shape = list(x.shape)
        shape[dim] = size
        parts.append(zeros(tuple(shape), dtype=x.dtype, device=x.device) if size else None)
    pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
    return cat(pieces, dim) if len(pieces) > 1 else x


def _conv_composite(q_x, q_w, stride, pads, dilation, groups, oh, ow):
    n, c = q_x.shape[0], q_x.shape[1]
    o, cg, kh, kw = q_w.shape
    x = _pad(_pad(q_x.to(i32), 2, pads[0][0], pads[0][1]), 3, pads[1][0], pads[1][1])
    sh, sw = stride
    dh, dw = dilation
    taps = []
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dh, kx * dw
            taps.append(x[:, :, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw])
    # (N, C, KH*KW, OH, OW): per channel its kernel taps, the weight's (c, ky, kx) order
    cols = stack(taps, 2).reshape(n, groups, cg * kh * kw, oh * ow)
    filters = q_w.to(i32).reshape(groups, o // groups, cg * kh * kw)
    return (filters @ cols).reshape(n, o, oh, ow)
