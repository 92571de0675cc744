"""Recording one step: every primitive and fused composite the base device runs, as a list of entries.

A trace is taken while the step runs eagerly. It replaces, for its duration, the primitives of the
base device's class (``ember.ops.PRIMITIVES``), ``ember.composite.run`` and the ``run`` of the fusion
compilers (a fused kernel ``Fusion`` launches is one entry, like a fused composite) with recording versions:
a call made while no other recorded call is running is an *entry* (a call from inside one, such as
``Cpu.from_list`` called by the C-backed Cpu, is part of it). Arrays become numbered *slots*:

- inputs: the base arrays of the step's input tensors (``bind``);
- results: what an entry returned;
- constants: arrays a data entry (``from_list``, ``full``, ``from_bytes``) made from host values, kept as
  they are (arrays are immutable values), unless a ``feed`` said how to remake them each replay.

An entry that reads an array the trace does not know, made during the step by code that bypassed
the device's primitives, makes the trace unusable: a replay would miss that work. One made before
the step (a cached constant) is a constant: arrays are values. (Where the array class cannot be
watched, numpy's ``ndarray``, every unknown array counts as made before.) So do reads to the host inside
the step (``to_list``/``to_bytes``: the values would be frozen) and draws from a ``Generator`` outside
a primitive (the numbers would repeat every replay). ``refused`` says why, in words. Only the
recording thread's calls are recorded; one step is recorded at a time.
"""
import sys
from _thread import get_ident as _thread_id

import ember
from ember import composite as _composite
from ember.errors import checking
from ember.ops import PRIMITIVES
from ember.rng import Generator

DATA = ("from_list", "from_bytes", "full")  # entries that make arrays from host values
READS = ("to_list", "to_bytes")

_active = []  # the Trace being taken (one at a time)





def current():
    """The Trace being taken, or None."""
    return _active[-1] if _active else None


_DEVICE_CODE = ("/capture/", "/backends/", "/autodiff/", "/fusion/", "/numpy/", "/wgpu/")


def _where():
    """`` (at file:line)`` of the innermost frame above the device code (this package, the backends,
    the decorators), for the refusal message; a read through ``Tensor.item`` names its caller."""
    import sys
    f = sys._getframe(1)
    while f is not None and any(d in f.f_code.co_filename for d in _DEVICE_CODE):
        f = f.f_back
    if f is not None and f.f_code.co_filename.endswith("/tensor.py"):
        f = f.f_back
    return "" if f is None else " (at %s:%d)" % (f.f_code.co_filename, f.f_lineno)


class Slot:
    """A reference to slot ``i`` inside an entry's argument template."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return "Slot(%d)" % self.i


class TensorSlot:
    """A tensor argument of a composite entry: its array's slot, shape, dtype."""

    __slots__ = ("i", "shape", "dtype")

    def __init__(self, i, shape, dtype):
        self.i = i
        self.shape = shape
        self.dtype = dtype


class Entry:
    """One recorded call: ``kind`` is "primitive" or "composite"; ``name``, the argument template
    (arrays replaced by Slot/TensorSlot), and ``out``: the result's slot(s) as a Slot, a tuple of
    Slots, or a TensorSlot (composites return tensors)."""

    __slots__ = ("kind", "name", "args", "kwargs", "out", "fn", "index")

    def __init__(self, kind, name, args, kwargs, out, fn=None):
        self.index = None  # position in Trace.entries
        self.kind = kind
        self.name = name
        self.args = args
        self.kwargs = kwargs
        self.out = out
        self.fn = fn

    def __repr__(self):
        return "Entry(%s %s -> %r)" % (self.kind, self.name, self.out)


class _Launch:
    """A recorded fused kernel, run again: ``compiler.run(kernel, space, inputs)``."""

    __slots__ = ("run", "compiler", "kernel")

    def __init__(self, run, compiler, kernel):
        self.run = run
        self.compiler = compiler
        self.kernel = kernel

    def __call__(self, space, inputs):
        return self.run(self.compiler, self.kernel, space, inputs)


def _compilers():
    """The fusion compilers loaded so far (a kernel needs its compiler's module to be loaded)."""
    found = []
    for module, name in (("ember.accel.fusion.compile_wgsl", "WgslCompiler"),
                         ("ember.accel.fusion.compile_c", "CCompiler"),
                         ("ember.accel.fusion.interpret", "Interpreter")):
        m = sys.modules.get(module)
        cls = getattr(m, name, None)
        if cls is not None and "run" in cls.__dict__:
            found.append(cls)
    return found


class Trace:
    """Record what ``base`` (a device that is not a decorator) runs between ``start`` and ``stop``."""

    def __init__(self, base, recorder=None):
        self.base = base
        self.recorder = recorder  # a backend's own recording of the same run (lowering.py), or None
        self.cls = type(base)
        self.arrays = []  # slot -> the array (kept alive, so ids stay unique)
        self._slot_of = {}  # id(array) -> slot
        self.inputs = []  # slots bound to the step's inputs, in order
        self.consts = set()  # slots a data entry made
        self.feeds = {}  # slot -> (fn, shape, dtype): remade from fn() on each replay
        self.host = []  # ("hook", fn) and ("feed", slot) in the order the step made them
        self.entries = []
        self.generators = []  # (Generator, its state before the step's first draw from it)
        self.refused = None
        self._depth = 0
        self.thread = _thread_id()  # other threads' calls pass through unrecorded
        self._saved = []
        self._born = {}  # id -> array, for every array of the base's class made during the step
        self._births = False  # whether _born is kept (the array class takes the hook)

    # -- slots ---------------------------------------------------------------------------------------
    def _new(self, a):
        i = len(self.arrays)
        self.arrays.append(a)
        self._slot_of[id(a)] = i
        return i

    def bind(self, a):
        """Make the array ``a`` an input slot (an array bound twice keeps its first slot)."""
        i = self._slot_of.get(id(a))
        if i is None:
            i = self._new(a)
        self.inputs.append(i)
        return i

    def slot(self, a):
        """The slot of a known array, or None."""
        return self._slot_of.get(id(a))

    def refuse(self, why):
        if self.refused is None:
            self.refused = why + _where()

    # -- the templates -------------------------------------------------------------------------------
    def _arg(self, v, name):
        t = type(v)
        if t in (int, float, bool, str, type(None)) or isinstance(v, (ember.dtypes.DType, Generator)):
            return v
        if t is tuple or t is list:
            return t(self._arg(x, name) for x in v)
        if t is ember.Tensor:
            return TensorSlot(self._known(v._data, name), v.shape, v.dtype)
        if isinstance(v, (tuple, list)):  # a subclass (an optimizer's fed values) as the plain kind
            return (tuple if isinstance(v, tuple) else list)(self._arg(x, name) for x in v)
        if t is dict:
            return {k: self._arg(x, name) for k, x in v.items()}
        if callable(v) and not hasattr(v, "shape"):
            return v  # a function argument (a composite's callback)
        return Slot(self._known(v, name))

    def _known(self, a, name):
        i = self._slot_of.get(id(a))
        if i is None:
            if id(a) in self._born:
                self.refuse("%s read an array made outside the device's primitives (%s)"
                            % (name, type(a).__name__))
            i = self._new(a)  # made before the step (a cached constant): arrays are values
            self.consts.add(i)
        return i

    def _out(self, r, name):
        t = type(r)
        if t is tuple or t is list:
            return t(self._out(x, name) for x in r)
        if t is ember.Tensor:
            return TensorSlot(self._new(r._data), r.shape, r.dtype)
        if r is None or t in (int, float, bool):
            return r
        return Slot(self._new(r))

    # -- the hooks -----------------------------------------------------------------------------------
    def start(self):
        if _active:
            raise RuntimeError("capture: a step is already being recorded")
        # every class along the base's bases: a device equal to the base (ember.Cpu(kernels="python")
        # beside the C-backed Cpu) may run some of the step's ops, and its calls are the step's too
        from ember.backend import Backend
        # (Backend itself too: its default ``random`` draws on the host; calls from devices that are
        # not the base pass through)
        classes = [c for c in self.cls.__mro__ if c is not object]
        todo = [c for c in classes if c is not Backend]
        while todo:  # and their subclasses: a C-backed Cpu beside a pure one
            for sub in todo.pop().__subclasses__():
                if sub not in classes:
                    classes.append(sub)
                    todo.append(sub)
        for cls in classes:
            for name in PRIMITIVES + ("random",):
                if name in cls.__dict__:
                    self._saved.append((cls, name, cls.__dict__[name], True))
                    setattr(cls, name, self._primitive(name, cls.__dict__[name]))
        self._watch_births()
        self._saved.append((_composite, "run", _composite.run, True))
        _composite.run = self._composite(_composite.run)
        for cls in _compilers():
            self._saved.append((cls, "run", cls.__dict__["run"], True))
            cls.run = self._kernel(cls.__dict__["run"])
        schedule = sys.modules.get("ember.accel.fusion.schedule")
        if schedule is not None:  # no prepared calls around the wrapped ``run``s
            self._saved.append((schedule, "WATCHED", schedule.WATCHED, True))
            schedule.WATCHED = True
        self._saved.append((Generator, "next_u32", Generator.next_u32, True))
        Generator.next_u32 = self._draw(Generator.next_u32)
        _active.append(self)
        if self.recorder is not None:
            self.recorder.start(self)

    def stop(self):
        if self.recorder is not None:
            self.recorder.stop()
        for owner, name, value, had in reversed(self._saved):
            if had:
                setattr(owner, name, value)
            else:
                delattr(owner, name)
        self._saved = []
        if _active and _active[-1] is self:
            _active.pop()

    def _append(self, e):
        e.index = len(self.entries)
        self.entries.append(e)

    def _watch_births(self):
        """Note every array of the inputs' class made from now on, so that an unknown array can be told
        apart: made during the step (work the trace did not see) or before it (a cached constant)."""
        if not self.arrays:
            return
        cls = type(self.arrays[0])
        init = cls.__dict__.get("__init__")
        if init is None or getattr(cls, "__module__", "builtins") == "builtins":
            return  # numpy's ndarray: an unknown array counts as made before the step
        born = self._born

        me = self.thread

        def watched(a, *args, **kwargs):
            init(a, *args, **kwargs)
            if _thread_id() == me:
                born[id(a)] = a

        try:
            cls.__init__ = watched
        except (TypeError, AttributeError):
            return
        self._saved.append((cls, "__init__", init, True))
        self._births = True

    def _primitive(self, name, raw):
        trace = self
        if isinstance(raw, staticmethod):
            func = raw.__func__

            def method(dev, *args):
                return func(*args)
        else:
            method = raw

        def recorded(dev, *args):
            if trace._depth or dev is not trace.base and dev != trace.base or _thread_id() != trace.thread:
                return method(dev, *args)
            if name in READS and not checking.depth:
                trace.refuse("the step reads values to the host (%s): they would be frozen in a replay"
                             % name)
            template = trace._arg(args, name)
            if name == "random":
                for g in args:
                    if isinstance(g, Generator) and all(g is not h for h, _ in trace.generators):
                        trace.generators.append((g, g.get_state()))
            trace._depth += 1
            try:
                r = method(dev, *args)
            finally:
                trace._depth -= 1
            if name in READS:
                return r
            out = trace._out(r, name)
            if name in DATA:
                trace.consts.add(out.i)
            trace._append(Entry("primitive", name, template, None, out))
            return r

        return recorded

    def _composite(self, run):
        trace = self

        def recorded(device, name, args, kwargs):
            if trace._depth or device is not trace.base and device != trace.base or _thread_id() != trace.thread:
                return run(device, name, args, kwargs)
            fn = _composite.resolve(type(device), name)[0]
            if fn is None:  # the body: its primitives record themselves
                return run(device, name, args, kwargs)
            template = trace._arg(tuple(args), name)
            kw = trace._arg(dict(kwargs), name)
            trace._depth += 1
            try:
                r = fn(*args, **kwargs)
            finally:
                trace._depth -= 1
            trace._append(Entry("composite", name, template, kw, trace._out(r, name), fn))
            return r

        return recorded

    def _kernel(self, run):
        """A fused kernel that ``Fusion`` launches (its compiler's ``run``) is one entry, as a fused
        composite is: a replay runs the same kernel again on the slots it read."""
        trace = self

        def recorded(compiler, kernel, space, inputs):
            if trace._depth or _thread_id() != trace.thread:
                return run(compiler, kernel, space, inputs)
            template = trace._arg((tuple(space), [tuple(x) for x in inputs]), "a fused kernel")
            trace._depth += 1
            try:
                r = run(compiler, kernel, space, inputs)
            finally:
                trace._depth -= 1
            trace._append(Entry("composite", "fused kernel", template, {}, trace._out(r, "a fused kernel"),
                                _Launch(run, compiler, kernel)))
            return r

        return recorded

    def _draw(self, next_u32):
        trace = self

        def draw(g):
            if not trace._depth and _thread_id() == trace.thread:
                trace.refuse("the step draws random numbers on the host (outside a device primitive): "
                             "a replay would repeat them")
            return next_u32(g)

        return draw

    # -- host values the step declares -----------------------------------------------------------------
    def add_hook(self, fn):
        self.host.append(("hook", fn))

    def add_feed(self, t, fn):
        """``t`` (a tensor the step made from ``fn()`` just now) is remade from ``fn()`` on each replay."""
        from ember.backend import chain, unwrap_to
        a = unwrap_to(t.device, t._data, chain(t.device)[-1])
        i = self._slot_of.get(id(a))
        if i is None or i not in self.consts:
            self.refuse("feed: the tensor was not made by one data primitive of this step")
            return
        self.feeds[i] = (fn, t.shape, t.dtype)
        self.host.append(("feed", i))
