"""The C-backed Cpu's fused optimizer updates: ``sgd_update`` and ``adam_update`` of a cohort
(float32 or float64) as one ``emb_optim_step`` call (``ext_c/k_optim.c``), registered as the
built-in fused paths of ``CpuC``; any other case (float16, a tensor of another device) runs the
composite's body. New arrays come from the Cpu's buffer pool; no input is written.
"""

from ember import dtypes
from ember.backends.cpu import ckernels as _ck
from ember.backends.cpu.array import CpuArray, numel
from ember.backends.cpu.cdevice import CpuC
from ember.backends.cpu.cstorage import contig as _contig, pointer_table as _pointer_table, q as _q, threads as _threads
from ember.backends.cpu.pool import fresh as _fresh
from ember.composite import COMPOSITES, register_fused
from ember.tensor import Tensor

from .updates import ADAM_AT, SGD_AT

_lib = _ck.native()[0]
_CODES = {dtypes.float32: "f", dtypes.float64: "d"}


def _fusable(hyper, lists):
    """The cohort's dtype code when every tensor is a float32 or float64 one of the C Cpu, else None."""
    code = _CODES.get(hyper.dtype)
    if code is None or type(hyper.device) is not CpuC:
        return None
    dtype = hyper.dtype
    for ts in lists:
        for t in ts:
            if t is not None and (type(t) is not Tensor or t.dtype is not dtype or type(t.device) is not CpuC):
                return None
    return code


def _addr(t):
    """(array holding ``t``'s values row-major, its address)."""
    a = _contig(t._data)
    return a, a.buffer_info()[0]


def _run(rule, code, hyper, params, ptrs):
    """One C call over the cohort; ``ptrs`` name arrays the caller holds until it returns."""
    # the table holds addresses: cstorage.pointer_table, which a captured step rewrites each replay
    sizes, _ = _q([numel(x.shape) for x in params])
    h = _contig(hyper._data)
    table = _pointer_table(ptrs)
    dtype = _lib.EMB_F32 if code == "f" else _lib.EMB_F64
    if _lib.emb_optim_step(rule, dtype, len(params), sizes.buffer_info()[0], table.buffer_info()[0],
                           h.buffer_info()[0], _threads()) < 0:
        raise RuntimeError("optimizer step: emb_optim_step refused rule %d with dtype code %d" % (rule, dtype))


def _tensor(out, like):
    return Tensor(CpuArray(out, like.shape, like.dtype), like.shape, like.dtype, like.device)


def _sgd_update(hyper, values, params, grads, momentum_buffers):
    code = _fusable(hyper, (params, grads, momentum_buffers))
    if code is None:
        return COMPOSITES["sgd_update"](hyper, values, params, grads, momentum_buffers)
    momentum = values[SGD_AT["momentum_on"]] != 0
    keep, ptrs, new_x, new_b = [], [], [], []
    for x, g, b in zip(params, grads, momentum_buffers):
        n = numel(x.shape)
        xs, xa = _addr(x)
        gs, ga = _addr(g)
        bs, ba = _addr(b) if b is not None and momentum else (None, 0)
        ox = _fresh(code, n)
        ob = _fresh(code, n) if momentum else None
        keep += [xs, gs, bs]  # contig may have copied a strided view: hold it through the call
        ptrs += [xa, ga, ba, ox.buffer_info()[0], ob.buffer_info()[0] if ob is not None else 0]
        new_x.append(_tensor(ox, x))
        new_b.append(_tensor(ob, x) if ob is not None else None)
    _run(_lib.EMB_OPT_SGD, code, hyper, params, ptrs)
    return new_x, new_b


def _adam_update(hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
    code = _fusable(hyper, (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs))
    amsgrad = values[ADAM_AT["amsgrad"]] != 0
    if code is None or (amsgrad and any(t is None for t in max_exp_avg_sqs)):
        return COMPOSITES["adam_update"](hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    keep, ptrs = [], []
    out = ([], [], [], [])
    for x, g, m, v, vmax in zip(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
        n = numel(x.shape)
        ins = [_addr(x), _addr(g), _addr(m), _addr(v), _addr(vmax) if amsgrad else (None, 0)]
        outs = [_fresh(code, n) for _ in range(4 if amsgrad else 3)]
        keep += [a for a, _ in ins]
        ptrs += [addr for _, addr in ins] + [o.buffer_info()[0] for o in outs] + ([] if amsgrad else [0])
        for lst, o in zip(out, outs):
            lst.append(_tensor(o, x))
        if not amsgrad:
            out[3].append(None)
    _run(_lib.EMB_OPT_ADAM, code, hyper, params, ptrs)
    return out


if _lib is not None:
    register_fused(CpuC, {"sgd_update": _sgd_update, "adam_update": _adam_update})
