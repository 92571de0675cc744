"""The model side of a deployment: the model file's imports mapped onto ``ember.micro``, and the
model built with the full ember, checked layer by layer against what the deployment path has."""
import ast
import importlib.util
import os

from ember.errors import DeployError

# what a model file may import from ember, and where each name lives in ember.micro
_MODULE = {"Module": "module", "Sequential": "module"}
_AFFINE = {"Linear": "affine", "Conv2d": "affine"}
_LAYERS = {n: "layers" for n in ("ReLU", "MaxPool2d", "AvgPool2d", "Flatten", "Identity", "Dropout")}
FUNCTIONAL = ("relu", "max_pool2d", "avg_pool2d", "flatten", "dropout")
LAYERS = dict(_MODULE, **_AFFINE, **_LAYERS)
NAMES = {
    "ember.nn": _MODULE,
    "ember.nn.layers": LAYERS,
    "ember.nn.module": _MODULE,
    "ember.nn.linear": {"Linear": "affine"},
    "ember.nn.conv": {"Conv2d": "affine"},
    "ember.nn.activation": {"ReLU": "layers"},
    "ember.nn.pool": {"MaxPool2d": "layers", "AvgPool2d": "layers"},
    "ember.nn.flatten": {"Flatten": "layers", "Identity": "layers"},
    "ember.nn.dropout": {"Dropout": "layers"},
}
# modules a board's MicroPython has that a model file may import as they are
STDLIB = ("math", "array", "struct", "gc", "sys", "time", "micropython")
# module names a bundle already uses (its own files, and what ember.micro imports): a model file
# of one of these names would shadow it or be shadowed
TAKEN = ("main", "boot", "ember", "_plan", "json", "uctypes") + STDLIB


def parse_spec(spec):
    """``path/to/model.py:ClassName`` -> (path, class name)."""
    path, sep, cls = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not cls.isidentifier():
        raise DeployError("deploy: --model must be FILE.py:ClassName, found %r" % (spec,))
    if not os.path.isfile(path):
        raise DeployError("deploy: model file %s does not exist" % path)
    module = os.path.basename(path)[:-3]
    if not module.isidentifier() or module in TAKEN:
        raise DeployError("deploy: the model file's name must be a module name a bundle can import (an identifier, "
                          "none of %s), found %r" % (", ".join(TAKEN), os.path.basename(path)))
    return path, cls


def shims(path):
    """{module name: source} of the ``ember`` modules the model file imports, each re-exporting
    the ``ember.micro`` names it uses; a ``DeployError`` names any import a board cannot serve."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except SyntaxError as e:
        raise DeployError("deploy: %s:%s: %s" % (path, e.lineno, e.msg))
    except (UnicodeDecodeError, ValueError) as e:  # not UTF-8, or a NUL byte
        raise DeployError("deploy: %s is not Python source: %s" % (path, e))
    wanted = {}  # module -> set of names ("*F*" for the functional module itself)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                _want(wanted, a.name, None, path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise DeployError("deploy: %s:%d: relative imports are not in the deployment path" % (path, node.lineno))
            for a in node.names:
                _want(wanted, node.module, a.name, path, node.lineno)
    out = {"ember": '"""ember on a board: the deployment runtime (ember.micro) under ember\'s module names."""\n'}
    for mod, names in wanted.items():
        if mod == "ember":  # import ember: the package itself, written above
            continue
        if mod == "ember.nn.functional":
            out[mod] = "from ember.micro.functional import %s, __getattr__\n" % ", ".join(FUNCTIONAL)
            continue
        lines, table = [], NAMES[mod]
        for name in sorted(names):
            lines.append("from ember.micro.%s import %s\n" % (table[name], name))
        out[mod] = "".join(lines)
    for mod in list(out):  # every parent must exist: ember.nn.conv needs ember.nn
        parts = mod.split(".")
        for i in range(1, len(parts)):
            out.setdefault(".".join(parts[:i]), "")
    used = set()  # the ember.micro modules the shims import from
    for mod, names in wanted.items():
        if mod in NAMES:
            used.update(NAMES[mod][n] for n in names)
    return out, sorted(used)


def _want(wanted, module, name, path, line):
    where = "%s:%d" % (path, line)
    if module in STDLIB:
        return
    if module == "ember.nn.functional":  # the shim offers every name of FUNCTIONAL
        if name is not None and name not in FUNCTIONAL:
            raise DeployError("deploy: %s imports %s from %s, an op the deployment path lacks (it has: %s)"
                              % (where, name, module, ", ".join(FUNCTIONAL)))
        wanted.setdefault(module, set())
        return
    if module == "ember.nn" and name == "functional":
        wanted.setdefault("ember.nn.functional", set())
        wanted.setdefault("ember.nn", set())
        return
    if module == "ember" and name == "nn":  # from ember import nn: nn.Linear, nn.functional.relu, ...
        module, name = "ember.nn", None
    if module == "ember" and name is None:
        wanted.setdefault(module, set())
        return
    if module in NAMES and name is None:  # import ember.nn as nn: any of its names may be used
        wanted.setdefault(module, set()).update(NAMES[module])
        return
    if module not in NAMES:
        raise DeployError("deploy: %s imports %s, which the deployment path lacks (a board has: %s, %s)"
                          % (where, module, ", ".join(sorted(NAMES)), "ember.nn.functional"))
    if name == "*":
        raise DeployError("deploy: %s: import the names a model uses from %s (from %s import Linear, ...)"
                          % (where, module, module))
    if name not in NAMES[module]:
        raise DeployError("deploy: %s imports %s from %s, a layer the deployment path lacks (it has: %s)"
                          % (where, name, module, ", ".join(sorted(NAMES[module]))))
    wanted.setdefault(module, set()).add(name)


def load_class(path, cls_name):
    """Class ``cls_name`` of the model file ``path``, imported with the full ember."""
    spec = importlib.util.spec_from_file_location("_ember_deploy_model", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the model file's own code: whatever it raises, say where
        raise DeployError("deploy: importing %s failed: %s: %s" % (path, type(e).__name__, e))
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise DeployError("deploy: %s has no class %s" % (path, cls_name))
    return cls


def build(path, cls_name):
    """The model class from ``path`` built with the full ember under ``init.skip()``."""
    from ember.nn import init
    cls = load_class(path, cls_name)
    with init.skip():
        try:
            return cls()
        except TypeError as e:
            raise DeployError("deploy: %s() must build with no arguments (%s)" % (cls_name, e))
        except Exception as e:
            raise DeployError("deploy: building %s() failed: %s: %s" % (cls_name, type(e).__name__, e))


def check_layers(model):
    """Every submodule is a layer the deployment path has (or a container without tensors of its own)."""
    for name, m in model.named_modules():
        kind = type(m).__name__
        if kind in LAYERS and type(m).__module__.startswith("ember.nn"):
            continue
        own = [n for n, _ in m.named_parameters() if "." not in n] + [n for n, _ in m.named_buffers() if "." not in n]
        if own or type(m).__module__.startswith("ember."):
            raise DeployError("deploy: %s%s is a %s, a layer the deployment path lacks (it has: %s)"
                              % (type(model).__name__, "." + name if name else "", kind, ", ".join(sorted(LAYERS))))
