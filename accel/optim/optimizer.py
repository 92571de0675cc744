"""The optimizer base class: parameter groups, the step loop, state and its records.

An optimizer holds ``(name, Param)`` pairs in parameter groups and per-parameter state (tensors on
the parameter's inner device, plus a step count). ``step(grads)`` reads each parameter's gradient
by id from a ``Gradients`` or ``GradientsParams``, computes the new value on the inner device
(nothing is recorded) and assigns it to ``Param.value`` as a fresh leaf with the same id on the
same device. The old value tensor is never modified, so a tensor a user kept keeps its values.

Two ways to train, both complete:

- **ember's**: ``opt.step(loss.backward())`` — the gradients are a value (``Gradients``, or a
  ``GradientsParams`` to clip, scale or add), passed explicitly; nothing is stored on the model.
- **PyTorch's**: ``opt.zero_grad(); loss.backward(); opt.step()`` — while an optimizer exists and
  was last used this way, each ``backward`` adds the gradient of each of its parameters to
  ``Param.grad`` (summing over several backward passes, as PyTorch accumulates), ``step()`` reads
  them and ``zero_grad()`` sets them to None. A ``step(grads)`` with explicit gradients switches
  the optimizer to ember's way: it clears its ``Param.grad`` and stops collecting them, so the
  explicit loop pays nothing for the other; ``zero_grad()`` or ``step()`` switch back.

State is saved by parameter *name* (ids are not stable across processes): a safetensors record
whose tensors are ``<param name>.<state key>`` and whose metadata holds the hyperparameters of
every group, the names in each group and every step count, so a resumed run continues exactly.
"""
import json
import threading
import weakref

from ember.backend import grad_device, unwrap_to, wrap_from
from ember.errors import ArgumentError, ArgumentTypeError, RecordError, ShapeError
from ember.nn.module import Module, Param
from ember.tensor import Tensor

from ember.accel.autodiff import Gradients, no_grad
from ember.accel.autodiff.graph import backward_hooks

from .grads import GradientsParams, _inner, _named_params, track

FORMAT = "ember.optim/1"


def _group_params(params, op):
    if isinstance(params, (Module, Param)) or type(params) in (list, tuple):
        return _named_params(params, op)
    if isinstance(params, dict):
        raise ArgumentTypeError("%s: a parameter group's 'params' must be a Module or a list, found a dict" % op)
    # generators (model.named_parameters() is a list, but accept any iterable)
    return _named_params(list(params), op)


def _is_group_list(params):
    return type(params) in (list, tuple) and len(params) > 0 and all(type(g) is dict for g in params)


class Optimizer:
    """Base class: subclasses set ``DEFAULTS`` (hyperparameters) and implement ``_update``.

    ``params``: a Module, a list of ``(name, Param)`` pairs (``model.named_parameters()``), a list
    of Params (named by position), or a list of parameter groups, dicts with ``"params"`` (any of
    the above) and hyperparameters that override the optimizer's for that group.
    """

    DEFAULTS = {}
    STATE_TENSORS = ()  # state keys that hold tensors, in save order

    def __init__(self, params, **hyper):
        name = type(self).__name__
        unknown = [k for k in hyper if k not in self.DEFAULTS]
        if unknown:
            raise ArgumentError("%s: unknown argument(s) %s; known: %s"
                                % (name, ", ".join(sorted(unknown)), ", ".join(sorted(self.DEFAULTS))))
        self.defaults = dict(self.DEFAULTS)
        self.defaults.update(hyper)
        self._check(self.defaults)
        self.param_groups = []
        self.state = {}  # Param.id -> {"step": int, key: Tensor, ...}
        self._names = {}  # name -> group index (for unique names)
        if _is_group_list(params):
            for g in params:
                self.add_param_group(g)
        else:
            self.add_param_group({"params": params})
        if not any(g["params"] for g in self.param_groups):
            raise ArgumentError("%s: got an empty parameter list" % name)
        _collecting.add(self)  # PyTorch's loop until a step(grads) says otherwise

    # -- groups --------------------------------------------------------------------------------------
    def add_param_group(self, group):
        """Add a group: a dict with ``"params"`` and optional hyperparameters."""
        name = type(self).__name__
        if type(group) is not dict or "params" not in group:
            raise ArgumentTypeError("%s: a parameter group is a dict with a 'params' key, found %r" % (name, group))
        unknown = [k for k in group if k != "params" and k not in self.DEFAULTS]
        if unknown:
            raise ArgumentError("%s: unknown group option(s) %s" % (name, ", ".join(sorted(unknown))))
        gi = len(self.param_groups)
        pairs = _group_params(group["params"], name)
        seen_ids = {}
        for g in self.param_groups:
            for n, p in g["params"]:
                seen_ids[id(p)] = n
        for n, p in pairs:
            if id(p) in seen_ids:
                raise ArgumentError("%s: parameter %r appears in more than one parameter group (or twice)" % (name, n))
            seen_ids[id(p)] = n
        # names must be unique across groups (state is saved by name); a clash (two groups built from
        # sibling modules: "weight" twice) prefixes the later group's names with "group<i>."
        names = [n for n, _ in pairs]
        if len(set(names)) != len(names):
            raise ArgumentError("%s: a parameter name appears twice in group %d" % (name, gi))
        if any(n in self._names for n in names):
            pairs = [("group%d.%s" % (gi, n), p) for n, p in pairs]
            if any(n in self._names for n, _ in pairs):
                raise ArgumentError("%s: parameter names of group %d clash with another group's; pass "
                                    "(name, Param) pairs with distinct names" % (name, gi))
        out = dict(self.defaults)
        for k, v in group.items():
            if k != "params":
                out[k] = v
        self._check(out)
        out["params"] = pairs
        for n, _ in pairs:
            self._names[n] = gi
        track([p for _, p in pairs if p.requires_grad], strict=False)
        self.param_groups.append(out)

    def _check(self, hyper):
        """Validate hyperparameters (subclasses extend)."""
        _finite(hyper.get("lr"), "lr", type(self).__name__)
        _finite(hyper.get("weight_decay", 0.0), "weight_decay", type(self).__name__)

    @property
    def lr(self):
        """The learning rate of the first group; setting it sets every group's (for schedulers:
        ``opt.lr = sched.step()``). Per group: ``opt.param_groups[i]["lr"]``."""
        return self.param_groups[0]["lr"]

    @lr.setter
    def lr(self, value):
        _finite(value, "lr", type(self).__name__)
        for g in self.param_groups:
            g["lr"] = value

    def named_parameters(self):
        """[(name, Param)] over every group, in order."""
        return [pair for g in self.param_groups for pair in g["params"]]

    # -- PyTorch's loop: gradients on Param.grad -------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Set ``Param.grad`` of every parameter to None, so the next ``loss.backward()`` starts
        them afresh (``set_to_none`` is accepted for PyTorch's signature: ember has no zero-filled
        gradients). Also makes this optimizer collect gradients again after a ``step(grads)``."""
        for p in self._distinct():
            p.grad = None
        _collecting.add(self)

    def _distinct(self):
        return [p for _, p in self.named_parameters()]

    def _collected(self):
        """``GradientsParams`` of the ``Param.grad`` that backward left (PyTorch's loop)."""
        by_id = {}
        for p in self._distinct():
            if p.grad is not None:
                by_id[p.id] = p.grad
        return GradientsParams(by_id)

    # -- the step ------------------------------------------------------------------------------------
    def step(self, grads=None, lr=None, closure=None):
        """Update every parameter that has a gradient in ``grads`` (``Gradients`` from backward or
        ``GradientsParams``); ``lr``, if given, first sets every group's learning rate.

        Without ``grads`` (PyTorch's loop), the gradients are the ``Param.grad`` that
        ``loss.backward()`` left (see the module docstring); ``closure``, PyTorch's, is called
        first to compute them and its loss is returned.

        Each new value is computed on the parameter's inner device without recording and becomes
        ``Param.value`` as a leaf with the parameter's id, on the parameter's device. Parameters
        without a gradient (or with ``requires_grad=False``) are left as they are, state included.
        """
        loss = None
        if grads is None:
            _collecting.add(self)
            if closure is not None:
                loss = closure()
            grads = self._collected()
        elif isinstance(grads, (Gradients, GradientsParams)):
            if self in _collecting:  # ember's loop from now on: stop filling Param.grad
                _collecting.discard(self)
                for p in self._distinct():
                    p.grad = None
        else:
            raise ArgumentTypeError("%s.step: expected Gradients or GradientsParams, found %s"
                                    % (type(self).__name__, type(grads).__name__))
        by_id = grads.by_id
        if lr is not None:
            self.lr = lr
        with no_grad():
            # every gradient is checked before any parameter changes
            plan = []
            for group in self.param_groups:
                items = []
                for name, p in group["params"]:
                    if not p.requires_grad:
                        continue
                    g = by_id.get(p.id)
                    if g is None:
                        continue
                    v = p.value
                    dev = v.device
                    rec = grad_device(dev)
                    # a recorded value is unwrapped to the device gradients live on and rewrapped,
                    # without copies, as Tensor.to does; done here directly, it costs no device comparisons
                    x = v if rec is None else Tensor(unwrap_to(dev, v._data, rec.inner), v.shape, v.dtype, rec.inner)
                    gdev = g.device
                    if gdev is not x.device and gdev != x.device:
                        g = g.to(x.device)
                    if g.shape != x.shape:
                        raise ShapeError("%s.step: gradient of shape %s for parameter %r of shape %s"
                                         % (type(self).__name__, g.shape, name, x.shape))
                    if g.dtype is not x.dtype:
                        g = g.to(x.dtype)
                    items.append((p, rec, x, g))
                plan.append((group, items))
            if by_id and not any(items for _, items in plan):
                trainable = [n for n, p in self.named_parameters() if p.requires_grad]
                if trainable:
                    raise ArgumentError("%s.step: none of the %d gradients is for a parameter of this optimizer "
                                        "(%s): gradients of another model?"
                                        % (type(self).__name__, len(by_id), _preview(trainable)))
            for group, items in plan:
                states = []
                for p, _, _, _ in items:
                    state = self.state.get(p.id)
                    if state is None:
                        state = self.state[p.id] = {"step": 0}
                    states.append(state)
                news = self._update_group(group, [it[2] for it in items], [it[3] for it in items], states)
                for (p, rec, _, _), new in zip(items, news):
                    if rec is not None:  # a new leaf with the parameter's id
                        dev = p.value.device
                        data = rec.require_grad(rec.wrap(new._data, new.shape, new.dtype), p.id)
                        data = wrap_from(dev, rec, data, new.shape, new.dtype)
                        new = Tensor(data, new.shape, new.dtype, dev)
                    p.value = new
        return loss

    def _update_group(self, group, xs, gs, states):
        """New values of a group's parameters ``xs`` (inner devices) given their gradients ``gs``;
        updates ``states``. By default one ``_update`` per parameter; SGD and Adam run one
        composite per cohort (``updates.py``), which a device may fuse."""
        return [self._update(x, g, state, group) for x, g, state in zip(xs, gs, states)]

    def _hyper(self, group, device, dtype, step=None, state=None):
        """``(tensor, values)``: a cohort's hyperparameters (``_hyper_values``, in the layout of
        ``updates.py``) as one small tensor of the parameters' dtype on their device, which fused
        kernels read, and as the Python floats the op-by-op formulas take. Built here only, once
        per cohort and step, from the group and the step count alone: the one place a captured
        step would refill it (Adam's bias corrections change every step)."""
        from ember import dtypes
        values = self._hyper_values(group, step)
        dt = dtype if dtype.kind == "f" else dtypes.float32
        shape = (len(values),)
        t = Tensor(device.from_list(values, shape, dt), shape, dt, device)
        from ember.accel.capture.trace import current
        trace = current()
        if trace is not None:  # recorded: each replay refills the tensor from the live group and count
            trace.add_feed(t, lambda: self._hyper_values(group, step if state is None else state["step"]))
            # the entries another learning rate or step count changes; the others (switches) are
            # fixed by the plan's key
            other = self._hyper_values(dict(group, lr=group["lr"] * 0.5 + 1e-3), None if step is None else step + 1)
            values = _FedValues(values, t, [i for i, (a, b) in enumerate(zip(values, other)) if a != b])
        return t, values

    def _hyper_values(self, group, step):
        """The values of the layout ``_hyper`` builds (subclasses with a cohort update)."""
        raise NotImplementedError

    def _update(self, x, g, state, group):
        """New value of one parameter ``x`` (inner device) given its gradient; updates ``state``."""
        raise NotImplementedError

    # -- state ---------------------------------------------------------------------------------------
    def state_dict(self):
        """``{"param_groups": [{hyperparameters..., "params": [names]}], "state": {name: {key: value}}}``
        with state tensors on the parameters' inner devices (not copies: treat them as read-only)."""
        groups = []
        for g in self.param_groups:
            d = {k: v for k, v in g.items() if k != "params"}
            d["params"] = [n for n, _ in g["params"]]
            groups.append(d)
        state = {}
        for n, p in self.named_parameters():
            s = self.state.get(p.id)
            if s is not None:
                state[n] = dict(s)
        return {"param_groups": groups, "state": state}

    def load_state_dict(self, state_dict):
        """Restore what ``state_dict`` returned, matching parameters by name. Group hyperparameters
        (the learning rate a scheduler set, ...) are restored too. Raises ``ArgumentError`` when
        the groups or names differ, ``ShapeError`` when a state tensor's shape does not fit."""
        op = "%s.load_state_dict" % type(self).__name__
        groups = state_dict.get("param_groups") if type(state_dict) is dict else None
        if type(groups) is not list or type(state_dict.get("state")) is not dict:
            raise ArgumentTypeError("%s: expected a dict with 'param_groups' (a list) and 'state' (a dict), found %s"
                                    % (op, _kind(state_dict)))
        for i, g in enumerate(groups):
            if type(g) is not dict or type(g.get("params")) is not list:
                raise ArgumentTypeError("%s: expected group %d as a dict with 'params' (a list of names), found %s"
                                        % (op, i, _kind(g)))
        if len(groups) != len(self.param_groups):
            raise ArgumentError("%s: the saved optimizer has %d parameter group(s), this one %d"
                                % (op, len(groups), len(self.param_groups)))
        for i, (saved, mine) in enumerate(zip(groups, self.param_groups)):
            names = [n for n, _ in mine["params"]]
            if list(saved["params"]) != names:
                raise ArgumentError("%s: group %d holds parameters %s, the saved one %s"
                                    % (op, i, _preview(names), _preview(saved["params"])))
        restored = []
        for saved, mine in zip(groups, self.param_groups):
            unknown = [k for k in saved if k != "params" and k not in self.DEFAULTS]
            if unknown:
                raise ArgumentError("%s: unknown group option(s) %s" % (op, ", ".join(sorted(unknown))))
            new = dict(mine)
            for k, v in saved.items():
                if k != "params":
                    new[k] = v
            self._check(new)
            for k in self.DEFAULTS:  # switches: a string "false" would read as true
                if type(self.DEFAULTS[k]) is bool and type(new[k]) is not bool:
                    raise ArgumentError("%s: %s must be True or False, found %r" % (op, k, new[k]))
            restored.append(new)
        new_state = {}
        by_name = dict(self.named_parameters())
        for n, s in state_dict["state"].items():
            if type(s) is not dict:
                raise ArgumentTypeError("%s: expected the state of %r as a dict, found %s" % (op, n, _kind(s)))
            p = by_name.get(n)
            if p is None:
                raise ArgumentError("%s: state for unknown parameter %r" % (op, n))
            new_state[p.id] = self._fit_state(n, p, s, restored[self._names[n]], op)
        for mine, new in zip(self.param_groups, restored):  # nothing changes before everything is checked
            mine.update(new)
        self.state = new_state
        # a model loaded from a record (Module.load) holds plain values: make them leaves again
        track([p for _, p in self.named_parameters() if p.requires_grad], strict=False)

    def _fit_state(self, name, p, s, group, op):
        inner = _inner(p.value.device)
        out = {}
        step = s.get("step")
        if type(step) is not int or step < 0:
            raise ArgumentError("%s: state of parameter %r needs a step count (an int >= 0), found %r"
                                % (op, name, step))
        for k, v in s.items():
            if not isinstance(v, Tensor) and type(v) not in (int, float):
                raise ArgumentTypeError("%s: state %r of parameter %r is %s, expected a Tensor or a number"
                                        % (op, k, name, _kind(v)))
            if k in self.STATE_TENSORS and not isinstance(v, Tensor):
                raise ArgumentTypeError("%s: state %r of parameter %r is %s, expected a Tensor"
                                        % (op, k, name, _kind(v)))
            if isinstance(v, Tensor):
                if v.shape != p.shape:
                    raise ShapeError("%s: state %r of parameter %r has shape %s, the parameter %s"
                                     % (op, k, name, v.shape, p.shape))
                if v.device != inner:
                    v = v.to(inner)
                if v.dtype is not p.dtype:
                    v = v.to(p.dtype)
            out[k] = v
        held = [k for k in self.STATE_TENSORS if k in out]
        needs = self._state_needs(group)
        if held and held != needs:
            raise ArgumentError("%s: state of parameter %r holds %s, expected %s"
                                % (op, name, _preview(held), _preview(needs)))
        return out

    def _state_needs(self, group):
        """The state tensors (in ``STATE_TENSORS`` order) a stepped parameter of ``group`` holds."""
        return list(self.STATE_TENSORS)

    def save(self, path):
        """Write the state as a safetensors record (see the module docstring); returns ``path``."""
        from ember import record
        sd = self.state_dict()
        tensors, scalars = [], {}
        for n, s in sd["state"].items():
            for k in sorted(s):
                v = s[k]
                if isinstance(v, Tensor):
                    tensors.append(("%s.%s" % (n, k), v))
                else:
                    scalars.setdefault(n, {})[k] = v
        meta = {
            "format": FORMAT,
            "optimizer": type(self).__name__,
            "param_groups": json.dumps(sd["param_groups"]),
            "scalars": json.dumps(scalars),
        }
        record.write(path, tensors, metadata=meta)
        return path

    def load(self, path):
        """Restore the state written by ``save`` (the optimizer must be built over parameters with
        the same names, e.g. a rebuilt model); group hyperparameters are restored as saved."""
        from ember import record
        op = "%s.load" % type(self).__name__
        with record.open(path) as reader:
            meta = reader.metadata or {}
            if meta.get("format") != FORMAT:
                raise RecordError("%s: %s is not an ember optimizer record (format %r)"
                                  % (op, path, meta.get("format")))
            if meta.get("optimizer") != type(self).__name__:
                raise RecordError("%s: %s holds the state of %s, not %s"
                                  % (op, path, meta.get("optimizer"), type(self).__name__))
            groups = _meta_json(meta, "param_groups", list, op, path)
            scalars = _meta_json(meta, "scalars", dict, op, path)
            by_name = dict(self.named_parameters())
            state = {}
            for n, s in scalars.items():
                if type(s) is not dict:
                    raise RecordError("%s: %s: the scalars of %r are %s, expected an object" % (op, path, n, _kind(s)))
                state[n] = dict(s)
            for full in reader.names():
                if "." not in full:
                    raise RecordError("%s: %s holds tensor %r, expected '<parameter>.<state>' names" % (op, path, full))
                n, k = full.rsplit(".", 1)
                p = by_name.get(n)
                if p is None:
                    raise RecordError("%s: %s holds state for %r, which this optimizer does not have" % (op, path, n))
                inner = _inner(p.value.device)
                state.setdefault(n, {})[k] = reader.read(full, device=inner)
        try:
            self.load_state_dict({"param_groups": groups, "state": state})
        except (ArgumentError, ArgumentTypeError, ShapeError) as e:
            raise RecordError("%s: %s does not fit this optimizer: %s" % (op, path, e))

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append("Parameter Group %d" % i)
            for k in sorted(g):
                if k != "params":
                    lines.append("    %s: %r" % (k, g[k]))
        lines.append(")")
        return "\n".join(lines)


# optimizers whose parameters' gradients backward adds to Param.grad (PyTorch's loop)
_collecting = weakref.WeakSet()
_collect_lock = threading.Lock()  # backward passes of several threads may add to one Param.grad


def _collect(leaves):
    """Add each gradient of a backward pass (``{leaf id: gradient}``) to ``Param.grad`` of the
    parameters of every collecting optimizer (a parameter two optimizers hold, once)."""
    if not _collecting:
        return
    with _collect_lock:
        seen = set()
        for opt in list(_collecting):
            for _, p in opt.named_parameters():
                if id(p) in seen or not p.requires_grad:
                    continue
                seen.add(id(p))
                g = leaves.get(p.id)
                if g is not None:
                    p.grad = g if p.grad is None else p.grad + g


backward_hooks.append(_collect)


class _FedValues(list):
    """A recorded step's hyperparameters as floats for the op-by-op formulas (a device without a fused
    update): one that changes from step to step (``live``: the learning rate, bias corrections) comes
    as a 0-d view of the tensor each replay refills, which an op takes as it takes a float."""

    def __init__(self, values, tensor, live):
        list.__init__(self, values)
        self._tensor = tensor
        self._live = live

    def __getitem__(self, i):
        if i in self._live:  # the same value as an op's scalar: rounded to the dtype once
            return self._tensor[i]
        return list.__getitem__(self, i)


def _kind(v):
    return type(v).__name__


def _meta_json(meta, key, kind, op, path):
    """The JSON value of metadata ``key``, which must be a ``kind`` (list or dict)."""
    text = meta.get(key)
    if type(text) is not str:
        raise RecordError("%s: %s has no %r metadata (found %s)" % (op, path, key, _kind(text)))
    try:
        value = json.loads(text)
    except ValueError as e:
        raise RecordError("%s: %s: metadata %r is not valid JSON (%s)" % (op, path, key, e))
    except RecursionError:
        raise RecordError("%s: %s: metadata %r is nested too deeply" % (op, path, key))
    if type(value) is not kind:
        raise RecordError("%s: %s: metadata %r is %s, expected %s" % (op, path, key, _kind(value), kind.__name__))
    return value


def _finite(v, key, op):
    """A hyperparameter that must be a finite number >= 0 (nan and inf would poison every step)."""
    if type(v) not in (int, float) or not 0 <= v < float("inf"):
        raise ArgumentError("%s: %s must be a finite number >= 0, found %r" % (op, key, v))


def _preview(names, n=4):
    names = list(names)
    s = ", ".join([str(v) for v in names[:n]])
    return "[%s%s]" % (s, ", ..." if len(names) > n else "")


def _scalar(x):
    """A float hyperparameter as a Python float (ints accepted)."""
    return float(x)


def _cohorts(xs, extra=None):
    """Index lists of ``xs`` that share a device (class and instance), a dtype and ``extra[i]``."""
    found = {}
    order = []
    for i, x in enumerate(xs):
        dev = x.device
        key = (type(dev), dev, x.dtype, None if extra is None else extra[i])
        idx = found.get(key)
        if idx is None:
            idx = found[key] = []
            order.append(idx)
        idx.append(i)
    return order


def _lerp(a, b, w):
    """``a.lerp(b, w)`` with PyTorch's CPU formula (exact at both ends)."""
    if w < 0.5:
        return a + (b - a) * w
    return b - (b - a) * (1.0 - w)


def _zeros_like(x):
    import ember
    return ember.zeros(x.shape, dtype=x.dtype, device=x.device)


def _full_like(x, value):
    import ember
    return ember.full(x.shape, value, dtype=x.dtype, device=x.device)


__all__ = ["Optimizer"]
