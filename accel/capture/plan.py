"""A recorded step replayed on the base device: its entries called in order, nothing above them.

``Plan.run(inputs)`` takes the base arrays of the step's inputs (in ``Trace.inputs`` order) and returns
every slot's array after the step. Constants are the recorded arrays; feeds are remade from their
functions' values (``Plan.host`` runs the step's host hooks and feeds in the order it made them);
every entry calls the base device's primitive, or the fused composite, with the slots it names.
"""
import ember

from .trace import Slot, TensorSlot


def _resolve(v, slots, dev):
    t = type(v)
    if t is Slot:
        return slots[v.i]
    if t is TensorSlot:
        return ember.Tensor(slots[v.i], v.shape, v.dtype, dev)
    if t is tuple or t is list:
        return t(_resolve(x, slots, dev) for x in v)
    if t is dict:
        return {k: _resolve(x, slots, dev) for k, x in v.items()}
    return v


def _store(out, r, slots):
    t = type(out)
    if t is Slot:
        slots[out.i] = r
    elif t is TensorSlot:
        slots[out.i] = r._data
    elif t is tuple or t is list:
        for o, x in zip(out, r):
            _store(o, x, slots)


def leaves(v):
    """The leaves of a template: what its tuples, lists and dicts hold, depth first."""
    t = type(v)
    if t is tuple or t is list:
        for x in v:
            yield from leaves(x)
    elif t is dict:
        for x in v.values():
            yield from leaves(x)
    else:
        yield v


def slots_in(v, out):
    """Add the slots an argument template names to the set ``out``."""
    for x in leaves(v):
        if type(x) is Slot or type(x) is TensorSlot:
            out.add(x.i)


def live_entries(entries, outputs):
    """The entries the slots ``outputs`` need, in order (random draws always stay: they advance a
    generator), and the set of slots they read."""
    live = set(outputs)
    keep = []
    for e in reversed(entries):
        made = set()
        slots_in(e.out, made)
        if made & live or e.name == "random":
            keep.append(e)
            slots_in(e.args, live)
            slots_in(e.kwargs, live)
    keep.reverse()
    return keep, live


class Plan:
    def __init__(self, trace, outputs):
        self.outputs = list(outputs)
        self.base = trace.base
        self.cls = trace.cls
        self.inputs = list(trace.inputs)
        self.nslots = len(trace.arrays)
        self.template = [None] * self.nslots
        for i in trace.consts:
            self.template[i] = trace.arrays[i]
        self.feeds = dict(trace.feeds)
        self.host = list(trace.host)
        entries = [e for e in trace.entries if not (e.kind == "primitive" and e.out.i in trace.consts)]
        self.entries = live_entries(entries, outputs)[0]  # checks that only guard an error go
        self.calls = []
        for e in self.entries:
            if e.kind == "composite":
                self.calls.append((e.fn, e))
            else:
                self.calls.append((getattr(self.base, e.name), e))

    def run_host(self, slots):
        """The step's host work: hooks (bookkeeping such as step counts) and feeds, in order."""
        base = self.base
        for kind, x in self.host:
            if kind == "hook":
                x()
            else:
                fn, shape, dtype = self.feeds[x]
                v = fn()
                if type(v) in (list, tuple):
                    slots[x] = base.from_list(list(v), shape, dtype)
                else:
                    slots[x] = base.full(shape, v, dtype)

    def run(self, arrays, host=True, each=None):
        """Every slot after the step; ``each(entry)``, when given, is told each entry before it runs."""
        slots = list(self.template)
        for i, a in zip(self.inputs, arrays):
            slots[i] = a
        if host:
            self.run_host(slots)
        base = self.base
        for fn, e in self.calls:
            if each is not None:
                each(e)
            if e.kind == "composite":
                r = fn(*_resolve(e.args, slots, base), **_resolve(e.kwargs, slots, base))
            else:
                r = fn(*_resolve(e.args, slots, base))
            _store(e.out, r, slots)
        return slots
