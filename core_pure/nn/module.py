"""``Module`` and ``Param``: models as plain classes whose parameters the base class finds.

    class Net(Module):
        def __init__(self):
            super().__init__()
            self.fc1 = Linear(784, 128)     # a submodule: its params are fc1.weight, fc1.bias
            self.scale = Param(ember.ones(1))

        def forward(self, x):
            return self.fc1(x) * self.scale   # reading a Param attribute gives its Tensor

Reading a parameter attribute (``layer.weight``) gives its current value, a plain ``Tensor``, so
every tensor op and ``ember.nn.functional`` takes it. The ``Param`` object itself (its ``id``,
``requires_grad``) comes from ``named_parameters()`` or ``get_parameter("fc1.weight")``. Assigning
a Tensor to a parameter's name replaces its value and keeps its id (what an optimizer step does);
assigning a ``Param`` registers a new parameter. Assigning another parameter's current value ties
the two names to one ``Param``, as PyTorch does (``lm_head.weight = wte.weight``): both modules
read its updates, an optimizer updates it once, gradients from both uses add, and ``save`` writes
it once.

What the base class finds, in the order attributes were first assigned (also on MicroPython, whose
dicts are unordered): ``Param``s, ``Module``s, ``Tensor``s (buffers: saved, never trained; use
``register_buffer(name, t, persistent=False)`` for one that is not saved) and lists, tuples and
dicts holding modules or params (named ``layers.0``, ``blocks.key``; a plain dict's keys in sorted
order, a ``ModuleDict``'s in insertion order). Names and their order follow PyTorch's
``state_dict``: per module, its own parameters, then its buffers, then each child's, depth first.
"""
from .. import dtypes
from ..errors import ArgumentError, ArgumentTypeError, RecordError
from ..backend import grad_device
from ..tensor import Tensor, grad_node

import sys

_counter = [0]
_UNORDERED_DICTS = sys.implementation.name == "micropython"


def _next_id():
    _counter[0] += 1
    return _counter[0]


class Param:
    """A trainable tensor with a unique ``id`` (gradients are keyed by it) and a ``requires_grad``
    flag. ``param.value`` is the current Tensor; ``shape``, ``dtype`` and ``device`` are its.

    On a device that records gradients (``ember.accel.Autodiff``), a float parameter that requires
    grad is always a leaf keyed by its id: ``module.to(Autodiff(Cpu()))``, ``load`` and optimizer
    steps need no extra call before ``loss.backward()``.
    """

    __slots__ = ("id", "_value", "_requires_grad", "grad")

    def __init__(self, value, requires_grad=True, id=None):
        if type(value) is not Tensor:
            raise ArgumentTypeError("Param: expected a Tensor value, found %s" % type(value).__name__)
        self.id = _next_id() if id is None else id
        self._requires_grad = bool(requires_grad)
        self.grad = None  # set by loss.backward() for the parameters of an optimizer (PyTorch's loop)
        self.value = value

    @property
    def value(self):
        """The parameter's current Tensor; assigning a Tensor replaces it and keeps the id."""
        return self._value

    @value.setter
    def value(self, t):
        v = _as_leaf(t, self.id, self._requires_grad)
        v._param = self  # so that assigning this tensor to another module ties it (Module.__setattr__)
        self._value = v

    def _take_leaf(self, t):
        """Take ``t`` as the value without ``value``'s checks: ``t`` is already this parameter's leaf
        (a captured step's replay makes it as the recorded step's ``value`` did)."""
        t._param = self
        self._value = t

    @property
    def requires_grad(self):
        """Whether optimizers train this parameter and ``backward`` computes its gradient."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self._requires_grad = bool(flag)
        self._value = _as_leaf(self._value, self.id, self._requires_grad)

    @property
    def shape(self):
        """The value's shape."""
        return self.value.shape

    @property
    def dtype(self):
        """The value's dtype."""
        return self.value.dtype

    @property
    def device(self):
        """The value's device."""
        return self.value.device

    @property
    def ndim(self):
        """The value's number of dims."""
        return len(self.value.shape)

    def dim(self):
        """The value's number of dims."""
        return len(self.value.shape)

    def numel(self):
        """The number of elements of the value."""
        return self.value.numel()

    def __repr__(self):
        return "Param(id=%d, shape=%s, dtype=%s%s)" % (self.id, self.value.shape, self.value.dtype.name,
                                                      "" if self.requires_grad else ", requires_grad=False")


def _as_leaf(t, id, requires_grad):
    """``t`` as a parameter holds it: on a recording device, a leaf keyed by ``id`` (or detached)."""
    if grad_device(t.device) is None or t.dtype.kind != "f":
        return t
    node = grad_node(t)
    if not requires_grad:
        return t.detach() if node is not None else t
    if node is not None and node.id == id and node.is_leaf:
        return t
    return t.require_grad(id=id)


def owner(t):
    """The ``Param`` whose current value is the tensor ``t``, or None."""
    try:
        p = t._param
    except AttributeError:
        return None
    return p if p is not None and p._value is t else None


def _join(prefix, name):
    return prefix + "." + name if prefix else name


def _is_module(v):
    return isinstance(v, Module)


def _init_state(m):
    # object.__setattr__: these must not pass through Module.__setattr__ (and obj.__dict__[k] = v
    # fails on MicroPython)
    object.__setattr__(m, "_names", [])  # tracked attribute names, first-assignment order
    object.__setattr__(m, "_params", {})  # name -> Param (kept out of the instance dict, see __getattr__)
    object.__setattr__(m, "_transient", [])  # buffers that are not saved
    object.__setattr__(m, "training", True)


class LoadReport:
    """What ``Module.load(path, strict=False)`` found: names ``missing`` from the file, names in the
    file the module does not have (``unexpected``), and ``mismatched`` (name, expected, found)."""

    def __init__(self, missing, unexpected, mismatched):
        self.missing = missing
        self.unexpected = unexpected
        self.mismatched = mismatched

    @property
    def ok(self):
        """Whether every tensor loaded: nothing missing, unexpected or mismatched."""
        return not (self.missing or self.unexpected or self.mismatched)

    def describe(self):
        """A one-line summary of what did not load, for messages."""
        parts = []
        if self.missing:
            parts.append("missing %s" % ", ".join(self.missing))
        if self.unexpected:
            parts.append("unexpected %s" % ", ".join(self.unexpected))
        if self.mismatched:
            parts.append("mismatched %s" % ", ".join("%s (expected %s, found %s)" % m for m in self.mismatched))
        return "; ".join(parts) or "all tensors loaded"

    def __repr__(self):
        return "LoadReport(%s)" % self.describe()


class Module:
    """Base class of every layer and model: subclass it, assign parameters and submodules as
    attributes in ``__init__``, write ``forward``; calling the module calls ``forward``."""

    def __init__(self):
        try:
            self._names
        except AttributeError:  # (already there when a subclass assigned attributes first)
            _init_state(self)

    # -- attributes ------------------------------------------------------------------------------
    def __setattr__(self, name, value):
        try:
            params = self._params
        except AttributeError:  # a subclass assigned before calling Module.__init__
            _init_state(self)
            params = self._params
        if type(value) is Tensor:
            tied = owner(value)
            if tied is not None:  # another parameter's value: share that parameter
                value = tied
        if type(value) is Param:
            params[name] = value
            try:
                object.__delattr__(self, name)
            except AttributeError:
                pass
            self._track(name)
            return
        if name in params:
            if type(value) is Tensor:
                params[name].value = value  # a new value for the same parameter (same id)
                return
            del params[name]
        object.__setattr__(self, name, value)
        if type(value) is Tensor or isinstance(value, (Module, list, tuple, dict)):
            self._track(name)

    def __getattr__(self, name):
        # only called when ordinary lookup fails: parameters live in _params
        if name[:1] != "_":
            p = self._params.get(name)
            if p is not None:
                return p.value
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        if name in self._params:
            del self._params[name]
        else:
            object.__delattr__(self, name)
        if name in self._names:
            self._names.remove(name)

    def _track(self, name):
        if name not in self._names:
            self._names.append(name)

    def register_buffer(self, name, tensor, persistent=True):
        """Keep ``tensor`` as a buffer; ``persistent=False`` leaves it out of saved records."""
        if type(tensor) is not Tensor:
            raise ArgumentTypeError("register_buffer: expected a Tensor for %r, found %s"
                                    % (name, type(tensor).__name__))
        setattr(self, name, tensor)
        if not persistent and name not in self._transient:
            self._transient.append(name)

    def register_parameter(self, name, param):
        """``setattr(self, name, param)``; PyTorch's spelling, also accepting ``None``."""
        setattr(self, name, param)

    def _items(self):
        """(name, thing) for this module's own params, buffers and child modules, in order."""
        out = []
        params = self._params
        for name in self._names:
            v = params.get(name)
            if v is None:
                v = getattr(self, name, None)
            t = type(v)
            if t is Param or t is Tensor or isinstance(v, Module):
                out.append((name, v))
            elif t is list or t is tuple:
                for i, item in enumerate(v):
                    if type(item) is Param or isinstance(item, Module):
                        out.append((name + "." + str(i), item))
            elif t is dict:
                for k in sorted(v, key=str):
                    item = v[k]
                    if type(item) is Param or isinstance(item, Module):
                        out.append((name + "." + str(k), item))
        return out

    # -- calling ------------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        """The module's computation; subclasses define it, and calling the module calls it."""
        raise NotImplementedError("%s.forward is not defined" % type(self).__name__)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # -- the tree -----------------------------------------------------------------------------------
    def _walk(self, unique=True):
        """(dotted name, module) for every module, this one first, depth first (iterative: boards
        have a shallow stack). ``unique`` lists a module shared under two names once."""
        out = []
        seen = set()
        stack = [("", self)]
        while stack:
            name, m = stack.pop()
            if unique:
                if id(m) in seen:
                    continue
                seen.add(id(m))
            out.append((name, m))
            children = [(n, v) for n, v in m._items() if isinstance(v, Module)]
            for n, v in reversed(children):
                stack.append((_join(name, n), v))
        return out

    def named_modules(self):
        """[(dotted name, module)], this module first with name ""."""
        return self._walk()

    def modules(self):
        """Every module of the tree, this one first, depth first (a shared module once)."""
        return [m for _, m in self._walk()]

    def named_children(self):
        """[(name, module)] for the direct submodules, in assignment order."""
        return [(n, v) for n, v in self._items() if isinstance(v, Module)]

    def children(self):
        """The direct submodules, in assignment order."""
        return [v for _, v in self.named_children()]

    def named_parameters(self):
        """[(dotted name, Param)] in PyTorch's order; a parameter shared by two modules once."""
        out = []
        seen = set()
        for prefix, m in self._walk():
            for n, v in m._items():
                if type(v) is Param and id(v) not in seen:
                    seen.add(id(v))
                    out.append((_join(prefix, n), v))
        return out

    def parameters(self):
        """Every ``Param`` of the tree, in ``named_parameters`` order (a shared one once)."""
        return [p for _, p in self.named_parameters()]

    def named_buffers(self):
        """[(dotted name, Tensor)] for every buffer, saved or not."""
        out = []
        for prefix, m in self._walk():
            for n, v in m._items():
                if type(v) is Tensor:
                    out.append((_join(prefix, n), v))
        return out

    def buffers(self):
        """Every buffer Tensor of the tree, saved or not."""
        return [b for _, b in self.named_buffers()]

    def _slots(self):
        """(name, tensor, setter) for every saved tensor, in ``state_dict`` order: a tied
        parameter (or a module shared under two names) under each of its names."""
        return [(n, t, set_) for n, t, set_, _ in self._keyed_slots()]

    def _keyed_slots(self):
        """``_slots`` with a fourth item, the same object for the names of one tensor."""
        out = []
        for prefix, m in self._walk(unique=False):
            items = m._items()
            for n, v in items:
                if type(v) is Param:
                    out.append((_join(prefix, n), v.value, _param_setter(v), v))
            for n, v in items:
                if type(v) is Tensor and n not in m._transient:
                    out.append((_join(prefix, n), v, _buffer_setter(m, n), (id(m), n)))
        return out

    def _tensor_groups(self):
        """[(names, tensor, setter)], each saved tensor once with all its names (state_dict order)."""
        groups, index = [], {}
        for n, t, set_, key in self._keyed_slots():
            k = id(key) if type(key) is Param else key
            i = index.get(k)
            if i is None:
                index[k] = len(groups)
                groups.append(([n], t, set_))
            else:
                groups[i][0].append(n)
        return groups

    def named_tensors(self):
        """[(dotted name, Tensor)]: what PyTorch's ``state_dict`` holds: parameter values and
        saved buffers, a tied one under each of its names (``save`` writes it once)."""
        return [(n, t) for n, t, _ in self._slots()]

    def state_dict(self):
        """``named_tensors()`` as a dict (unordered on MicroPython: use named_tensors for order)."""
        out = {}
        for n, t in self.named_tensors():
            out[n] = t
        return out

    def load_state_dict(self, tensors, strict=True):
        """Set parameters and buffers from a dict (``OrderedDict`` and other mappings too) or a
        list of (name, Tensor); see ``load``."""
        op = "Module.load_state_dict"
        if hasattr(tensors, "items"):
            pairs = list(tensors.items())
        elif type(tensors) in (list, tuple):
            pairs = list(tensors)
        else:
            raise ArgumentTypeError("%s: expected a mapping or a list of (name, Tensor), found %s"
                                    % (op, type(tensors).__name__))
        found = {}
        for pair in pairs:
            if type(pair) not in (tuple, list) or len(pair) != 2 or type(pair[0]) is not str:
                raise ArgumentTypeError("%s: expected (name, Tensor) pairs, found %r" % (op, _clip(pair)))
            if type(pair[1]) is not Tensor:
                pair = (pair[0], _foreign(pair[0], pair[1], op))
            found[pair[0]] = pair[1]
        report = self._fit([(n, found[n].shape, found[n].dtype) for n, _ in pairs], op, strict)
        for names, tensor, set_ in self._tensor_groups():
            t = _first(found, names)
            if t is not None and _fits(tensor, t.shape, t.dtype):
                set_(t.to(tensor.device).to(tensor.dtype))
        return report

    def get_submodule(self, target):
        """The module at a dotted name (``"features.0"``); "" is this module."""
        for n, m in self._walk(unique=False):
            if n == target:
                return m
        raise ArgumentError("get_submodule: %s has no submodule %r" % (type(self).__name__, target))

    def get_parameter(self, target):
        """The ``Param`` at a dotted name (``"fc1.weight"``)."""
        for n, p in self.named_parameters():
            if n == target:
                return p
        raise ArgumentError("get_parameter: %s has no parameter %r" % (type(self).__name__, target))

    def num_params(self):
        """The number of parameter values (each shared parameter counted once)."""
        total = 0
        for p in self.parameters():
            total += p.value.numel()
        return total

    # -- visiting and mapping ---------------------------------------------------------------------------
    def visit(self, fn):
        """Call ``fn(name, param)`` for every parameter, in order."""
        for n, p in self.named_parameters():
            fn(n, p)

    def map(self, fn):
        """A new module (a ``fork``: same parameter ids) whose parameter values are
        ``fn(name, param)``, a Tensor for each parameter.

        >>> halved = model.map(lambda name, p: p.value * 0.5)
        """
        out = self.fork()
        for n, p in out.named_parameters():
            value = fn(n, p)
            if type(value) is not Tensor:
                raise ArgumentTypeError("map: fn must return a Tensor for %r, found %s"
                                        % (n, type(value).__name__))
            p.value = value
        return out

    def apply(self, fn):
        """Call ``fn(module)`` for every submodule, children before their parent, this module
        last (PyTorch's order; a shared module once); returns self.

        >>> model.apply(lambda m: init.zeros_(m.bias) if isinstance(m, Linear) else None)
        """
        done = set()
        stack = [(self, False)]
        while stack:
            m, expanded = stack.pop()
            if expanded:
                fn(m)
                continue
            if id(m) in done:
                continue
            done.add(id(m))
            stack.append((m, True))
            for c in reversed(m.children()):
                if id(c) not in done:
                    stack.append((c, False))
        return self

    def zero_grad(self, set_to_none=True):
        """Forget the gradients a PyTorch-style ``loss.backward()`` left on the parameters
        (``Param.grad``); ``set_to_none`` is accepted for PyTorch's signature (they always become None)."""
        for p in self.parameters():
            p.grad = None

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    # -- device, dtype and mode --------------------------------------------------------------------------
    def to(self, target=None, dtype=None, device=None):
        """Move every parameter and buffer to a device (``ember.Cpu()``, ``"cpu"``), or cast the
        float ones to a dtype (``ember.float16``), or both (``to(device=..., dtype=...)``). Changes
        this module in place (ids kept) and returns it."""
        from ..backend import Backend
        from ..device import resolve
        from ..tensor import _is_device_name
        if isinstance(target, Backend) or (type(target) is str and _is_device_name(target)):
            device = target
        elif target is not None:
            dtype = target
        if device is None and dtype is None:
            raise ArgumentError("Module.to: expected a device or a dtype, found none")
        if device is not None:
            self._move(_to_device(resolve(device, "Module.to")))
        if dtype is not None:
            self._move(_to_dtype(dtypes.get(dtype, "Module.to")))
        return self

    def _move(self, move):
        for _, m in self._walk():
            items = m._items()
            for n, v in items:
                if type(v) is Param:
                    v.value = move(v.value)
                elif type(v) is Tensor:
                    object.__setattr__(m, n, move(v))

    def train(self, mode=True):
        """Set training mode (dropout active, batch norm on batch statistics) on every module."""
        for _, m in self._walk():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        """Set evaluation mode (``train(False)``) on every module; returns this module."""
        return self.train(False)

    # -- copies ------------------------------------------------------------------------------------------
    def fork(self):
        """A deep copy that keeps every parameter's id (gradients are keyed by it), for another
        thread or device. Buffers and parameter values are new Tensor objects; writes to either
        copy never reach the other."""
        return _copy_tree(self, keep_ids=True)

    def deepcopy(self):
        """An independent deep copy with new parameter ids (PyTorch's ``copy.deepcopy``)."""
        return _copy_tree(self, keep_ids=False)

    def __deepcopy__(self, memo):
        return self.deepcopy()

    # -- records -------------------------------------------------------------------------------------------
    def save(self, path, precision=None):
        """Write the parameters and saved buffers to a safetensors file (``precision``: None keeps
        each dtype, or "f32", "f16", "bf16"). The metadata names the module class
        (``ember_module``) and, when a Config built it, holds the config JSON (``ember_config``).

        A tensor with several names (a tied parameter, a module shared under two names) is written
        once, as ``safetensors.torch.save_model`` does: under the first of its names in sorted
        order, each other name in the metadata mapped to it; ``load`` accepts either name."""
        from .. import record
        metadata = {"ember_module": type(self).__name__}
        config = self.__dict__.get("_config")
        if config is not None:
            metadata["ember_config"] = config.to_json()
        tensors = []
        for names, t, _ in self._tensor_groups():
            kept = min(names)
            for n in names:
                if n != kept:
                    metadata[n] = kept
            tensors.append((kept, t))
        record.write(path, tensors, metadata=metadata, precision=precision)

    def load(self, path, strict=True):
        """Load parameters and buffers saved by ``save`` (or any safetensors file with PyTorch's
        names; on CPython also a ``torch.save`` checkpoint, ``.pt``/``.pth``/``.bin``, told apart by
        its first bytes and read by ``ember.accel.pytorch``; or an open reader of either, left open).
        Strict: any missing, unexpected or mismatched (shape or dtype kind) name raises a
        ``RecordError`` listing them all, before anything changes. Not strict: loads what fits
        and returns a ``LoadReport``. Float tensors are cast to the module's dtypes."""
        with _open_weights(path) as reader:
            entries = reader.entries
            op = "Module.load: %s" % (path,)
            if reader.metadata.get("ember_precision") == "int8" and \
                    not [t for _, t in self.named_tensors() if t.dtype is dtypes.int8]:
                op += " (an int8 record: ember.quant.load(model, path) converts the layers it quantizes)"
            report = self._fit([(e.name, e.shape, e.dtype) for e in entries], op, strict)
            names = {}
            for e in entries:
                names[e.name] = e
            for group, tensor, set_ in self._tensor_groups():
                e = _first(names, group)
                if e is not None and _fits(tensor, tuple(e.shape), e.dtype):
                    set_(reader.read(e.name, device=tensor.device, dtype=tensor.dtype))
        return report

    @classmethod
    def from_record(cls, path, *args, **kwargs):
        """``cls(*args, **kwargs)`` with its parameters and buffers read from the record at ``path``:
        built under ``init.skip()`` (nothing drawn, nearly no memory before the load) and loaded
        strictly, so the peak is about the loaded model's size.

        >>> model = DigitsCNN.from_record("digits_cnn.safetensors", device=ember.Cpu())
        """
        from . import init
        with init.skip():
            module = cls(*args, **kwargs)
        module.load(path)
        return module

    def _fit(self, found, op, strict):
        """Compare (name, shape, dtype) found with this module's tensors: a LoadReport, or a
        RecordError listing every problem when strict."""
        have = {}
        for n, shape, dtype in found:
            have[n] = (shape, dtype)
        missing, mismatched, mine = [], [], {}
        for names, tensor, _ in self._tensor_groups():  # a tied tensor is there if any of its names is
            for name in names:
                mine[name] = True
                f = have.get(name)
                if f is not None and not _fits(tensor, f[0], f[1]):
                    mismatched.append((name, _describe(tensor.shape, tensor.dtype), _describe(f[0], f[1])))
            if _first(have, names) is None:
                missing.extend(names)
        unexpected = [n for n, _, _ in found if n not in mine]
        report = LoadReport(missing, unexpected, mismatched)
        if strict and not report.ok:
            raise RecordError("%s: does not fit %s: %s" % (op, type(self).__name__, report.describe()))
        return report

    # -- printing ------------------------------------------------------------------------------------------
    def extra_repr(self):
        """The text inside this module's parentheses in ``repr`` (layers override it)."""
        return ""

    def __repr__(self):
        lines = []
        stack = [("", self, 0, False)]
        while stack:
            name, m, depth, closing = stack.pop()
            pad = "  " * depth
            if closing:
                lines.append(pad + ")")
                continue
            head = pad + ("(%s): " % name if name else "") + type(m).__name__ + "("
            count = m.num_params()
            note = "  # %s params" % _thousands(count) if count else ""
            children = m.named_children()
            extra = m.extra_repr()
            if not children:
                lines.append(head + extra + ")" + note)
                continue
            lines.append(head + note)
            if extra:
                lines.append(pad + "  " + extra)
            stack.append(("", m, depth, True))
            for n, c in reversed(children):
                stack.append((n, c, depth + 1, False))
        return "\n".join(lines)


def _first(found, names):
    """The value in ``found`` of the first of ``names`` it holds, or None."""
    for n in names:
        v = found.get(n)
        if v is not None:
            return v
    return None


def _param_setter(p):
    def set_(t):
        p.value = t
    return set_


def _buffer_setter(m, name):
    def set_(t):
        object.__setattr__(m, name, t)
    return set_


def _to_device(device):
    return lambda t: t.to(device)


def _to_dtype(dtype):
    return lambda t: t.to(dtype) if t.dtype.kind == "f" else t


def _foreign(name, value, op):
    """A value of another library (numpy array, PyTorch tensor) as a Tensor: ``ember.accel`` on
    CPython, else through its ``tolist()`` and ``shape``."""
    try:
        from ember.accel.pytorch.foreign import to_ember
    except ImportError:
        to_ember = None
    if to_ember is not None:
        return to_ember(value, name, op)
    if type(value) in (list, tuple) or not hasattr(value, "tolist") or not hasattr(value, "shape"):
        raise ArgumentTypeError("%s: expected a Tensor for %r, found %s" % (op, name, type(value).__name__))
    from ..creation import tensor
    return tensor(value.tolist()).reshape(tuple(value.shape))


class _Borrowed:
    """A reader the caller opened, used in a ``with`` that must not close it."""

    def __init__(self, reader):
        self.reader = reader

    def __enter__(self):
        return self.reader

    def __exit__(self, *exc):
        return False


def _open_weights(path):
    """A reader of the weights at ``path`` by its first bytes: a zip or pickle is a PyTorch
    checkpoint (``ember.accel.pytorch``, CPython only), anything else a safetensors record. An
    object with ``entries`` and ``read`` is already a reader: the caller's, not closed here."""
    if hasattr(path, "entries") and hasattr(path, "read"):
        return _Borrowed(path)
    from .. import record
    from ..record.reader import fspath
    p = fspath(path, "Module.load")
    with open(p, "rb") as f:
        head = f.read(9)
    # a legacy checkpoint opens with a pickle (0x80, protocol 2-5); a safetensors file with its
    # 8-byte header length, then "{"
    if head[:4] == b"PK\x03\x04" or (head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")
                                     and head[8:9] != b"{"):
        try:
            from ember.accel.pytorch import open as open_checkpoint
        except ImportError as e:
            raise RecordError("Module.load: %s: found a PyTorch checkpoint (%s); reading one needs "
                              "ember.accel on CPython (%s); `ember convert` turns it into safetensors"
                              % (p, "zip" if head[:1] == b"P" else "pickle", e))
        return open_checkpoint(p)
    try:
        return record.open(p)
    except RecordError as e:
        raise RecordError("%s (found: %s)" % (e, _sniff(p)))


def _sniff(path):
    """What the file at ``path`` holds, as ``ember convert`` names it (CPython), else "not safetensors"."""
    try:
        from ember.accel.cli.formats import sniff
    except ImportError:
        return "not a safetensors record"
    return sniff(path)


def _fits(tensor, shape, dtype):
    """A stored tensor fits a module tensor when shapes are equal and the dtype kinds agree
    (any float precision loads into a float tensor)."""
    if type(dtype) is not dtypes.DType:
        dtype = dtypes.get(dtype)
    return tuple(shape) == tensor.shape and dtype.kind == tensor.dtype.kind


def _describe(shape, dtype):
    name = dtype.name if type(dtype) is dtypes.DType else str(dtype)
    return "%s %s" % (name, tuple(shape))


def _thousands(n):
    s = str(n)
    groups = []
    while len(s) > 3:
        groups.insert(0, s[-3:])
        s = s[:-3]
    groups.insert(0, s)
    return ",".join(groups)


def _copy_tree(root, keep_ids):
    """A copy of every module below ``root`` (sharing preserved), built without recursion."""
    memo = {}
    modules = root._walk()
    for _, m in modules:
        memo[id(m)] = object.__new__(type(m))

    def copy_value(v):
        t = type(v)
        if t is Tensor:
            return v.clone()
        if t is Param:
            p = memo.get(id(v))
            if p is None:
                p = Param(v.value.clone(), v.requires_grad, v.id if keep_ids else None)
                memo[id(v)] = p
            return p
        if isinstance(v, Module):
            return memo.get(id(v), v)  # a module nested deeper than the tree finds stays shared
        if t is list:
            return [copy_value(x) for x in v]
        if t is tuple:
            return tuple(copy_value(x) for x in v)
        if t is dict:
            out = {}
            for k in v:
                out[k] = copy_value(v[k])
            return out
        return v

    for _, m in modules:
        new = memo[id(m)]
        for k, v in m.__dict__.items():
            object.__setattr__(new, k, copy_value(v))
    return memo[id(root)]


class Sequential(Module):
    """Modules called in order, each on the previous one's output; children are named "0", "1", ...

    >>> model = Sequential(Linear(784, 128), ReLU(), Linear(128, 10))
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and type(modules[0]) in (list, tuple):
            modules = modules[0]
        object.__setattr__(self, "_list", [])
        for m in modules:
            self.append(m)

    def append(self, module):
        """Add ``module`` at the end; returns this container."""
        if not isinstance(module, Module):
            raise ArgumentTypeError("%s.append: expected a Module, found %s"
                                    % (type(self).__name__, type(module).__name__))
        self._list.append(module)
        return self

    def extend(self, modules):
        """Add each of ``modules`` at the end; returns this container."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``."""
        if not isinstance(module, Module):
            raise ArgumentTypeError("%s.insert: expected a Module, found %s"
                                    % (type(self).__name__, type(module).__name__))
        self._list.insert(index, module)

    def _items(self):
        return [(str(i), m) for i, m in enumerate(self._list)] + Module._items(self)

    def __getitem__(self, index):
        if type(index) is slice:
            return type(self)(self._list[index])
        return self._list[index]

    def __setitem__(self, index, module):
        if not isinstance(module, Module):
            raise ArgumentTypeError("%s: expected a Module, found %s" % (type(self).__name__, type(module).__name__))
        self._list[index] = module

    def __len__(self):
        return len(self._list)

    def __iter__(self):
        return iter(self._list)

    def forward(self, x):
        """``x`` through every module in order."""
        for m in self._list:
            x = m(x)
        return x


class ModuleList(Sequential):
    """A list of modules, named "0", "1", ...; it has no forward of its own."""

    def forward(self, *args, **kwargs):
        """A ``ModuleList`` has no forward: iterate over it (raises NotImplementedError)."""
        raise NotImplementedError("ModuleList has no forward: iterate over it")


class ModuleDict(Module):
    """Modules by name, in insertion order (kept on MicroPython too)."""

    def __init__(self, modules=None):
        super().__init__()
        object.__setattr__(self, "_keys", [])
        object.__setattr__(self, "_dict", {})
        if modules is not None:
            self.update(modules)

    def update(self, modules):
        """Add modules from a mapping (in its order; a plain dict's keys sorted on MicroPython,
        whose dicts have none) or from (key, module) pairs."""
        pairs = list(modules.items()) if hasattr(modules, "items") else modules
        if type(modules) is dict and _UNORDERED_DICTS:
            pairs = sorted(pairs)
        for k, m in pairs:
            self[k] = m

    def __getattr__(self, name):
        # ``blocks.encoder`` reads the module stored under "encoder" (PyTorch's attribute access)
        if name[:1] != "_":
            m = self._dict.get(name)
            if m is not None:
                return m
        return Module.__getattr__(self, name)

    def __setattr__(self, name, value):
        if name[:1] != "_" and isinstance(value, Module):
            self[name] = value
        else:
            Module.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._dict:
            del self[name]
        else:
            Module.__delattr__(self, name)

    def __setitem__(self, key, module):
        if type(key) is not str:
            raise ArgumentTypeError("ModuleDict: keys must be str, found %s" % type(key).__name__)
        if not isinstance(module, Module):
            raise ArgumentTypeError("ModuleDict: expected a Module for %r, found %s" % (key, type(module).__name__))
        if key not in self._dict:
            self._keys.append(key)
        self._dict[key] = module

    def __getitem__(self, key):
        return self._dict[key]

    def __delitem__(self, key):
        del self._dict[key]
        self._keys.remove(key)

    def __contains__(self, key):
        return key in self._dict

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(list(self._keys))

    def keys(self):
        """The names, in insertion order."""
        return list(self._keys)

    def values(self):
        """The modules, in insertion order."""
        return [self._dict[k] for k in self._keys]

    def items(self):
        """[(name, module)], in insertion order."""
        return [(k, self._dict[k]) for k in self._keys]

    def _items(self):
        return self.items() + Module._items(self)


def _clip(v, n=60):
    """``v`` as a short repr for an error message."""
    text = repr(v)
    return text if len(text) <= n else text[:n] + "..."
