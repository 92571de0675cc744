"""``Config``: a layer's hyperparameters as declared fields with defaults; ``init`` builds the layer.

    >>> cfg = LinearConfig(784, 128, bias=False)
    >>> layer = cfg.init(ember.Cpu())
    >>> LinearConfig.from_json(cfg.to_json()) == cfg
    True

A config class declares its fields, in order, as ``FIELDS``: ``(name, default, check)`` triples
(``REQUIRED`` marks a field without a default). A check is one of the names in ``CHECKS`` (ending
in ``?`` to also accept ``None``) or a tuple of allowed values; a field whose default is ``None``
also accepts ``None``. Bad values raise ``ArgumentError`` naming the class and the field.

Field names: model dimensions use Burn's config names (``d_input``, ``d_output``, ``d_model``,
``d_ff``, ``d_hidden``, ``n_heads``, ``n_layers``, ``n_embedding``); every other field keeps the
name of the layer's PyTorch-style constructor argument (``kernel_size``, ``eps``, ``bias``, ...).
A config whose fields are its layer's arguments, in order, only names the class (``MODULE =
MaxPool2d``); the others override ``build`` and say in their docstring what they call.
"""
import json

from ..errors import ArgumentError, ArgumentTypeError


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()


def _num(v):
    return type(v) is int or type(v) is float


def _ints(v, low):
    if type(v) is int:
        return v >= low
    return type(v) in (tuple, list) and len(v) > 0 and all(type(i) is int and i >= low for i in v)


# check name -> (test, what it expects)
CHECKS = {
    "int": (lambda v: type(v) is int, "an int"),
    "int>0": (lambda v: type(v) is int and v > 0, "an int > 0"),
    "int>=0": (lambda v: type(v) is int and v >= 0, "an int >= 0"),
    "float": (_num, "a number"),
    "float>0": (lambda v: _num(v) and v > 0, "a number > 0"),
    "float>=0": (lambda v: _num(v) and v >= 0, "a number >= 0"),
    "prob": (lambda v: _num(v) and 0 <= v <= 1, "a probability in [0, 1]"),
    "bool": (lambda v: type(v) is bool, "True or False"),
    "str": (lambda v: type(v) is str, "a str"),
    "size": (lambda v: _ints(v, 1), "an int > 0 or a tuple of them"),
    "size>=0": (lambda v: _ints(v, 0), "an int >= 0 or a tuple of them"),
    "padding": (lambda v: v in ("valid", "same") or _ints(v, 0), "an int >= 0, a tuple of them, 'valid' or 'same'"),
}


class Config:
    """Base of every layer config: positional or keyword fields, validated on construction."""

    FIELDS = ()
    MODULE = None  # the module class build() calls with the fields, in order, when not overridden

    def __init__(self, *args, **kwargs):
        cls = type(self).__name__
        fields = self.FIELDS
        if len(args) > len(fields):
            raise ArgumentError("%s: expected at most %d fields (%s), found %d positional values"
                                % (cls, len(fields), ", ".join(f[0] for f in fields), len(args)))
        values = {}
        for f, v in zip(fields, args):
            values[f[0]] = v
        names = [f[0] for f in fields]
        for k in kwargs:
            if k not in names:
                raise ArgumentError("%s: unknown field %r; fields are %s" % (cls, k, ", ".join(names)))
            if k in values:
                raise ArgumentError("%s: field %r given twice" % (cls, k))
            values[k] = kwargs[k]
        for f in fields:
            v = values.get(f[0], f[1])
            if v is REQUIRED:
                raise ArgumentError("%s: missing required field %r" % (cls, f[0]))
            setattr(self, f[0], tuple(v) if type(v) is list else v)
        self.check()

    def check(self):
        """Raise ``ArgumentError`` naming the first field whose value its check refuses."""
        cls = type(self).__name__
        for f in self.FIELDS:
            name, default = f[0], f[1]
            v = getattr(self, name)
            if len(f) < 3 or f[2] is None or (v is None and default is None):
                continue
            spec = f[2]
            if type(spec) is tuple:
                if v not in spec:
                    raise ArgumentError("%s: %s must be one of %s, found %s"
                                        % (cls, name, ", ".join(repr(s) for s in spec), _show(v)))
                continue
            if spec[-1] == "?":  # None allowed
                if v is None:
                    continue
                spec = spec[:-1]
            test, what = CHECKS[spec]
            if not test(v):
                raise ArgumentError("%s: %s must be %s, found %s" % (cls, name, what, _show(v)))
        self.validate()

    def validate(self):
        """Checks across fields (``d_model % n_heads == 0``); subclasses override it."""

    def values(self):
        """The field values, in declaration order."""
        return [getattr(self, f[0]) for f in self.FIELDS]

    def replace(self, **changes):
        """A copy with some fields changed (validated again)."""
        kwargs = {}
        for f in self.FIELDS:
            kwargs[f[0]] = getattr(self, f[0])
        for k in changes:
            kwargs[k] = changes[k]
        return type(self)(**kwargs)

    # -- building ---------------------------------------------------------------------------------
    def init(self, device=None, generator=None):
        """The module these fields describe, with parameters on ``device`` drawn from
        ``generator`` (ember's default generator when None)."""
        self.check()
        module = self.build(device, generator)
        object.__setattr__(module, "_config", self)  # Module.save writes it into the record
        return module

    def build(self, device, generator):
        """The module for these (checked) fields on ``device``; ``init`` calls it. By default ``MODULE(*values())``."""
        if self.MODULE is None:
            raise NotImplementedError("%s.build is not defined" % type(self).__name__)
        return self.MODULE(*self.values())

    # -- JSON ---------------------------------------------------------------------------------------
    def to_json(self):
        """The fields as a JSON object, one per line, in declaration order."""
        lines = []
        for f in self.FIELDS:
            v = getattr(self, f[0])
            try:
                text = json.dumps(list(v) if type(v) is tuple else v)
            except (TypeError, ValueError):
                raise ArgumentTypeError("%s.to_json: field %s holds %r, which JSON cannot store"
                                        % (type(self).__name__, f[0], v))
            lines.append('  "%s": %s' % (f[0], text))
        return "{\n" + ",\n".join(lines) + "\n}" if lines else "{}"

    @classmethod
    def from_json(cls, text):
        """The config a ``to_json`` text describes; unknown or bad fields raise ArgumentError."""
        if type(text) not in (str, bytes):
            raise ArgumentTypeError("%s.from_json: expected a JSON text, found %s" % (cls.__name__, type(text).__name__))
        try:
            values = json.loads(text)
        except ValueError as e:
            raise ArgumentError("%s.from_json: invalid JSON (%s)" % (cls.__name__, e))
        except RuntimeError:  # RecursionError (MicroPython: RuntimeError) on deeply nested input
            raise ArgumentError("%s.from_json: invalid JSON (nested too deeply)" % cls.__name__)
        if type(values) is not dict:
            raise ArgumentError("%s.from_json: expected a JSON object, found %s"
                                % (cls.__name__, type(values).__name__))
        return cls(**values)

    def save(self, path):
        """Write ``to_json()`` to the file ``path``."""
        with open(path, "w") as f:
            f.write(self.to_json())
            f.write("\n")

    @classmethod
    def load(cls, path):
        """The config saved in the file ``path`` (``from_json`` of its text)."""
        with open(path) as f:
            return cls.from_json(f.read())

    def __eq__(self, other):
        return type(other) is type(self) and self.values() == other.values()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % (f[0], getattr(self, f[0])) for f in self.FIELDS))


def _show(v):
    """``v`` for an error message: a container by its type and size (a nested one could be too deep to print)."""
    if type(v) in (list, tuple, dict):
        items = v.values() if type(v) is dict else v
        if [i for i in items if type(i) in (list, tuple, dict)]:
            return "a %s of %d items" % (type(v).__name__, len(v))
    return repr(v)
