"""``ember.accel.compile(fn)``: a step recorded once and replayed.

The first call with a new key (``state.collect``: shapes, dtypes, devices, structure, plain values)
runs eagerly: optimizers make their state on a first step. The second records while it runs
eagerly (``trace.Trace``), then checks the plan: replayed on the same inputs, it must give the same
bits as the eager step, or it is refused. From the third call on, the plan replays: the step's
Python (the frontend, the autodiff tape, the optimizer's loop) does not run, only the base device's
primitives (or a backend's own lowering of them, ``lowering``). A refused plan (the reason is in
``Compiled.refused``) runs the step eagerly from then on, with one warning.

What breaks capture, and falls back: a read to the host inside the step (``.item()``, ``tolist``),
random numbers drawn on the host instead of by a device primitive, arrays made outside the device's
primitives, tensors on two base devices, a result that is not tensors (numbers would be frozen), and
Python state the step changes other than optimizers' step counts. Plain values that the step reads
from elsewhere (a global, an attribute of an object passed in) are frozen at the recording: pass them
as arguments (they join the key) or declare them with ``feed``.
"""
import warnings

import ember
from ember.backend import chain, grad_device, unwrap_to

from . import state as _state
from .plan import Plan, leaves
from .trace import Trace

MAX_PLANS = 8  # per compiled function; the oldest key is dropped beyond this


class CaptureWarning(UserWarning):
    """Emitted once per compiled function when a step cannot be captured and runs eagerly."""


class _Recorded:
    """A plan for one key, with how to rebuild the step's result and where new state goes."""

    def __init__(self, plan, result, state_out, counters, lowered):
        self.plan = plan
        self.result = result  # the result's template: OutTensor leaves
        self.state_out = state_out  # [(input position, Holder, OutTensor)] for holders the step replaced
        # per state_out entry: for a trained parameter, the decorator its leaf is made at
        self.leaf_at = [grad_device(o.device) if h.kind == "param" and o.dtype.kind == "f" else None
                        for _, h, o in state_out]
        self.counters = counters  # [((optimizer index, param id, key), delta)]
        self.lowered = lowered  # a backend's lowering of the plan, or None


class OutTensor:
    __slots__ = ("i", "shape", "dtype", "device")

    def __init__(self, i, shape, dtype, device):
        self.i = i
        self.shape = shape
        self.dtype = dtype
        self.device = device


_paths = {}  # id(device) -> (device, the decorators above its base, outermost first)


def _path(device):
    p = _paths.get(id(device))
    if p is None or p[0] is not device:
        p = _paths[id(device)] = (device, tuple(chain(device)[:-1]))
    return p[1]


def base_arrays(tensors):
    """The base device's array of each tensor (what ``unwrap_to`` gives, without comparing devices)."""
    out = []
    for t in tensors:
        a = t._data
        for dev in _path(t.device):
            a = dev.unwrap(a)
        out.append(a)
    return out


def _wrapped(device, a, shape, dtype):
    for dev in reversed(_path(device)):
        a = dev.wrap(a, shape, dtype)
    return a


def _base_of(tensors):
    base = None
    for t in tensors:
        b = chain(t.device)[-1]
        if base is None:
            base = b
        elif b is not base and b != base:
            return None, "the step's tensors live on two devices (%r and %r)" % (base, b)
    if base is None:
        return None, "the step reads no tensor"
    return base, None


class Compiled:
    """A step function that records itself and replays (see the module doc). ``stats`` counts
    ``eager``, ``recorded`` and ``replayed`` calls; ``refused`` maps keys to reasons."""

    def __init__(self, fn, lower=True, inplace=False):
        self.fn = fn
        self.lower = lower
        self.inplace = inplace
        self._plans = {}
        self._calls = {}
        self.refused = {}
        self.stats = {"eager": 0, "recorded": 0, "replayed": 0}
        self._warned = False
        self.lowering = None  # "lowered", or why the last recording kept the generic replay
        try:
            self.__name__ = fn.__name__
            self.__doc__ = fn.__doc__
        except AttributeError:
            pass

    def __call__(self, *args, **kwargs):
        ins = _state.collect(args, kwargs, self.fn)
        key = ins.key
        rec = self._plans.get(key)
        if rec is not None:
            self.stats["replayed"] += 1
            return self._replay(rec, ins)
        if key in self.refused:
            return self._eager(args, kwargs)
        n = self._calls.get(key, 0)
        self._calls[key] = n + 1
        if n == 0:
            return self._eager(args, kwargs)
        return self._record(key, ins, args, kwargs)

    def _eager(self, args, kwargs):
        self.stats["eager"] += 1
        return self.fn(*args, **kwargs)

    def _refuse(self, key, why):
        self.refused[key] = why
        if not self._warned:
            self._warned = True
            warnings.warn("ember.accel.compile(%s): runs eagerly: %s" % (getattr(self.fn, "__name__", "step"), why),
                          CaptureWarning, stacklevel=3)

    # -- recording -----------------------------------------------------------------------------------
    def _record(self, key, ins, args, kwargs):
        base, why = _base_of(ins.tensors)
        for opt in ins.optimizers:
            if not getattr(opt, "CAPTURE", False):
                base, why = None, ("%s computes its update from host values that change every step "
                                   "(not declared capturable)" % type(opt).__name__)
        if base is None:
            self._refuse(key, why)
            return self._eager(args, kwargs)
        from .lowering import recorder_for
        trace = Trace(base, recorder_for(base) if self.lower else None)
        arrays = base_arrays(ins.tensors)
        for a in arrays:
            trace.bind(a)
        before = _state.counters(ins.optimizers)
        trace.start()
        try:
            result = self.fn(*args, **kwargs)
            _flush(ins.tensors, result)
        finally:
            trace.stop()
        self.stats["recorded"] += 1
        rec, why = self._build(trace, ins, arrays, result, before)
        if rec is None:
            self._refuse(key, why)
            return result
        while len(self._plans) >= MAX_PLANS:
            self._plans.pop(next(iter(self._plans)))
        self._plans[key] = rec
        return result

    def _build(self, trace, ins, arrays, result, before):
        if trace.refused:
            return None, trace.refused
        base = trace.base

        def out(t):
            a = unwrap_to(t.device, t._data, base)
            i = trace.slot(a)
            if i is None:
                return None
            return OutTensor(i, t.shape, t.dtype, t.device)

        bad = []

        def template(v):
            t = type(v)
            if t is ember.Tensor:
                o = out(v)
                if o is None:
                    bad.append("a result tensor was made outside the device's primitives")
                return o
            if t is tuple or t is list:
                return t(template(x) for x in v)
            if t is dict:
                return {k: template(x) for k, x in v.items()}
            if v is None or t is str:
                return v
            bad.append("the step returns a %s (only tensors, and containers of them, are replayed)"
                       % t.__name__)
            return None

        res = template(result)
        state_out = []
        for pos, (t, h) in enumerate(zip(ins.tensors, ins.holders)):
            if h is None:
                continue
            now = h.get()
            if now is t:
                continue
            o = out(now)
            if o is None:
                bad.append("new state (%s %r) was made outside the device's primitives" % (h.kind, h.name))
            state_out.append((pos, h, o))
        after = _state.counters(ins.optimizers)
        deltas = []
        for k, v in after.items():
            d = v - before.get(k, 0)
            if d:
                if k[2] != "step" or type(d) is not int:
                    bad.append("the step changed optimizer state %r outside tensors" % (k[2],))
                deltas.append((k, d))
        if bad:
            return None, bad[0]
        outs = [o for o in leaves(res) if type(o) is OutTensor] + [o for _, _, o in state_out]
        plan = Plan(trace, [o.i for o in outs])
        # (input slot, output slot) of each holder the step replaced: a lowering may update it in
        # place (state_in, when asked to) or keep old and new state in buffers that take turns
        plan.state_pairs = [(trace.inputs[pos], o.i) for pos, _, o in state_out]
        plan.state_in = plan.state_pairs if self.inplace else []
        why = self._check(plan, trace, arrays, outs)
        if why:
            return None, why
        lowered = None
        if self.lower:
            from .lowering import lower
            lowered, why = lower(plan, trace)
            if lowered is not None:  # twice: a second run sees the first one's leftovers
                why = self._check(lowered, trace, arrays, outs) or self._check(lowered, trace, arrays, outs)
                if why:
                    lowered = None
            self.lowering = why or "lowered"
        return _Recorded(plan, res, state_out, deltas, lowered), None

    def _check(self, plan, trace, arrays, outs):
        """Replay on the step's own inputs; every output must have the eager run's bits."""
        after = [(g, g.get_state()) for g, _ in trace.generators]
        for g, s in trace.generators:
            g.set_state(s)
        try:
            slots = plan.run(arrays, host=False)
        except Exception as e:  # a replay that cannot run is a refused plan, not a failed step
            return "the replay failed: %s: %s" % (type(e).__name__, e)
        finally:
            for g, s in after:
                g.set_state(s)
        base = plan.base
        for o in outs:
            if base.to_bytes(slots[o.i]) != base.to_bytes(trace.arrays[o.i]):
                return "the replay gave other values than the step (shape %s): it reads state the " \
                       "recording could not see" % (o.shape,)
        return None

    # -- replaying -----------------------------------------------------------------------------------
    def _replay(self, rec, ins):
        base = rec.plan.base
        arrays = base_arrays(ins.tensors)
        # step counts first: the feeds (an optimizer's bias corrections) read them as the step did
        for (i, pid, k), d in rec.counters:
            ins.optimizers[i].state[pid][k] += d
        try:
            slots = None
            if rec.lowered is not None:
                from .lower_c import ReplayError
                try:
                    slots = rec.lowered.run(arrays)
                except ReplayError:
                    slots = None  # the generic replay raises the step's own error, if there is one
            if slots is None:
                slots = rec.plan.run(arrays, host=rec.lowered is None)
        except BaseException:
            for (i, pid, k), d in rec.counters:  # the step did not happen
                ins.optimizers[i].state[pid][k] -= d
            raise
        for (pos, h, o), gdev in zip(rec.state_out, rec.leaf_at):
            if slots[o.i] is arrays[pos]:  # updated in place (inplace=True): the holder's tensor stands
                continue
            if gdev is not None and h.owner.requires_grad:
                h.owner._take_leaf(_leaf(o, slots, gdev, h.owner.id))
            else:
                h.put(_tensor(o, slots, base))
        return _build(rec.result, slots, base)


def _flush(tensors, result):
    """Run the work a decorator such as ``Fusion`` still holds back, while the trace records: the
    step's results and new state must come out of recorded entries."""
    seen = set()
    for t in list(tensors) + [x for x in leaves(result) if type(x) is ember.Tensor]:
        dev = t.device
        if id(dev) in seen:
            continue
        seen.add(id(dev))
        for d in chain(dev)[:-1]:
            flush = getattr(d, "flush", None)
            if flush is not None:
                flush()


# module functions, not closures: a recursive closure is a reference cycle, and the arrays it
# holds would wait for the garbage collector (a GPU pool would make new buffers meanwhile)
def _tensor(o, slots, base):
    return ember.Tensor(_wrapped(o.device, slots[o.i], o.shape, o.dtype), o.shape, o.dtype, o.device)


def _leaf(o, slots, gdev, id):
    """A parameter's new value as ``Param.value`` makes it (``nn.module._as_leaf``): a leaf keyed by
    the parameter's id at the decorator that records gradients, wrapped up to the tensor's device."""
    a = slots[o.i]
    for dev in reversed(_path(o.device)):
        a = dev.wrap(a, o.shape, o.dtype)
        if dev is gdev:
            a = dev.require_grad(a, id)
    return ember.Tensor(a, o.shape, o.dtype, o.device)


def _build(v, slots, base):
    t = type(v)
    if t is OutTensor:
        return _tensor(v, slots, base)
    if t is tuple or t is list:
        return t(_build(x, slots, base) for x in v)
    if t is dict:
        return {k: _build(x, slots, base) for k, x in v.items()}
    return v




def compile(fn=None, *, lower=True, inplace=False):
    """Record ``fn``'s step once and replay it (``ember.accel.capture``): ``step = compile(step)`` or
    ``@compile``. ``lower=False`` keeps the generic replay (each primitive called from Python) even
    where the backend can lower the plan to its own kernels. By default the step's state (parameters,
    optimizer buffers) gets fresh tensors every replay, so no tensor a replay returned is overwritten
    (ember's value semantics; one copy per state tensor after the CUDA graph of ``Torch("cuda")``).
    ``inplace=True`` lets a lowering that can (that CUDA graph) update the state in its own buffers:
    faster, but a tensor of the old state kept from before a replay then sees the new values."""
    if fn is None:
        return lambda f: Compiled(f, lower=lower, inplace=inplace)
    return Compiled(fn, lower=lower, inplace=inplace)
