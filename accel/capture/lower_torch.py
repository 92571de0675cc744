"""The Torch lowerings: a plan replayed as a flat list of torch calls, or as one CUDA graph.

Both start from the plan's entries (``plan.Plan``): each becomes a closure that reads its arguments
from the slot list by position and calls the base device's primitive (or the fused composite), so a
replay runs no template walk, no frontend, no autodiff: only the torch calls the recording made.

- ``Torch("cpu")`` (and any Torch device where a graph cannot be taken): ``TorchPlan`` calls the
  closures in order. The same functions on the same arrays: the eager step's bits.
- ``Torch("cuda")``: ``CudaGraphPlan`` records the closures' kernel launches into one
  ``torch.cuda.CUDAGraph``. The graph reads *static* buffers: one per input (a replay copies the
  new batch in, unless the input already is that buffer), per feed (refilled from the host each
  replay) and per random draw. ember's numbers are drawn on the host by its own generator (the same
  stream as every device), so each draw runs again before the replay, outside the graph, and is
  copied into its buffer: fresh numbers every replay, the eager step's numbers. The step's new state
  (parameters, optimizer buffers) is written back into the input buffers inside the graph. With
  ``compile(..., inplace=True)`` the holders get those buffers: the state is updated in place. By
  default they get copies, and a copy handed back unchanged (the same tensor, torch's version count
  unmoved) is not copied in again: the buffer holds its values. Either way the next replay copies
  nothing for the state. Results are cloned after the replay (the graph's own memory is overwritten by the next one).
  Warm-up runs three times on a side stream first, as PyTorch's docs require.
  On CUDA the Torch device decides a few things with a read (``accel/torch/checks.py``: the indices
  of ``gather``, ``scatter`` and a loss's class indices; whether a max pool's input holds a nan),
  which a graph cannot hold: while the graph is taken, those functions are replaced by versions
  that clamp the indices, take the fast path and raise a flag on the device where the read would
  have raised or stepped aside (a target checked by both a loss and its gradient is checked once).
  The write-back keeps the old state when the flag is up, and the replay reads the flag (one sync)
  and, if up, raises ``ReplayError``: the step reruns eagerly, raising its own IndexOutOfRange or
  taking the composite. A flag that only checks inputs as they came in (a loss's class indices) is
  read once per new input: the same batch again (the same tensor, unchanged by torch's count of
  in-place writes) is neither copied in again nor read about, and the replay waits for nothing.
"""
import torch

from ember.accel.torch.arrays import version

from .lower_c import ReplayError
from .plan import _resolve, _store
from .trace import Slot


def _closure(fn, e, base):
    """``call(slots)`` running entry ``e`` as the generic plan does, with the templates resolved once."""
    if e.kind == "primitive" and type(e.out) is Slot:
        args = e.args
        if all(type(a) is not tuple and type(a) is not list and type(a) is not dict for a in args):
            fixed = [None if type(a) is Slot else a for a in args]
            where = [(k, a.i) for k, a in enumerate(args) if type(a) is Slot]
            o = e.out.i
            if len(where) == len(args):
                idx = [i for _, i in where]
                if len(idx) == 1:
                    i0 = idx[0]

                    def call(slots):
                        slots[o] = fn(slots[i0])
                elif len(idx) == 2:
                    i0, i1 = idx

                    def call(slots):
                        slots[o] = fn(slots[i0], slots[i1])
                else:
                    def call(slots):
                        slots[o] = fn(*[slots[i] for i in idx])
                return call

            def call(slots):
                a = list(fixed)
                for k, i in where:
                    a[k] = slots[i]
                slots[o] = fn(*a)
            return call
    if e.kind == "composite":
        def call(slots):
            _store(e.out, fn(*_resolve(e.args, slots, base), **_resolve(e.kwargs, slots, base)), slots)
    else:
        def call(slots):
            _store(e.out, fn(*_resolve(e.args, slots, base)), slots)
    return call


_UNSET = object()


def _run_host(plan, slots, put, last=None):
    """The step's hooks and feeds, in order; ``put(slot, array)`` stores a feed's new array. With
    ``last`` ({slot: values}), a feed whose values are those it was given last time is skipped
    (its buffer still holds them: no upload)."""
    base = plan.base
    for kind, x in plan.host:
        if kind == "hook":
            x()
        else:
            fn, shape, dtype = plan.feeds[x]
            v = fn()
            if last is not None:
                if last.get(x, _UNSET) == v:
                    continue
                last[x] = list(v) if type(v) in (list, tuple) else v  # a copy: a list the feed keeps may change
            if type(v) in (list, tuple):
                put(x, base.from_list(list(v), shape, dtype))
            else:
                put(x, base.full(shape, v, dtype))


class TorchPlan:
    """The plan's entries as closures over a slot list, called in order."""

    def __init__(self, plan):
        self.plan = plan
        self.base = plan.base
        self.template = plan.template
        self.inputs = plan.inputs
        self.calls = [_closure(fn, e, plan.base) for fn, e in plan.calls]

    def run(self, arrays, host=True):
        slots = list(self.template)
        for i, a in zip(self.inputs, arrays):
            slots[i] = a
        if host:
            _run_host(self.plan, slots, slots.__setitem__)
        for call in self.calls:
            call(slots)
        return slots


class CudaGraphPlan:
    """The plan's kernel launches as one CUDA graph over static buffers (see the module doc)."""

    def __init__(self, plan, trace, state_in, inplace=True):
        from ember.accel.torch import checks
        self.inplace = inplace  # the holders get the state's buffers (else copies of them)
        base = plan.base
        self.plan = plan
        self.base = base
        self.device = base.device
        self.nslots = plan.nslots
        arrays = trace.arrays
        # static buffers: inputs (one per slot), feeds, draws
        self.inputs = list(plan.inputs)
        self.static = {}
        for i in self.inputs:
            if i not in self.static:
                a = arrays[i]
                if not isinstance(a, torch.Tensor) or a.device != self.device:
                    raise ReplayError("an input is not a tensor on %s" % (self.device,))
                self.static[i] = a.contiguous().clone()
        self.layouts = [(arrays[i].shape, arrays[i].dtype) for i in self.inputs]
        self.feeds = {x: plan.template[x].clone() for x in plan.feeds}
        self._fed = {}  # feed slot -> the values its buffer holds (a replay uploads only changes)
        self.draws = []  # (random, args, static buffer), in the step's order
        calls = []
        for fn, e in plan.calls:
            if e.name == "random" and e.kind == "primitive":
                out = arrays[e.out.i]
                if not isinstance(out, torch.Tensor) or out.device != self.device:
                    raise ReplayError("a random draw is not on %s" % (self.device,))
                buf = out.clone()
                self.draws.append((fn, e.args, buf))
                calls.append(self._const(e.out.i, buf))
                continue
            calls.append(_closure(fn, e, base))
        self.calls = calls
        self.names = [e.name for _, e in plan.calls]
        self.state_in = [(i, o) for i, o in state_in if i in self.static
                         and arrays[o].shape == arrays[i].shape and arrays[o].dtype == arrays[i].dtype]
        written = {i for i, _ in self.state_in}
        self.results = [o for o in plan.outputs if o not in {o2 for _, o2 in self.state_in}]
        self.written_ptrs = {self.static[i].untyped_storage().data_ptr() for i in written}
        self.flag = None  # the captured run's flag (a 0-d bool the graph writes), None without checks
        self._flags = []  # the checks' own flags in a body run, or'ed into its flag at the end
        self._checks = 0
        self._classes = {}
        # What the flag depends on: the inputs whose buffers the checks read as they are (a loss's
        # class indices), and whether any check reads a computed value (a max pool's input). A flag
        # of inputs only is read again only after one of them is copied in anew.
        self._input_of = {id(s): i for i, s in self.static.items() if i not in written}
        self._input_of_slot = set(self._input_of.values())  # the inputs a replay only reads
        self.flag_inputs = set()
        self.flag_computed = False
        self._last = {}  # input slot -> (the array last copied in, its torch version then)
        self._clear = False  # the last flag read was clear, and no input it depends on changed since
        self.flag_reads = 0
        # warm-up on a side stream, then the capture, with the index checks the graph's own
        saved = checks.check_index, checks.check_classes, checks.any_true
        checks.check_index, checks.check_classes, checks.any_true = \
            self._check_index, self._check_classes, self._any_true
        try:
            with torch.cuda.device(self.device):
                self._no_sync()
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        self._body()
                torch.cuda.current_stream().wait_stream(side)
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.outs = self._body()
                torch.cuda.synchronize(self.device)
        except ReplayError:
            raise
        except Exception as e:
            raise ReplayError("the step cannot be taken as a CUDA graph: %s: %s" % (type(e).__name__, str(e)[:300]))
        finally:
            checks.check_index, checks.check_classes, checks.any_true = saved
        self._classes = {}

    def _no_sync(self):
        """One run with torch's sync check on: an entry that waits for the GPU (a host read, a
        boolean mask) cannot be captured; it is named, and no capture is tried."""
        self._classes = {}
        slots = list(self.plan.template)
        for d in (self.static, self.feeds):
            for i, v in d.items():
                slots[i] = v
        mode = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("error")
        try:
            for k, call in enumerate(self.calls):
                try:
                    call(slots)
                except RuntimeError as e:
                    if "synchroniz" not in str(e):
                        raise
                    raise ReplayError("entry %d (%s) waits for the GPU (a host read or a boolean mask), which a "
                                      "CUDA graph cannot hold: %s" % (k, self.names[k], str(e)[:200]))
        finally:
            torch.cuda.set_sync_debug_mode(mode)

    def _const(self, i, buf):
        def call(slots):
            slots[i] = buf
        return call

    def _checked(self, t):
        """Note what a check reads: one of the inputs' buffers, or a value the step computes."""
        self._checks += 1
        i = self._input_of.get(id(t))
        if i is None or self.static[i] is not t:
            self.flag_computed = True
        else:
            self.flag_inputs.add(i)

    def _check_index(self, index, n, dim, op):
        """``checks.check_index`` inside the graph: bad indices raise the flag and are clamped."""
        self._checked(index)
        self._flags.append(((index < 0) | (index >= n)).any())
        return index.clamp(0, max(n - 1, 0))

    def _any_true(self, flags):
        """``checks.any_true`` inside the graph: the fast path, and the flag raised where it is wrong."""
        self._checked(flags)
        self._flags.append(flags.any())
        return False

    def _check_classes(self, target, c, ignore_index, op):
        """``checks.check_classes`` inside the graph, once per target tensor and body run."""
        hit = self._classes.get(id(target))
        if hit is not None and hit[0] is target and hit[1] == (c, ignore_index):
            return hit[2]
        self._checked(target)
        keep = target != ignore_index
        safe = torch.where(keep, target, 0)
        clamped = safe.clamp(0, max(c - 1, 0))
        self._flags.append((clamped != safe).any())
        out = torch.where(keep, clamped, target)
        self._classes[id(target)] = (target, (c, ignore_index), out)  # holds target: its id stays its own
        return out

    def _body(self):
        self._classes = {}
        slots = list(self.plan.template)
        for i, s in self.static.items():
            slots[i] = s
        for i, s in self.feeds.items():
            slots[i] = s
        self._flags = []
        for call in self.calls:
            call(slots)
        # one check (a loss's class indices) is the flag itself: no zeroed flag to or into
        flag = None
        for f in self._flags:
            flag = f if flag is None else flag | f
        self.flag = flag
        outs = {}
        ptrs = self.written_ptrs
        for o in self.results:  # a result that shares memory with a written-back input: copied first
            r = slots[o]
            outs[o] = r.clone() if r.untyped_storage().data_ptr() in ptrs else r
        new = []
        for i, o in self.state_in:
            v = slots[o]
            if v.untyped_storage().data_ptr() in ptrs:
                v = v.clone()
            new.append((self.static[i], v))
        if flag is None:  # one multi-tensor copy for the whole state
            if new:
                torch._foreach_copy_([d for d, _ in new], [v for _, v in new])
        else:  # one select per tensor, written over its old value
            for dst, v in new:
                torch.where(flag, dst, v, out=dst)
        return outs

    def run(self, arrays, host=True):
        static, last = self.static, self._last
        for i, a, (shape, dtype) in zip(self.inputs, arrays, self.layouts):
            s = static[i]
            if a is s:  # the state the graph updates in place: its own buffer
                continue
            if type(a) is not torch.Tensor or a.shape != shape or a.dtype != dtype or a.device != self.device:
                raise ReplayError("an input's layout differs from the recording's")
            # the array copied in last time, unchanged since (torch counts in-place writes): its
            # buffer still holds it (the graph writes only the state's)
            count = version(a)  # None for an inference tensor: always copied
            seen = last.get(i)  # for the state the graph writes: the copy it last handed out
            if count is not None and seen is not None and seen[0] is a and seen[1] == count:
                continue
            s.copy_(a)
            if i in self._input_of_slot:
                last[i] = (a, count)
            if i in self.flag_inputs:
                self._clear = False
        if host:
            feeds = self.feeds
            _run_host(self.plan, None, lambda x, a: feeds[x].copy_(a), self._fed)
        for random, args, buf in self.draws:  # ember's stream, drawn again: fresh numbers each replay
            buf.copy_(random(*args))
        self.graph.replay()
        slots = [None] * self.nslots
        for o, r in self.outs.items():  # queued before the flag's read, which then waits for them too
            slots[o] = r.clone()
        for i, o in self.state_in:
            if self.inplace:
                slots[o] = static[i]
            else:  # a copy for the holder; the buffer keeps its values, so handed back it is not copied in
                v = slots[o] = static[i].clone()
                last[i] = (v, version(v))
        flag = self.flag
        if flag is not None and (self.flag_computed or not self._clear):
            self.flag_reads += 1
            if bool(flag):
                self._clear = False
                raise ReplayError("an index was out of range, or an input needs the composite (a nan in a max pool)")
            self._clear = True
        return slots


def lower(plan, trace):
    """(a lowered plan, None) or (None, why not)."""
    base = plan.base
    if base.device.type == "cuda":
        try:
            # the graph always writes the new state into its state buffers; in place, the holders
            # get those buffers, else copies of them
            pairs = getattr(plan, "state_pairs", [])
            return CudaGraphPlan(plan, trace, pairs, inplace=bool(getattr(plan, "state_in", []))), None
        except ReplayError:
            raise
        except Exception as e:  # the generic replay still runs: say why
            return None, "the CUDA graph could not be prepared: %s: %s" % (type(e).__name__, str(e)[:300])
    return TorchPlan(plan), None
