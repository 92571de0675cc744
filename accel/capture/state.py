"""What a step reads and changes: its tensors, the modules' parameters and buffers, the optimizers' state.

``collect(args, kwargs)`` walks the step's arguments once and returns ``Inputs``:

- ``tensors``: every tensor the step can read, in a fixed order: tensors among the arguments
  (inside tuples, lists and dicts too), each module's parameter values and buffers, each optimizer's
  state tensors;
- ``holders``: for the tensors that live in a module or an optimizer, how to put a new one there;
- ``key``: what a recorded plan is valid for: every tensor's shape, dtype and device, each module's
  structure and training flag, each optimizer's hyperparameters, and the value of every plain
  argument (numbers, strings, None). Other objects count by identity.
"""
import ember
from ember.nn import Module
from ember.nn.module import Param

from ember.accel.optim import Optimizer

_PLAIN = (int, float, bool, str, type(None))


class Holder:
    """Where a tensor lives: a Param, a module buffer or an optimizer state entry."""

    __slots__ = ("kind", "owner", "name", "key")

    def __init__(self, kind, owner, name=None, key=None):
        self.kind = kind
        self.owner = owner
        self.name = name
        self.key = key

    def get(self):
        if self.kind == "param":
            return self.owner.value
        if self.kind == "buffer":
            return getattr(self.owner, self.name)
        return self.owner.state[self.name][self.key]

    def put(self, t):
        if self.kind == "param":
            self.owner.value = t  # Param makes it a leaf with its id again
        elif self.kind == "buffer":
            setattr(self.owner, self.name, t)
        else:
            self.owner.state[self.name][self.key] = t


class Inputs:
    def __init__(self):
        self.tensors = []
        self.holders = []  # parallel to tensors: a Holder or None (an argument)
        self.key = []
        self.optimizers = []
        self._seen = set()

    def _tensor(self, t, holder):
        self.tensors.append(t)
        self.holders.append(holder)
        # the node stands for requires_grad: a tensor on a recording device that has none records nothing
        self.key.append(("T", t.shape, t.dtype, t.device, getattr(t._data, "node", None) is not None))

    def walk(self, v):
        t = type(v)
        if t is ember.Tensor:
            self._tensor(v, None)
        elif t in _PLAIN:
            self.key.append((t.__name__, v))
        elif t is tuple or t is list:
            self.key.append((t.__name__, len(v)))
            for x in v:
                self.walk(x)
        elif t is dict:
            self.key.append(("dict", tuple(sorted(v, key=str))))
            for k in sorted(v, key=str):
                self.walk(v[k])
        elif isinstance(v, Module):
            self._module(v)
        elif _is_optimizer(v):
            self._optimizer(v)
        else:
            self.key.append(("object", id(v)))

    def _module(self, m):
        self.key.append(("module", id(m)))
        if id(m) in self._seen:
            return
        self._seen.add(id(m))
        # Module._walk's order (depth first, a shared module once), reading each module's items once;
        # the hot loop of every replay, so its lookups are local
        walked = set()
        stack = [("", m)]
        seen, key, tensor, Tensor = self._seen, self.key, self._tensor, ember.Tensor
        while stack:
            prefix, sub = stack.pop()
            if id(sub) in walked:
                continue
            walked.add(id(sub))
            key.append((prefix, sub.training))
            children = []
            for n, v in sub._items():
                t = type(v)
                if t is Param:
                    if id(v) not in seen:
                        seen.add(id(v))
                        tensor(v._value, Holder("param", v))
                elif t is Tensor:
                    tensor(v, Holder("buffer", sub, n))
                elif isinstance(v, Module):
                    children.append((prefix + "." + n if prefix else n, v))
            if children:
                stack.extend(reversed(children))

    def _optimizer(self, opt):
        self.key.append(("optimizer", id(opt)))
        if id(opt) in self._seen:
            return
        self._seen.add(id(opt))
        self.optimizers.append(opt)
        fed = ("params", "lr") if getattr(opt, "CAPTURE", False) else ("params",)  # lr is refilled
        for g in opt.param_groups:
            self.key.append(_group_key(g, fed))
        key, tensor, Tensor = self.key, self._tensor, ember.Tensor
        state = opt.state
        for pid in sorted(state):
            s = state[pid]
            for k in sorted(s):
                v = s[k]
                if type(v) is Tensor:
                    tensor(v, Holder("state", opt, pid, k))
                else:
                    key.append((pid, k, type(v).__name__))


# id(param group) -> (its names, its (name, value) pairs then, its key). The group itself is not
# held (its params would stay alive with it): its names and values are compared instead.
_group_keys = {}
_MISSING = object()


def _frozen(v):
    return type(v) in _PLAIN or type(v) is tuple and all(type(x) in _PLAIN for x in v)


def _group_key(g, fed):
    """A param group's hyperparameters as a key, by repr. Where every value is immutable the key is
    kept, and made again when a name came or went or a value is no longer the same object (a group
    that took a freed one's id has its own names and values)."""
    hit = _group_keys.get(id(g))
    if hit is not None and hit[0] == tuple(g):
        for k, v in hit[1]:
            if g.get(k, _MISSING) is not v:
                break
        else:
            return hit[2]
    items = [(k, v) for k, v in sorted(g.items()) if k not in fed]
    key = tuple((k, repr(v)) for k, v in items)
    if all(_frozen(v) for _, v in items):
        if len(_group_keys) > 256:  # groups come and go with their optimizers: keep the cache small
            _group_keys.clear()
        _group_keys[id(g)] = (tuple(g), items, key)
    return key


def _is_optimizer(v):
    return isinstance(v, Optimizer)


def _free(fn):
    """The values ``fn`` reads from its closure and by global name: tensors, modules, optimizers and
    plain values it did not receive as arguments (a step written as a closure over its model)."""
    out = []
    for cell in getattr(fn, "__closure__", None) or ():  # containers too: a closure's own data
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if _step_state(v) or type(v) in (tuple, list, dict):
            out.append(v)
    code, g = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is not None and g is not None:
        out += [g[name] for name in code.co_names if name in g and _step_state(g[name])]
    return out


def _step_state(v):
    return type(v) in _PLAIN or type(v) is ember.Tensor or isinstance(v, Module) or _is_optimizer(v)


def collect(args, kwargs, fn=None):
    """``Inputs`` of a call ``fn(*args, **kwargs)``, with what ``fn`` reads from its closure."""
    ins = Inputs()
    ins.walk(tuple(args))
    ins.walk(dict(kwargs))
    if fn is not None:
        ins.walk(_free(fn))
    ins.key = tuple(ins.key)
    return ins


def counters(optimizers):
    """{(optimizer index, param id, key): value} for the numbers in the optimizers' state (step counts)."""
    out = {}
    for i, opt in enumerate(optimizers):
        for pid, s in opt.state.items():
            for k, v in s.items():
                if type(v) in (int, float):
                    out[(i, pid, k)] = v
    return out
