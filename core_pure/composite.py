"""Composite ops: written once from primitives, replaceable per backend class (the override hook).

``@composite`` registers a frontend function by name. A call is resolved for the device of its
first tensor argument:

1. **An override** found along the device class's bases (``type(device).__mro__``, nearest first).
   A user's override (``Backend.override``) on any of them beats a built-in fused path
   (``register_fused``) on any of them: ``ember.Cpu.override("gelu", f)`` reaches the C-backed Cpu,
   whose fused C gelu is its built-in default. The override runs instead of the composite body.
2. **Else, on a decorator**, its ``run_composite(name, args, kwargs)`` decides. ``Decorator``'s
   default resolves down its chain: when a device below has an override, the call is unwrapped to
   the inner device, run there and its result wrapped; else the body runs on the decorator's own
   primitives. ``Autodiff`` records one node when a backward exists (``backward_for``), whatever
   forward the inner device resolves.
3. **Else the composite body.**

Resolutions are cached per (class, name); every registration clears the cache.
"""
from .backend import Decorator, chain

COMPOSITES = {}  # name -> the composite body
OVERRIDES = {}  # backend class -> {name: replacement}: users' (Backend.override); empty tables are removed
OVERRIDE_BACKWARDS = {}  # backend class -> {name: backward of that replacement}
FUSED = {}  # backend class -> {name: built-in fused path}: beaten by a user's override on any class
BACKWARDS = {}  # name -> backward of the composite, for any forward (registered by ember.accel.autodiff)
_resolved = {}  # (class, name) -> (fn or None, its backward or None)
# [policy(name, args, kwargs) -> (args, kwargs)] while ember.accel.autocast is active in some
# thread: the dtypes a composite (and matmul) takes its tensors in; empty otherwise, so a call pays
# one truth test
CAST_POLICY = []

_TENSOR = []  # [ember.Tensor], imported on first use (tensor.py imports the op modules that import this)

def _tensor_class():
    if not _TENSOR:
        from .tensor import Tensor
        _TENSOR.append(Tensor)
    return _TENSOR[0]


def composite(fn):
    """Register ``fn`` as the composite op of its name; returns the function users call, which
    resolves each call for the device of its first tensor argument (see the module doc)."""
    name = fn.__name__
    Tensor = _tensor_class()

    def dispatch(*args, **kwargs):
        if args and type(args[0]) is not Tensor:
            from .errors import ArgumentTypeError
            raise ArgumentTypeError("%s: expected a tensor as the first argument, found %s"
                                    % (name, type(args[0]).__name__))
        if CAST_POLICY:
            args, kwargs = CAST_POLICY[0](name, args, kwargs)
        if args:
            return run(args[0].device, name, args, kwargs)
        for a in kwargs.values():
            if type(a) is Tensor:
                return run(a.device, name, args, kwargs)
        return fn(*args, **kwargs)

    try:  # help() and IDEs show fn's name, doc and signature on CPython; MicroPython functions take no attributes
        dispatch.__name__ = name
        dispatch.__qualname__ = fn.__qualname__
        dispatch.__module__ = fn.__module__
        dispatch.__doc__ = fn.__doc__
        dispatch.__wrapped__ = fn  # what inspect.signature follows
    except AttributeError:
        pass
    COMPOSITES[name] = fn
    return dispatch


def run(device, name, args, kwargs):
    """Composite ``name`` on ``args`` as ``device`` resolves it (see the module doc)."""
    fn = resolve(type(device), name)[0]
    if fn is not None:
        return fn(*args, **kwargs)
    if isinstance(device, Decorator):
        return device.run_composite(name, args, kwargs)
    return COMPOSITES[name](*args, **kwargs)


def _mro(cls):
    mro = getattr(cls, "__mro__", None)
    if mro is not None:
        return mro
    out = [cls]  # MicroPython has no __mro__: walk the bases depth first
    for base in cls.__bases__:
        for c in _mro(base):
            if c not in out:
                out.append(c)
    return out


def _find(tables, cls, name):
    for c in _mro(cls):
        table = tables.get(c)
        if table is not None:
            fn = table.get(name)
            if fn is not None:
                return c, fn
    return None, None


def resolve(cls, name):
    """``(fn, backward)``: the override that devices of class ``cls`` run for composite ``name``
    (a user's on any base class first, then a built-in fused path) and the backward registered with
    it, or ``(None, None)``."""
    key = (cls, name)
    found = _resolved.get(key)
    if found is None:
        owner, fn = _find(OVERRIDES, cls, name)
        if fn is not None:
            found = (fn, OVERRIDE_BACKWARDS.get(owner, {}).get(name))
        else:
            found = (_find(FUSED, cls, name)[1], None)
        _resolved[key] = found
    return found


def overridden(device, name):
    """Whether ``device`` or a device below it (a decorator's chain) has an override for ``name``."""
    for dev in chain(device):
        if resolve(type(dev), name)[0] is not None:
            return True
    return False


def backward_for(device, name):
    """The backward a recording decorator over ``device`` uses for ``name``: the one registered with
    the first override down ``device``'s chain, else the composite's own (``BACKWARDS``), or None.
    It takes ``(grad, out, *args, **kwargs)`` and so serves whatever forward the chain runs."""
    for dev in chain(device):
        fn, backward = resolve(type(dev), name)
        if fn is not None:
            if backward is not None:
                return backward
            break
    return BACKWARDS.get(name)


def all_on(device, args, kwargs):
    """Whether every tensor among ``args`` and ``kwargs`` is on ``device`` (else the body runs and
    its first op names both devices)."""
    Tensor = _tensor_class()
    for a in args:
        if type(a) is Tensor and a.device is not device and a.device != device:
            return False
    if kwargs:
        for a in kwargs.values():
            if type(a) is Tensor and a.device is not device and a.device != device:
                return False
    return True


def unwrap_args(device, args, kwargs):
    """``args`` and ``kwargs`` with every tensor on decorator ``device`` moved to its inner device (no copy)."""
    inner = device.inner
    Tensor = _tensor_class()
    out = []
    for a in args:  # a loop, not a comprehension: this runs for every composite call on a decorator
        if type(a) is Tensor and (a.device is device or a.device == device):
            a = Tensor(device.unwrap(a._data), a.shape, a.dtype, inner)
        out.append(a)
    inner_kwargs = {}
    if kwargs:
        for k, a in kwargs.items():
            if type(a) is Tensor and (a.device is device or a.device == device):
                a = Tensor(device.unwrap(a._data), a.shape, a.dtype, inner)
            inner_kwargs[k] = a
    return out, inner_kwargs


def wrap_result(device, out):
    """A composite's result on ``device.inner`` (a tensor, or a tuple or list of them) wrapped onto decorator ``device``."""
    Tensor = _tensor_class()
    if type(out) is Tensor:
        if out.device == device.inner:
            return Tensor(device.wrap(out._data, out.shape, out.dtype), out.shape, out.dtype, device)
        return out
    if type(out) in (tuple, list):
        return type(out)(wrap_result(device, o) for o in out)
    return out


def override(cls, name, fn, backward=None):
    """A user's override on ``cls`` (``Backend.override`` documents it); returns the previous one."""
    from .errors import ArgumentError

    if type(name) is not str or name not in COMPOSITES:
        raise ArgumentError("override: expected one of the composite ops %s, found %r"
                            % (sorted(COMPOSITES), name))
    table = OVERRIDES.setdefault(cls, {})
    backwards = OVERRIDE_BACKWARDS.setdefault(cls, {})
    previous = table.get(name)
    backwards.pop(name, None)
    if fn is None:
        table.pop(name, None)
    else:
        table[name] = fn
        if backward is not None:
            backwards[name] = backward
    if not table:
        del OVERRIDES[cls]
    if not backwards:
        del OVERRIDE_BACKWARDS[cls]
    _resolved.clear()
    return previous


def register_fused(cls, table):
    """Make ``table`` ({composite name: fn}) the built-in fused paths of backend class ``cls``.

    They run where no user's override is found along the class's bases; each takes the composite's
    arguments and calls ``COMPOSITES[name]`` itself for any case it does not handle."""
    FUSED.setdefault(cls, {}).update(table)
    _resolved.clear()
