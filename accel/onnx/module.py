"""``OnnxModule``: an imported ONNX graph as an ember ``Module``.

Float initializers become parameters (fine-tunable; ``state_dict`` keys are the initializer names,
each dotted part made an identifier, so ``layer1.0.conv1.weight`` stays ``layer1.0.conv1.weight``);
integer initializers and folded values are constants of the plan.
"""
import re

from ember.nn import Module, Param

from .graph import run_plan, specialize

_BAD = re.compile(r"[^0-9A-Za-z_]")


def sanitize(name):
    """An initializer name as a dotted path of identifiers (empty parts become ``_``)."""
    parts = [_BAD.sub("_", p) or "_" for p in name.split(".")]
    return ".".join(parts)


class _Scope(Module):
    """A plain container for the parameters under one dotted prefix."""


class OnnxModule(Module):
    """Runs an ONNX graph with ember ops: ``model(*inputs)`` gives its outputs (one tensor, or a
    tuple when the graph has several). The first call for given input shapes runs the plan node by
    node and keeps a replay (``graph.specialize``: shape arithmetic folded, flat bound calls,
    rewritten onto fused composites by ``fuse.py``, see docs/onnx.md); later calls with those
    shapes run the replay."""

    def __init__(self, plan, consts, params, inputs, outputs, device):
        super().__init__()
        object.__setattr__(self, "_plan", plan)
        object.__setattr__(self, "_consts", consts)
        object.__setattr__(self, "_inputs", inputs)
        object.__setattr__(self, "_outputs", outputs)
        object.__setattr__(self, "_device", device)
        object.__setattr__(self, "_moved", {})
        object.__setattr__(self, "_replays", {})
        where = []
        used = set()
        for onnx_name, t in params:
            path = sanitize(onnx_name)
            if path in used or not self._place(path, t):
                path = _BAD.sub("_", onnx_name) + "_%d" % len(used)
                self._place(path, t)
            used.add(path)
            where.append((onnx_name, path))
        object.__setattr__(self, "_param_paths", where)
        object.__setattr__(self, "_param_slots", None)
        object.__setattr__(self, "_last", None)  # (device, parameter values, input signature, replay)

    def _place(self, path, t):
        parts = path.split(".")
        m = self
        for p in parts[:-1]:
            child = m.__dict__.get(p)
            if child is None:
                if p in m._params:
                    return False
                child = _Scope()
                setattr(m, p, child)
            elif not isinstance(child, Module):
                return False
            m = child
        if parts[-1] in m._params or parts[-1] in m.__dict__:
            return False
        setattr(m, parts[-1], Param(t))
        return True

    @property
    def input_names(self):
        return list(self._inputs)

    @property
    def output_names(self):
        return list(self._outputs)

    def _constants(self, device):
        key = device.key() if hasattr(device, "key") else id(device)
        got = self._moved.get(key)
        if got is None:
            from .graph import host
            h = host()
            got = {}
            for k, v in self._consts.items():
                # small int constants (shapes, axes, indices) live on the host beside the shape arithmetic
                target = h if v.dtype.kind in "ib" and v.numel() <= 4096 else device
                got[k] = v if v.device == target else v.to(target)
            self._moved[key] = got
        return got

    def forward(self, *inputs):
        from ember.errors import ArgumentError
        if len(inputs) != len(self._inputs):
            raise ArgumentError("onnx model: expected %d input(s) (%s), found %d"
                                % (len(self._inputs), ", ".join(self._inputs), len(inputs)))
        values = self._values()
        device = inputs[0].device if inputs else (values[0][1].device if values else self._device)
        replay = self._last_replay(device, inputs, values)
        key = None if replay is not None else self._replay_key(device, inputs, values)
        if replay is not None or key is not None:
            if replay is None:
                replay = self._replays.get(key)
                if replay is not None:
                    object.__setattr__(self, "_last", (device, [v for _, v in values], self._signature(inputs),
                                                       replay))
            if replay is not None:
                env = dict(replay.consts)
                for onnx_name, v in values:
                    env[onnx_name] = v
                for name, x in zip(self._inputs, inputs):
                    env[name] = x
                replay.run(env)
                outs = tuple(env[o] for o in self._outputs)
                return outs[0] if len(outs) == 1 else outs
        env = dict(self._constants(device))
        for onnx_name, v in values:
            env[onnx_name] = v
        for name, x in zip(self._inputs, inputs):
            env[name] = x
        if key is None:
            run_plan(self._plan, env, device)
        else:
            dynamic = set(self._inputs) | set(n for n, _ in values)
            env, replay = specialize(self._plan, env, dynamic, device, self._constants(device), self._outputs)
            if len(self._replays) >= 16:
                self._replays.clear()
                object.__setattr__(self, "_last", None)
            self._replays[key] = replay
        outs = tuple(env[o] for o in self._outputs)
        return outs[0] if len(outs) == 1 else outs

    def _values(self):
        """(ONNX name, current value) per parameter. Where each parameter lives is found once and
        checked every call (a scope replaced, a parameter deleted or set anew is seen): walking
        ``named_parameters`` each call cost more than a small model's forward."""
        slots = self.__dict__.get("_param_slots")
        if slots is not None:
            edges, slots = slots
            if all(parent.__dict__.get(name) is child for parent, name, child in edges):
                out = []
                for onnx_name, owner, attr in slots:
                    p = owner._params.get(attr)
                    if p is None:
                        break
                    out.append((onnx_name, p.value))
                else:
                    return out
        located = self._locate()
        object.__setattr__(self, "_param_slots", located)
        if located is None:  # not where it was placed: found by its path, as state_dict names it
            params = dict(self.named_parameters())
            return [(onnx_name, params[path].value) for onnx_name, path in self._param_paths]
        return [(onnx_name, owner._params[attr].value) for onnx_name, owner, attr in located[1]]

    def _locate(self):
        """(edges, slots): each (parent, name, child) scope link and each (ONNX name, owning module,
        attribute) of a parameter; None where a path no longer leads to a parameter."""
        edges, slots, seen = [], [], set()
        for onnx_name, path in self._param_paths:
            parts = path.split(".")
            m = self
            for part in parts[:-1]:
                child = m.__dict__.get(part)
                if not isinstance(child, Module):
                    return None
                if (id(m), part) not in seen:
                    seen.add((id(m), part))
                    edges.append((m, part, child))
                m = child
            if parts[-1] not in m._params:
                return None
            slots.append((onnx_name, m, parts[-1]))
        return edges, slots

    def _last_replay(self, device, inputs, values):
        """The replay of the previous call where this call has the same device, the same parameter
        values (the same tensors: their shapes and devices are too) and inputs of the same shapes
        and dtypes on that device: building and hashing the full key costs more than a small op."""
        last = self.__dict__.get("_last")
        if last is None or last[0] is not device or len(last[1]) != len(values):
            return None
        for a, (_, b) in zip(last[1], values):
            if a is not b:
                return None
        for x in inputs:
            if getattr(x, "device", None) is not device:
                return None
        return last[3] if last[2] == self._signature(inputs) else None

    @staticmethod
    def _signature(inputs):
        return tuple((tuple(x.shape), x.dtype.name) for x in inputs)

    def _replay_key(self, device, inputs, values):
        """The key of the specialised replay for these inputs, or None where none applies: when an
        input or parameter is not on ``device`` (where a step runs would then depend on more than
        the input shapes), and on a decorating device (an export trace, which must see every node
        as the graph has it)."""
        from ember.backend import Decorator
        if not hasattr(device, "key") or isinstance(device, Decorator):
            return None
        key = [device.key()]
        for _, v in values:  # a parameter's shape folds too (a Shape of a weight)
            if v.device != device:
                return None
            key.append(v.shape)
        for x in inputs:
            if not hasattr(x, "device") or x.device != device:
                return None
            key.append((tuple(x.shape), x.dtype.name))
        return tuple(key)
