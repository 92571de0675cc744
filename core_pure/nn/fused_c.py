"""The C-backed Cpu's fused composites: softmax, log_softmax, layer_norm, gelu, linear, relu,
conv2d and the 2-d pools, each the common float32 case in one C call; and the gradients of conv and
pool and the reductions over several dims, float32 and float64.

They are frontend code (they take a composite's arguments and build Tensors), so they live beside the
composites of ``nn.functional`` rather than in the backend folder, which holds primitives and storage
only; ``nn.functional`` imports this module where the C kernels load. They are registered as the
built-in fused paths of ``CpuC`` (``composite.register_fused``): ``ember.Cpu(kernels="python")``
keeps the composites, and an override a user registers on ``ember.Cpu`` (or ``CpuC``) wins over
them. Anything else (another dtype or device, an unusual argument, an error to report) goes to the
composite body.

This module imports on MicroPython too (the test runner imports every module); there the kernels are
absent and nothing here runs.
"""
from array import array

from .. import dtypes
from ..backends.cpu import ckernels as _ck
from ..backends.cpu.array import CpuArray, numel
from ..backends.cpu.cdevice import CpuC
from ..backends.cpu.cstorage import contig as _contig, q as _q, threads as _threads
from ..backends.cpu.pool import fresh as _fresh
from ..composite import COMPOSITES, register_fused
from ..shapes import conv_out_size
from ..tensor import Tensor

_lib = _ck.native()[0]
f32 = dtypes.float32
if _lib is not None:  # the test runner imports every module, MicroPython's included: there this is all
    _F32 = _lib.EMB_F32
    _matmul = _lib.emb_matmul


def _f32(t):
    return type(t) is Tensor and t.dtype is f32 and type(t.device) is CpuC


def _new(out, shape, device):
    return Tensor(CpuArray(out, shape, f32), shape, f32, device)


def _gelu(x, approximate="none"):
    if _f32(x) and (approximate == "none" or approximate == "tanh"):
        xs = _contig(x._data)
        n = len(xs)
        out = _fresh("f", n)
        _lib.emb_gelu_f32(_lib.EMB_GELU_TANH if approximate == "tanh" else _lib.EMB_GELU_ERF, n,
                          xs.buffer_info()[0], out.buffer_info()[0], _threads())
        return _new(out, x.shape, x.device)
    return COMPOSITES["gelu"](x, approximate)


def _softmax_fast(log, x, dim):
    if not _f32(x) or type(dim) is not int or not x.shape:
        return None
    nd = len(x.shape)
    if dim != -1 and dim != nd - 1:
        return None
    n = x.shape[-1]
    xs = _contig(x._data)
    if not n or not len(xs):
        return None
    out = _fresh("f", len(xs))
    _lib.emb_softmax_f32(len(xs) // n, n, xs.buffer_info()[0], out.buffer_info()[0], 1 if log else 0,
                         _threads())
    return _new(out, x.shape, x.device)


def _softmax(x, dim=-1, dtype=None):
    out = _softmax_fast(False, x, dim) if dtype is None else None
    return out if out is not None else COMPOSITES["softmax"](x, dim, dtype)


def _log_softmax(x, dim=-1, dtype=None):
    out = _softmax_fast(True, x, dim) if dtype is None else None
    return out if out is not None else COMPOSITES["log_softmax"](x, dim, dtype)


def _layer_norm_fast(x, normalized_shape, weight, bias, eps):
    if not _f32(x) or type(eps) not in (int, float):
        return None
    ns = (normalized_shape,) if type(normalized_shape) is int else normalized_shape
    if type(ns) not in (tuple, list) or not ns or len(ns) > len(x.shape):
        return None
    ns = tuple(ns)
    if x.shape[len(x.shape) - len(ns):] != ns:
        return None
    for p in (weight, bias):
        if p is not None and (not _f32(p) or p.shape != ns):
            return None
    n = numel(ns)
    xs = _contig(x._data)
    if not n or not len(xs):
        return None
    ws = _contig(weight._data) if weight is not None else None
    bs = _contig(bias._data) if bias is not None else None
    out = _fresh("f", len(xs))
    _lib.emb_layer_norm_f32(len(xs) // n, n, xs.buffer_info()[0], ws.buffer_info()[0] if ws is not None else 0,
                            bs.buffer_info()[0] if bs is not None else 0, float(eps), out.buffer_info()[0],
                            _threads())
    return _new(out, x.shape, x.device)


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    out = _layer_norm_fast(x, normalized_shape, weight, bias, eps)
    return out if out is not None else COMPOSITES["layer_norm"](x, normalized_shape, weight, bias, eps)


def _linear(x, weight, bias=None):
    if type(x) is Tensor and type(weight) is Tensor and x.dtype is f32 and weight.dtype is f32 \
            and type(x.device) is CpuC and len(weight.shape) == 2 and x.shape:
        outf, inf = weight.shape
        wd = weight._data
        if x.shape[-1] == inf and (bias is None or _f32(bias) and bias.shape == (outf,)) \
                and type(weight.device) is CpuC and type(wd.data) is array:
            xs = _contig(x._data)
            rows = len(xs) // inf if inf else numel(x.shape[:-1])
            out = _fresh("f", (rows * outf))
            if rows and outf:
                if wd.strides is None:
                    waddr, ws0, ws1 = wd.data.buffer_info()[0], inf, 1
                else:
                    waddr = wd.data.buffer_info()[0] + 4 * wd.offset
                    ws0, ws1 = wd.strides
                accumulate = 0
                if bias is not None:
                    bs = _contig(bias._data)
                    _lib.emb_bias_rows_f32(rows, outf, bs.buffer_info()[0], out.buffer_info()[0])
                    accumulate = 1
                _matmul(_F32, 0, 0, 0, 0, rows, outf, inf, xs.buffer_info()[0], inf, 1, waddr, ws1, ws0,
                        out.buffer_info()[0], accumulate, _threads())
            shape = x.shape[:-1] + (outf,)
            return Tensor(CpuArray(out, shape, f32), shape, f32, x.device)
    return COMPOSITES["linear"](x, weight, bias)


def _relu(x):
    if type(x) is Tensor and type(x.device) is CpuC and x.dtype.kind == "f":
        return Tensor(x.device.binary("maximum", x._data, 0.0), x.shape, x.dtype, x.device)
    return COMPOSITES["relu"](x)


def _pair(v):
    if type(v) is int:
        return (v, v)
    if type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int:
        return v
    return None


def _conv2d_fast(x, weight, bias, stride, padding, dilation, groups):
    if not (_f32(x) and _f32(weight) and len(x.shape) == 4 and len(weight.shape) == 4
            and type(groups) is int and groups >= 1):
        return None
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    if kh < 1 or kw < 1:  # refused by the composite, with its message
        return None
    st, pad, dil = _pair(stride), _pair(padding), _pair(dilation)
    if st is None or pad is None or dil is None or min(st + dil) < 1 or min(pad) < 0:
        return None
    if c % groups or o % groups or cg * groups != c:
        return None
    if bias is not None and (not _f32(bias) or bias.shape != (o,)):
        return None
    oh = conv_out_size(h, kh, st[0], (pad[0], pad[0]), dil[0])
    ow = conv_out_size(w, kw, st[1], (pad[1], pad[1]), dil[1])
    if oh < 1 or ow < 1 or n == 0 or o == 0:
        return None
    xs, ws = _contig(x._data), _contig(weight._data)
    bs = _contig(bias._data) if bias is not None else None
    out = _fresh("f", (n * o * oh * ow))
    prm, prm_addr = _q((n, c, h, w, o, kh, kw, st[0], st[1], pad[0], pad[0], pad[1], pad[1], dil[0], dil[1],
                        groups, oh, ow))
    if _lib.emb_conv2d(_F32, prm_addr, xs.buffer_info()[0], ws.buffer_info()[0],
                       bs.buffer_info()[0] if bs is not None else 0, out.buffer_info()[0], _threads()) < 0:
        raise MemoryError("conv2d: the C kernels could not allocate their workspace")
    shape = (n, o, oh, ow)
    return Tensor(CpuArray(out, shape, f32), shape, f32, x.device)


def _conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    out = _conv2d_fast(x, weight, bias, stride, padding, dilation, groups)
    return out if out is not None else COMPOSITES["conv2d"](x, weight, bias, stride, padding, dilation, groups)


def _pool2d_fast(op, x, kernel_size, stride, padding, dilation):
    if not _f32(x) or len(x.shape) != 4:
        return None
    k, pad, dil = _pair(kernel_size), _pair(padding), _pair(dilation)
    st = k if stride is None else _pair(stride)
    if k is None or st is None or pad is None or dil is None or min(k + st + dil) < 1:
        return None
    if pad[0] < 0 or pad[1] < 0 or pad[0] > k[0] // 2 or pad[1] > k[1] // 2:
        return None
    n, c, h, w = x.shape
    oh = conv_out_size(h, k[0], st[0], (pad[0], pad[0]), dil[0])
    ow = conv_out_size(w, k[1], st[1], (pad[1], pad[1]), dil[1])
    if oh < 1 or ow < 1:
        return None
    xs = _contig(x._data)
    out = _fresh("f", (n * c * oh * ow))
    if len(out):
        prm, prm_addr = _q((n, c, h, w, 0, k[0], k[1], st[0], st[1], pad[0], pad[0], pad[1], pad[1], dil[0],
                            dil[1], 1, oh, ow))
        _lib.emb_pool2d(op, _F32, prm_addr, xs.buffer_info()[0], out.buffer_info()[0], _threads())
    shape = (n, c, oh, ow)
    return Tensor(CpuArray(out, shape, f32), shape, f32, x.device)


def _max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    # ceil_mode and the indices take the composite (whose pool primitive is C too)
    out = None if ceil_mode or return_indices else _pool2d_fast(_lib.EMB_P_MAX, x, kernel_size, stride, padding,
                                                                 dilation)
    return out if out is not None else COMPOSITES["max_pool2d"](x, kernel_size, stride, padding, dilation,
                                                                ceil_mode, return_indices)


def _avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None):
    plain = not ceil_mode and divisor_override is None and (count_include_pad or padding in (0, (0, 0), [0, 0]))
    out = _pool2d_fast(_lib.EMB_P_AVG, x, kernel_size, stride, padding, 1) if plain else None
    return out if out is not None else COMPOSITES["avg_pool2d"](x, kernel_size, stride, padding, ceil_mode,
                                                                count_include_pad, divisor_override)


# -- the gradients of conv and pool (Autodiff's rules call these composites), reductions over several
# dims: float32 and float64, one C call each (the device methods say None where they do not serve)

def _on_c(*ts):
    dt = ts[0].dtype
    for t in ts:
        if type(t) is not Tensor or type(t.device) is not CpuC or t.dtype is not dt:
            return False
    return dt is f32 or dt is dtypes.float64


def _conv_input_grad(g, weight, input_shape, stride, padding, dilation, groups):
    if _on_c(g, weight):
        data = g.device.conv_input_grad(g._data, weight._data, tuple(input_shape), stride, padding, dilation,
                                        groups)
        if data is not None:
            return Tensor(data, data.shape, g.dtype, g.device)
    return COMPOSITES["conv_input_grad"](g, weight, input_shape, stride, padding, dilation, groups)


def _conv_weight_grad(x, g, weight_shape, stride, padding, dilation, groups):
    if _on_c(x, g):
        data = g.device.conv_weight_grad(x._data, g._data, tuple(weight_shape), stride, padding, dilation, groups)
        if data is not None:
            return Tensor(data, data.shape, g.dtype, g.device)
    return COMPOSITES["conv_weight_grad"](x, g, weight_shape, stride, padding, dilation, groups)


def _pool_input_grad(g, x, op, kernel, stride, padding, dilation):
    if _on_c(g, x):
        data = g.device.pool_input_grad(op, x._data, g._data, kernel, stride, padding, dilation)
        if data is not None:
            return Tensor(data, x.shape, x.dtype, x.device)
    return COMPOSITES["pool_input_grad"](g, x, op, kernel, stride, padding, dilation)


def _reduce_dims(x, op, dims):
    if _on_c(x):
        data = x.device.reduce_dims(op, x._data, dims)
        if data is not None:
            return Tensor(data, data.shape, x.dtype, x.device)
    return COMPOSITES["reduce_dims"](x, op, dims)


FUSED = {
    "gelu": _gelu, "softmax": _softmax, "log_softmax": _log_softmax, "layer_norm": _layer_norm,
    "linear": _linear, "relu": _relu, "conv2d": _conv2d, "max_pool2d": _max_pool2d, "avg_pool2d": _avg_pool2d,
    "conv_input_grad": _conv_input_grad, "conv_weight_grad": _conv_weight_grad,
    "pool_input_grad": _pool_input_grad, "reduce_dims": _reduce_dims,
}


if _lib is not None:
    register_fused(CpuC, FUSED)
