"""``GradientsParams``: a module's gradients keyed by parameter id, and ``track``.

``loss.backward()`` returns ``Gradients`` keyed by the id of every leaf it reached. A module's
parameters are leaves whose id is the ``Param``'s id (``track`` makes them so), so picking a
module's gradients out of a ``Gradients`` is a filter by id. ``GradientsParams`` holds only those,
adds (accumulation over several backward passes or over threads), clips and moves between devices.
Nothing here touches a parameter: backward and clipping never mutate the model.
"""
import math

from ember.backend import grad_device
from ember.errors import ArgumentError, ArgumentTypeError
from ember.nn.module import Module, Param
from ember.tensor import grad_node

from ember.accel.autodiff import Gradients


def _named_params(params, op):
    """[(name, Param)] from a Module, a list of (name, Param) pairs or a list of Params."""
    if isinstance(params, Module):
        return params.named_parameters()
    if type(params) is Param:
        return [("0", params)]
    try:
        items = list(params)
    except TypeError:
        raise ArgumentTypeError("%s: expected a Module, a list of (name, Param) pairs or a list of Params, "
                                "found %s" % (op, type(params).__name__))
    out = []
    for i, item in enumerate(items):
        if type(item) is Param:
            out.append((str(i), item))
        elif type(item) in (tuple, list) and len(item) == 2 and type(item[1]) is Param:
            if type(item[0]) is not str:
                raise ArgumentTypeError("%s: parameter names must be strings, found %s at item %d"
                                        % (op, type(item[0]).__name__, i))
            out.append((item[0], item[1]))
        else:
            raise ArgumentTypeError("%s: item %d is %s, expected a Param or a (name, Param) pair"
                                    % (op, i, type(item).__name__))
    return out




def _is_leaf_with_id(t, id):
    node = grad_node(t)
    return node is not None and node.is_leaf and node.id == id


def track(module_or_params, device=None, strict=True):
    """Make every ``requires_grad`` parameter a leaf whose gradient is keyed by its ``Param.id``.

    ``device`` (optional): move the module there first (``Autodiff(ember.Cpu())``). Parameters
    must then live on an Autodiff device; a parameter with ``requires_grad=False`` is detached.
    Returns its argument. Optimizers call this on the parameters they are given (with
    ``strict=False``: parameters on a device without autodiff are left alone, for gradients
    computed some other way), and their ``step`` keeps each updated parameter a leaf with the
    same id.

    >>> model = track(MLP(), Autodiff(ember.Cpu()))
    >>> grads = F.cross_entropy(model(x), y).backward()   # keyed by each Param.id
    """
    if device is not None:
        if not isinstance(module_or_params, Module):
            raise ArgumentTypeError("track: device= needs a Module, found %s" % type(module_or_params).__name__)
        module_or_params.to(device)
    for name, p in _named_params(module_or_params, "track"):
        v = p.value
        if grad_device(v.device) is None:
            if strict and p.requires_grad and v.dtype.kind == "f":
                raise ArgumentError("track: parameter %r lives on %r, which records no graph; move the module "
                                    "to ember.accel.Autodiff(%r) first" % (name, v.device, v.device))
            continue
        if p.requires_grad and v.dtype.kind == "f":
            if not _is_leaf_with_id(v, p.id):
                p.value = v.require_grad(id=p.id)
        elif v.requires_grad:
            p.value = v.detach()
    return module_or_params


def _inner(device):
    """The device gradients live on: the one the recording decorator wraps, else ``device`` itself."""
    dev = grad_device(device)
    return device if dev is None else dev.inner


class GradientsParams:
    """Gradients keyed by parameter id (``Param.id``), as in Burn.

    >>> grads = GradientsParams.from_grads(loss.backward(), model)
    >>> grads = grads + GradientsParams.from_grads(loss2.backward(), model)   # accumulate
    >>> opt.step(grads.clip_by_norm(1.0))

    Values are plain tensors on the inner device (they record nothing). ``get(param)`` reads one.
    Every method returns a new ``GradientsParams``; none mutates the model or the gradients.
    """

    __slots__ = ("by_id",)

    def __init__(self, by_id=None):
        self.by_id = {} if by_id is None else dict(by_id)

    @classmethod
    def from_grads(cls, grads, module_or_params):
        """The gradients in ``grads`` (a ``Gradients`` from backward) of ``module_or_params``'
        parameters that require grad. A parameter that got no gradient is simply absent."""
        if isinstance(grads, GradientsParams):
            by_id = grads.by_id
        elif isinstance(grads, Gradients):
            by_id = grads.by_id
        else:
            raise ArgumentTypeError("GradientsParams.from_grads: expected the Gradients that backward() "
                                    "returned, found %s" % type(grads).__name__)
        out = {}
        for _, p in _named_params(module_or_params, "GradientsParams.from_grads"):
            if not p.requires_grad:
                continue
            g = by_id.get(p.id)
            if g is not None:
                out[p.id] = g
        return cls(out)

    # -- reading -------------------------------------------------------------------------------------
    def get(self, param):
        """The gradient of ``param`` (a ``Param`` or its id), or None."""
        return self.by_id.get(param.id if type(param) is Param else param)

    def get_id(self, id):
        """The gradient of the parameter with id ``id``, or None."""
        return self.by_id.get(id)

    def __contains__(self, param):
        return (param.id if type(param) is Param else param) in self.by_id

    def __len__(self):
        return len(self.by_id)

    def ids(self):
        """The parameter ids that have a gradient."""
        return list(self.by_id)

    def items(self):
        """[(parameter id, gradient tensor)]."""
        return list(self.by_id.items())

    def register(self, param, grad):
        """Set the gradient of ``param`` (a ``Param`` or id); returns self."""
        self.by_id[param.id if type(param) is Param else param] = grad
        return self

    def remove(self, param):
        """Take the gradient of ``param`` out (returns it, or None)."""
        return self.by_id.pop(param.id if type(param) is Param else param, None)

    # -- arithmetic ----------------------------------------------------------------------------------
    def __add__(self, other):
        """Key-by-key sum (accumulation over passes or threads); a key in one side only is kept."""
        if isinstance(other, Gradients):
            other = GradientsParams(other.by_id)
        if not isinstance(other, GradientsParams):
            if type(other) is int and other == 0:  # sum([...]) starts from 0
                return GradientsParams(self.by_id)
            raise ArgumentTypeError("GradientsParams: can only add GradientsParams, found %s"
                                    % type(other).__name__)
        out = dict(self.by_id)
        for k, g in other.by_id.items():
            have = out.get(k)
            out[k] = g if have is None else have + _same_device(g, have)
        return GradientsParams(out)

    __radd__ = __add__

    def map(self, fn):
        """New GradientsParams with ``fn(grad)`` for every value."""
        return GradientsParams({k: fn(g) for k, g in self.by_id.items()})

    def __mul__(self, factor):
        """Every gradient times a number (``grads * 0.5`` averages two accumulated passes)."""
        if type(factor) not in (int, float):
            raise ArgumentTypeError("GradientsParams: can only multiply by a number, found %s"
                                    % type(factor).__name__)
        return self.map(lambda g: g * factor)

    __rmul__ = __mul__

    def __truediv__(self, divisor):
        if type(divisor) not in (int, float):
            raise ArgumentTypeError("GradientsParams: can only divide by a number, found %s"
                                    % type(divisor).__name__)
        return self.map(lambda g: g / divisor)

    # -- clipping ------------------------------------------------------------------------------------
    def clip_by_value(self, clip_value):
        """Each element clamped to ``[-clip_value, clip_value]`` (``torch.nn.utils.clip_grad_value_``)."""
        if type(clip_value) not in (int, float) or clip_value < 0:
            raise ArgumentError("clip_by_value: expected a number >= 0, found %r" % (clip_value,))
        v = float(clip_value)
        return self.map(lambda g: g.clamp(-v, v))

    def norm(self, norm_type=2.0):
        """The global norm of every gradient taken together, as a Python float."""
        return _global_norm(list(self.by_id.values()), norm_type)

    def clip_by_norm(self, max_norm, norm_type=2.0):
        """Scale every gradient by ``min(1, max_norm / (total_norm + 1e-6))``, ``total_norm`` the
        norm of all gradients taken together (``torch.nn.utils.clip_grad_norm_``).
        ``norm_type``: 2 (default), any p >= 1, or ``inf``/``"inf"``."""
        if type(max_norm) not in (int, float) or max_norm < 0:
            raise ArgumentError("clip_by_norm: expected max_norm >= 0, found %r" % (max_norm,))
        total = self.norm(norm_type)
        coef = float(max_norm) / (total + 1e-6)
        if coef >= 1.0:
            coef = 1.0
        return self.map(lambda g: g * coef)

    # -- devices -------------------------------------------------------------------------------------
    def to(self, device):
        """Every gradient moved to ``device`` (for a decorator such as Autodiff, its inner device)."""
        dev = _inner(device)
        return self.map(lambda g: g.to(dev))

    def __repr__(self):
        return "GradientsParams(%d tensors)" % len(self.by_id)


def _same_device(g, like):
    return g if g.device == like.device else g.to(like.device)


def _global_norm(grads, norm_type):
    if norm_type in ("inf", float("inf")):
        total = 0.0
        for g in grads:
            if g.numel():
                total = max(total, g.abs().max().item())
        return total
    if type(norm_type) not in (int, float) or norm_type < 1:
        raise ArgumentError("clip_by_norm: norm_type must be >= 1 or inf, found %r" % (norm_type,))
    p = float(norm_type)
    total = 0.0
    for g in grads:
        if not g.numel():
            continue
        a = g.abs()
        if p == 2.0:
            n = (a * a).sum().sqrt().item()
            total += n * n
        elif p == 1.0:
            total += a.sum().item()
        else:
            total += (a ** p).sum().item()
    if p == 1.0:
        return total
    return math.sqrt(total) if p == 2.0 else total ** (1.0 / p)
