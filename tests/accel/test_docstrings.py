"""Every public name shows a docstring and its real signature in ``help()`` and IDEs (issue 22).

The walk covers the public namespaces below: each module's ``__all__`` (else its names without a
leading underscore), and for each class its public methods and properties. Only functions and
classes that ember defines are checked (a module's imported ``math`` or ``json`` is not ember's API).
A class and a function need their own docstring; a method's counts as ``inspect.getdoc`` finds it,
which is what ``help()`` shows: a method that overrides a documented one (a layer's ``forward``, a
metric's ``update``) inherits its docstring.
A signature of only ``(*args, **kwargs)`` is a gap unless the function that runs really is
declared so (its code's name is its own name): a wrapper that lost the function it wraps is not.
"""
import importlib
import inspect
import types

# the layer modules are namespaces too: a board imports them one by one (ember.nn's docstring)
LAYER_MODULES = ["activation", "attention", "config", "conv", "dropout", "embedding", "flatten", "linear", "module",
                 "norm", "pool", "positional", "recurrent", "transformer"]
NAMESPACES = [
    "ember",
    "ember.backend",
    "ember.nn",
    "ember.nn.layers",
] + ["ember.nn." + m for m in LAYER_MODULES] + [
    "ember.nn.functional",
    "ember.nn.init",
    "ember.record",
    "ember.quant",
    "ember.accel",
    "ember.accel.autodiff",
    "ember.accel.fusion",
    "ember.accel.numpy",
    "ember.accel.wgpu",
    "ember.accel.optim",
    "ember.accel.optim.lr",
    "ember.accel.capture",
    "ember.accel.train",
    "ember.accel.train.metrics",
    "ember.accel.data",
    "ember.accel.deploy",
    "ember.accel.onnx",
    "ember.accel.pytorch",
    "ember.accel.distributed",
    "ember.accel.candle",
    "ember.accel.torch",
    "ember.accel.amp",
]

OPTIONAL = ("ember.accel.wgpu",)  # namespaces whose third-party module may be missing here


def _public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = dir(module)
    return [n for n in names if not n.startswith("_")]


def _ours(obj):
    return (inspect.isfunction(obj) or inspect.isclass(obj)) and \
        (getattr(obj, "__module__", None) or "").split(".")[0] == "ember"


def _members(cls):
    """(name, the class defining it, the function or property) for each public method and property
    of ``cls`` and of its ember base classes, nearest first, each name once."""
    seen = set()
    for klass in cls.__mro__:
        if not _ours(klass):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property) or inspect.isfunction(value):
                yield name, klass, value


def _fake_signature(fn):
    """Whether ``fn`` shows only ``(*args, **kwargs)`` (or ``(self, *args, **kwargs)``) although the
    function that runs is not declared so."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    kinds = [p.kind for p in params if p.name != "self"]
    if kinds != [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return False
    real = inspect.unwrap(fn)
    code = getattr(real, "__code__", None)
    return code is None or code.co_name != real.__name__


def _own_doc(obj):
    """A function's or class's own docstring (``getdoc`` would give a class its base's)."""
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else obj.__doc__
    return doc and doc.strip()


def _method_doc(cls, name, value):
    if isinstance(value, property):
        return value.__doc__ or (value.fget is not None and value.fget.__doc__)
    return inspect.getdoc(getattr(cls, name))


def walk(namespaces=NAMESPACES):
    """(every public name checked, the gaps: 'where: what is missing'); ``namespaces`` holds module
    names or modules."""
    checked, gaps, seen = [], [], set()
    for module in namespaces:
        if type(module) is str:
            try:
                module = importlib.import_module(module)
            except ImportError:
                if module in OPTIONAL:
                    continue
                raise
        modname = module.__name__
        if not inspect.getdoc(module):
            gaps.append("%s: no module docstring" % modname)
        for name in _public(module):
            obj = getattr(module, name)
            if not _ours(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            where = "%s.%s" % (modname, name)
            checked.append(where)
            if not _own_doc(obj):
                gaps.append("%s: no docstring" % where)
            if inspect.isfunction(obj) and _fake_signature(obj):
                gaps.append("%s: signature %s" % (where, inspect.signature(obj)))
            if not inspect.isclass(obj):
                continue
            init = vars(obj).get("__init__")
            if inspect.isfunction(init) and _fake_signature(init):
                gaps.append("%s: signature %s" % (where, inspect.signature(obj)))
            if issubclass(obj, BaseException):
                continue  # an error's methods are Python's own
            for mname, owner, value in _members(obj):
                key = (id(owner), mname)
                if key in seen:
                    continue
                seen.add(key)
                mwhere = "%s.%s.%s" % (owner.__module__, owner.__qualname__, mname)
                checked.append(mwhere)
                if not _method_doc(obj, mname, value):
                    gaps.append("%s: no docstring" % mwhere)
                if inspect.isfunction(value) and _fake_signature(value):
                    gaps.append("%s: signature %s" % (mwhere, inspect.signature(value)))
    return checked, gaps


def test_every_public_name_has_a_docstring_and_its_real_signature():
    checked, gaps = walk()
    assert len(checked) > 500  # the walk reached the API (a broken import list would pass vacuously)
    assert not gaps, "%d of %d public names lack a docstring or their signature:\n%s" % (
        len(gaps), len(checked), "\n".join(gaps))


def test_composites_show_the_wrapped_function():
    import ember.nn.functional as F
    from ember import composite
    sig = inspect.signature(F.gelu)
    assert list(sig.parameters) == ["x", "approximate"]
    assert sig.parameters["approximate"].default == "none"
    assert F.gelu.__name__ == "gelu"
    assert F.gelu.__qualname__ == "gelu"
    assert F.gelu.__module__ == "ember.nn.functional.activation"  # its family module (loaded on first use)
    assert F.gelu.__wrapped__ is composite.COMPOSITES["gelu"]
    assert "Φ" in F.gelu.__doc__


def test_the_walk_reports_each_gap():
    def undocumented(x):
        return x

    def declared(*args, **kwargs):
        """Really takes anything."""
        return args, kwargs

    def wrapper(*args, **kwargs):
        return undocumented(*args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = "shown"
    wrapper.__doc__ = "A wrapper that lost its function's signature."

    class Planted:
        """Documented, but not its method or its property."""

        def method(self):
            return self

        @property
        def prop(self):
            return 1

    module = types.ModuleType("ember.planted")  # no module docstring either
    for obj in (undocumented, declared, wrapper, Planted):
        obj.__module__ = "ember.planted"
        obj.__qualname__ = obj.__name__
        setattr(module, obj.__name__, obj)
    checked, gaps = walk([module])
    assert sorted(gaps) == sorted([
        "ember.planted: no module docstring",
        "ember.planted.undocumented: no docstring",
        "ember.planted.shown: signature (*args, **kwargs)",
        "ember.planted.Planted.method: no docstring",
        "ember.planted.Planted.prop: no docstring",
    ]), gaps
    assert len(checked) == 6
    wrapper.__wrapped__ = undocumented  # what composite sets: the signature shown is the function's
    assert str(inspect.signature(wrapper)) == "(x)"
    assert "ember.planted.shown: signature (*args, **kwargs)" not in walk([module])[1]
