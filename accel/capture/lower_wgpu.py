"""The Wgpu lowering: a plan replayed as its recorded dispatches, in one command buffer per step.

``lower`` runs the generic plan once more (a *shadow* run) on the plan's own copies of the inputs,
recording every dispatch (pipeline, buffers, parameter words, workgroups), every upload and every
block the run allocates. The plan keeps all those blocks, so no other tensor ever gets their memory,
and the dispatches can run again as they are. A replay is then one command encoder: the new inputs
copied into the plan's input blocks, every dispatch (its parameters live in the plan's own uniform
buffer, written once; its bind groups are made once), the outputs copied to fresh blocks (so a
tensor the step returned is never overwritten by the next replay), and one ``submit``. Random draws
run again before it (the generator advances; their new values are copied where the dispatches read
them). Index checks the kernels made are armed again, so the next read raises as after an eager step.

Each replay encodes the next one's commands after its own submit, while the GPU runs (``AHEAD``):
the next replay, when its state bank is the one foreseen, then submits them at once with its
input copies, and otherwise encodes its own.
"""
import sys
from array import array

from ember.accel.wgpu import index as _index
from ember.accel.wgpu import runtime as _runtime
from ember.accel.wgpu.arrays import WArray

from .lower_c import ReplayError


def _contiguous(a):
    return type(a) is WArray and a.strides is None and a.offset == 0


def _nbytes(a, dev):
    from ember.shapes import numel
    return (numel(a.shape) * dev.storage[a.dtype].itemsize + 3) // 4 * 4


class _Recorder:
    def __init__(self, dev):
        self.dev = dev
        self.dispatches = []
        self.writes = []
        self.blocks = []
        self.errors = []
        self.refused = None
        self.draws = []  # the random entries, in order
        self._entry = None
        self._saved = []

    def entering(self, entry):
        self._entry = entry
        if entry.name == "random":
            self.draws.append(entry)

    def drawing(self):
        """Whether the running entry draws random numbers: its work is not recorded, it runs
        again on each replay (a generator advances) and its result is copied where the plan reads it."""
        return self._entry is not None and self._entry.name == "random"

    def start(self):
        rt, mem = self.dev.rt, self.dev.mem
        dispatch, write, read, alloc, arm = rt.dispatch, rt.write, rt.read, mem.alloc, _index.ErrorRecord.arm
        rec = self

        def recorded_dispatch(entry, buffers, words, groups):
            if not rec.drawing():
                rec.dispatches.append((entry, tuple(buffers), tuple(words), groups))
            return dispatch(entry, buffers, words, groups)

        def recorded_write(buf, offset, data):
            if not rec.drawing():
                rec.writes.append((buf, offset, bytes(data)))
            return write(buf, offset, data)

        def recorded_read(buf, offset, nbytes):
            rec.refused = rec.refused or "a primitive read values back to the host"
            return read(buf, offset, nbytes)

        def recorded_alloc(nbytes):
            b = alloc(nbytes)
            rec.blocks.append(b)
            return b

        def recorded_arm(er):
            if er not in rec.errors:
                rec.errors.append(er)
            return arm(er)

        for owner, name, new in ((rt, "dispatch", recorded_dispatch), (rt, "write", recorded_write),
                                 (rt, "read", recorded_read), (mem, "alloc", recorded_alloc)):
            self._saved.append((owner, name))
            setattr(owner, name, new)
        self._arm = arm
        _index.ErrorRecord.arm = recorded_arm

    def stop(self):
        for owner, name in self._saved:
            delattr(owner, name)  # back to the class's method
        _index.ErrorRecord.arm = self._arm


def lower(plan, trace):
    """(WgpuPlan, None) or (None, why not)."""
    dev = plan.base
    rt = dev.rt
    for i in plan.inputs:
        if not _contiguous(trace.arrays[i]):
            return None, "an input is a strided view"
    private = []
    for i in plan.inputs:
        a = trace.arrays[i]
        b = dev.mem.alloc(_nbytes(a, dev))
        private.append(WArray(b, a.shape, a.dtype))
    _copy(rt, [(a.block, p.block, _nbytes(a, dev)) for a, p in zip([trace.arrays[i] for i in plan.inputs],
                                                                    private)])
    rec = _Recorder(dev)
    states = [(g, g.get_state()) for g, _ in trace.generators]  # the shadow run draws too
    with rt.lock:
        rt.flush()
        rec.start()
        try:
            slots = plan.run(private, host=False, each=rec.entering)
            rt.flush()
        finally:
            rec.stop()
            for g, st in states:
                g.set_state(st)
    draws = []
    for e in rec.draws:
        a = slots[e.out.i]
        if not _contiguous(a):
            return None, "a random draw gave a strided array"
        draws.append((e, a))
    if rec.refused:
        return None, rec.refused
    if not rec.dispatches:
        return None, "the step queued no dispatch"
    outputs = []
    for s in plan.outputs:
        a = slots[s]
        if type(a) is not WArray:
            return None, "an output is not a device array"
        outputs.append((s, a))
    return WgpuPlan(plan, trace, private, rec, outputs, slots, draws), None


# Where a replay's dispatches are cut into command buffers submitted one after the other, as
# fractions of the step: the GPU starts on the first part while the host encodes the next
# (wgpu-native's finish costs microseconds a dispatch). (1.0,): one command buffer. Two halves
# were as fast or faster than one buffer for every step bench/gpu.py times on the H200 (LeNet-5 at
# batch 64: 1.32 against 1.57 ms a step with a read; bench/results/gpu-2026-12-02-run4-gpu.json).
PARTS = (0.5, 1.0)
# Whether each replay encodes the next one's commands after its submit, while the GPU runs it: a
# replay foreseen so submits at once, encoding nothing but its input copies.
AHEAD = True
_STAGED_OUTPUT = 256  # bytes: outputs this small (a loss, an accuracy) are copied out with each replay


def _cuts(n, parts):
    """[(first, end)] dispatch ranges of a step of ``n`` dispatches cut at ``parts``."""
    if n == 0:
        return [(0, 0)]
    if not parts or any(not 0 < f <= 1 for f in parts) or list(parts) != sorted(parts):
        raise ValueError("lower_wgpu.PARTS: expected increasing fractions in (0, 1], found %r" % (parts,))
    ends = sorted({max(1, min(n, round(f * n))) for f in parts} | {n})
    out, a = [], 0
    for z in ends:
        if z > a:
            out.append((a, z))
            a = z
    return out


def _most_refs(blocks):
    most = 0
    for b in blocks:
        n = sys.getrefcount(b)
        if n > most:
            most = n
    return most


# what _most_refs finds for blocks that only a list holds (None: reference counts are unknown)
_ALONE = _most_refs([object()]) if hasattr(sys, "getrefcount") else None


class _Body:
    """A replay's commands, encoded: the command buffer, the block each output is handed out in,
    what ``Runtime.stage`` copies out, and how many submits take it."""

    __slots__ = ("key", "buffer", "blocks", "table", "parts")

    def __init__(self, key, buffer, blocks, table, parts):
        self.key, self.buffer, self.blocks, self.table, self.parts = key, buffer, blocks, table, parts


class _Steps(list):
    """A replay's dispatches as (pipeline, bind group, parameter offset, gx, gy, gz), and ``words``:
    the same as uint64 words, handles as addresses, for the C encoder (ext_c/wgpu_encode.c); None
    without it. The list holds the handles' objects alive while the words name them."""

    __slots__ = ("words",)

    def __init__(self, steps):
        list.__init__(self, steps)
        self.words = None
        if _runtime._C is not None:
            addr = _runtime.address
            self.words = array("Q", [w for pipe, bg, offset, gx, gy, gz in steps
                                     for w in (addr(pipe), addr(bg), offset, gx, gy, gz)])


class _Bank:
    """One of the two sets of blocks a step's new state takes turns in: a replay in bank k reads the
    state from the other bank's blocks and writes its own, so no state is copied in or out."""

    __slots__ = ("blocks", "steps")

    def __init__(self, blocks, steps):
        self.blocks = blocks
        self.steps = steps


def _banks(wp, plan, outputs):
    """(two _Banks, [(input index, output slot)] of the state), or None where the state cannot take
    turns: no state, or a block that is part of a larger buffer or shared by two arrays."""
    pairs = getattr(plan, "state_pairs", ())
    if not pairs or _ALONE is None:
        return None
    out_of = dict(outputs)
    where = {s: j for j, s in enumerate(plan.inputs)}
    state, seen = [], set()

    def whole(block):
        return block.offset == 0 and block.buffer.page is None and id(block.buffer) not in seen

    for i, o in pairs:
        j, a = where.get(i), out_of.get(o)
        if j is None or a is None or not _contiguous(a):
            return None
        for block in (wp.private[j].block, a.block):
            if not whole(block):
                return None
            seen.add(id(block.buffer))
        state.append((j, o))
    news = {o for _, o in pairs}
    if any(id(a.block.buffer) in seen for s, a in outputs if s not in news):
        return None
    mem = wp.base.mem
    blocks = [[mem.alloc(out_of[o].block.size) for _, o in state] for _ in range(2)]
    if not all(whole(b) for bank in blocks for b in bank):
        return None
    banks = []
    for k in range(2):
        sub = {}
        for (j, o), mine, other in zip(state, blocks[k], blocks[1 - k]):
            sub[id(wp.private[j].block.buffer)] = other.buffer
            sub[id(out_of[o].block.buffer)] = mine.buffer
        banks.append(_Bank(blocks[k], wp._steps(sub)))
    return banks, state


def _copy(rt, pairs):
    with rt.lock:
        rt.flush()
        enc = rt.device.create_command_encoder()
        for src, dst, n in pairs:
            if n:
                enc.copy_buffer_to_buffer(src.buffer.gpu, src.offset, dst.buffer.gpu, dst.offset, n)
        rt.queue.submit([enc.finish()])
        rt.submits += 1  # what a staged read holds may be stale now


def _copier(enc):
    """``copy(src, src_offset, dst, dst_offset, n)`` into ``enc``: wgpu-native's entry point when
    reachable (a fifth of the wrapper's cost), else wgpu-py's."""
    raw = _runtime.COPY
    if raw is None:
        return enc.copy_buffer_to_buffer
    ci = enc._internal

    def copy(src, so, dst, do, n):
        raw(ci, src._internal, so, dst._internal, do, n)
    return copy


class WgpuPlan:
    def __init__(self, plan, trace, private, rec, outputs, shadow, draws):
        dev = plan.base
        rt = dev.rt
        self.plan = plan
        self.base = dev
        self.inputs = plan.inputs
        self.private = private
        self.nbytes = [_nbytes(p, dev) for p in private]
        self.layouts = [(p.shape, p.dtype) for p in private]
        self.blocks = rec.blocks  # held: their memory is the plan's
        self.shadow = shadow  # the shadow run's arrays (consts and outputs among them)
        self.writes = rec.writes
        self.errors = rec.errors
        self.outputs = outputs
        self.outputs_of = dict(outputs)
        self.draws = [(dev.random, e.args, a, _nbytes(a, dev)) for e, a in draws]
        self.nslots = plan.nslots
        n = len(rec.dispatches)
        size = max(n * _runtime.PARAM_BYTES, 256)
        import wgpu
        self.params = rt.device.create_buffer(size=size, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        staging = bytearray(size)
        for k, (entry, buffers, words, groups) in enumerate(rec.dispatches):
            _runtime._packer(len(words))(staging, k * _runtime.PARAM_BYTES, *words)
        rt.queue.write_buffer(self.params, 0, staging, 0, size)
        self.bind_groups = {}
        self.dispatches = rec.dispatches
        self.steps = self._steps({})
        self.banks = _banks(self, plan, outputs)
        self.cuts = _cuts(len(self.steps), PARTS)
        self.ahead = None  # the next replay's _Body, encoded after this one's submit
        self.feeds = {}
        for s in plan.feeds:
            a = plan.template[s]
            if type(a) is not WArray:
                raise ReplayError("a feed that is not a device array")
            self.feeds[s] = a

    def _steps(self, sub):
        """(pipeline, bind group, parameter offset, workgroups) of each recorded dispatch, its
        buffers replaced as ``sub`` ({id(buffer): buffer}) says."""
        rt = self.base.rt
        groups_max = rt.max_groups
        bind_groups = self.bind_groups
        steps = []
        for k, (entry, buffers, words, groups) in enumerate(self.dispatches):
            buffers = tuple(sub.get(id(b), b) for b in buffers)
            readonly = entry[2]
            key = (readonly,) + buffers
            bg = bind_groups.get(key)
            if bg is None:
                entries = [{"binding": 0, "resource": {"buffer": self.params, "offset": 0,
                                                       "size": _runtime.PARAM_BYTES}}]
                for i, b in enumerate(buffers):
                    entries.append({"binding": i + 1, "resource": {"buffer": b.gpu, "offset": 0, "size": b.size}})
                bg = bind_groups[key] = rt.device.create_bind_group(layout=rt.layouts(len(buffers), readonly)[0],
                                                                    entries=entries)
            if type(groups) is int:
                gx, gy, gz = groups, 1, 1
                if groups > groups_max:
                    gy = (groups + groups_max - 1) // groups_max
                    gx = (groups + gy - 1) // gy
            else:
                gx, gy, gz = groups
            steps.append((entry[0], bg, k * _runtime.PARAM_BYTES, gx, gy, gz))
        return _Steps(steps)

    def run_host(self):
        plan = self.plan
        dev = self.base
        for kind, x in plan.host:
            if kind == "hook":
                x()
            else:
                fn, shape, dtype = plan.feeds[x]
                a = self.feeds[x]
                v = fn()  # packed on the host, as from_list packs (no round trip through the GPU)
                from ember import dtypes
                data = dev._pack(dtypes.round_values(list(v) if type(v) in (list, tuple) else [v], dtype), dtype)
                dev.rt.write(a.block.buffer, a.block.offset, data + bytes(-len(data) % 4))

    def _turn(self, arrays):
        """(the bank this replay writes, or None, and the bank to copy the new state into, or None):
        a replay writes bank k when the state it reads is the other bank's and nothing holds bank
        k's blocks any more (the tensors of two replays ago are gone)."""
        banks, state = self.banks
        first = arrays[state[0][0]].block
        for k in (0, 1):
            other = banks[1 - k].blocks
            if first is other[0] and _most_refs(banks[k].blocks) <= _ALONE:
                if all(arrays[j].block is b for (j, _), b in zip(state, other)):
                    return k, None
        for k in (0, 1):  # the state is elsewhere (the eager steps'): copied in, and out to a free bank
            if _most_refs(banks[k].blocks) <= _ALONE:
                return None, k
        return None, None

    def _key(self, arrays):
        """(the bank this replay writes, or None; the bank the new state is copied into, or None)."""
        if self.banks is None:
            return None, None
        return self._turn(arrays)

    def _encode(self, key, enc=None, submit=None):
        """A _Body for ``key``: every dispatch, the outputs copied to fresh blocks (or left in the
        bank ``key`` names) and the staged copies. ``enc``: the encoder to begin with (holding the
        input copies); ``submit``: called with each finished part but the last, so the GPU starts
        on it while the rest is encoded (lower_wgpu.PARTS); without it, one command buffer."""
        rt = self.base.rt
        turn, into = key
        steps = self.steps if turn is None else self.banks[0][turn].steps
        cuts = self.cuts if submit is not None else [(0, len(steps))]
        enc = enc or rt.device.create_command_encoder()
        for c, (a, z) in enumerate(cuts):
            if c:
                submit(enc.finish())
                enc = rt.device.create_command_encoder()
            cp = enc.begin_compute_pass()
            if steps.words is not None and rt.c_dispatch is not None:  # one C call for the part
                if z > a and _runtime._C.emb_wgpu_encode(cp._internal, z - a, steps.words.buffer_info()[0] + 48 * a):
                    raise RuntimeError("wgpu: the C encoder refused a replay's dispatches")
            elif rt._offset is not None:
                ci = cp._internal
                off = rt._offset
                last = None
                for pipe, bg, offset, gx, gy, gz in steps[a:z]:
                    if pipe is not last:
                        _runtime._SET_PIPELINE(ci, pipe._internal)
                        last = pipe
                    off[0] = offset
                    _runtime._SET_BIND_GROUP(ci, 0, bg._internal, 1, off)
                    _runtime._DISPATCH(ci, gx, gy, gz)
            else:
                for pipe, bg, offset, gx, gy, gz in steps[a:z]:
                    cp.set_pipeline(pipe)
                    cp.set_bind_group(0, bg, [offset])
                    cp.dispatch_workgroups(gx, gy, gz)
            cp.end()
        copy = _copier(enc)
        banked = self._banked(key)
        if into is not None:
            for s, b in banked.items():
                a = self.outputs_of[s]
                copy(a.block.buffer.gpu, a.block.offset, b.buffer.gpu, b.offset, a.block.size)
        # the other outputs go to fresh blocks, so a tensor a step returned is never overwritten
        # by the next replay (only these are held here: a bank's blocks held by a foreseen _Body
        # would look taken to _turn)
        blocks = {}
        mem = self.base.mem
        for s, a in self.outputs:
            if s not in banked:
                b = blocks[s] = mem.alloc(a.block.size)
                copy(a.block.buffer.gpu, a.block.offset, b.buffer.gpu, b.offset, min(a.block.size, b.size))
        # the small outputs (a loss) and the index checks' record are copied out with the step,
        # so the read after it maps them without a submit of its own
        small = [(b.buffer, b.offset, b.size) for b in (blocks[s] if s in blocks else banked[s] for s, _ in self.outputs)
                 if b.size <= _STAGED_OUTPUT]
        table = rt.stage(enc, small + [(er.block.buffer, er.block.offset, er.nbytes) for er in self.errors])
        return _Body(key, enc.finish(), blocks, table, len(cuts) if submit is not None else 1)

    def run(self, arrays, host=True):
        for a, (shape, dtype) in zip(arrays, self.layouts):
            if not _contiguous(a) or a.shape != shape or a.dtype is not dtype:
                raise ReplayError("an input's layout differs from the recording's")
        if host:
            self.run_host()
        rt = self.base.rt
        key = self._key(arrays)
        skip = {j for j, _ in self.banks[1]} if key[0] is not None else ()  # the state is read where it is
        with rt.lock:
            body, self.ahead = self.ahead, None
            if body is not None and body.key != key:
                body = None  # the state went elsewhere than foreseen: its blocks are freed with it
            # random draws first, in the step's order (they read only the generator): each new draw
            # is copied into the block the recorded dispatches read
            drawn = [(random(*args), a, n) for random, args, a, n in self.draws]
            rt.flush()
            q = rt.queue
            for buf, off, data in self.writes:
                q.write_buffer(buf.gpu, off, data)
            # the new inputs and draws copied in, in an encoder only where there is one to copy
            copies = [(a.block, p.block, n) for j, (a, p, n) in enumerate(zip(arrays, self.private, self.nbytes))
                      if n and j not in skip]
            copies += [(new.block, a.block, n) for new, a, n in drawn if n]
            enc = None
            if copies:
                enc = rt.device.create_command_encoder()
                copy = _copier(enc)
                for src, dst, n in copies:
                    copy(src.buffer.gpu, src.offset, dst.buffer.gpu, dst.offset, n)
            if body is None:
                body = self._encode(key, enc, lambda buffer: q.submit([buffer]))
                q.submit([body.buffer])
            else:
                q.submit(([enc.finish()] if enc is not None else []) + [body.buffer])
            rt._submitted += len(self.steps)
            rt.submits += body.parts
            rt.staged(body.table)
            slots = [None] * self.nslots
            banked = self._banked(key)
            for s, a in self.outputs:
                b = body.blocks[s] if s in body.blocks else banked[s]
                slots[s] = WArray(b, a.shape, a.dtype, a.strides, a.offset)
            if AHEAD:
                # the next replay's commands, encoded while the GPU runs this one: that replay
                # then submits at once (its bank foreseen as the other one; a miss encodes anew)
                try:
                    self.ahead = self._encode(self._next_key(key))
                except MemoryError:  # no room for the next outputs now: that replay encodes its own
                    self.ahead = None
        for er in self.errors:
            er.arm()
        return slots

    def _banked(self, key):
        """{output slot: block} of the state outputs that the replay of ``key`` leaves in a bank."""
        turn, into = key
        k = turn if turn is not None else into
        if k is None:
            return {}
        return {s: b for (_, s), b in zip(self.banks[1], self.banks[0][k].blocks)}

    def _next_key(self, key):
        turn, into = key
        if turn is not None:
            return 1 - turn, None
        if into is not None:
            return 1 - into, None
        return key
