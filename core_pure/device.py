"""The default device: where tensors go when a creation op is given no ``device``."""

_default = []


def default_device():
    """The device creation ops use when given none (``ember.Cpu()`` unless changed)."""
    if not _default:
        from .backends.cpu import Cpu
        _default.append(Cpu())
    return _default[0]


def set_default_device(device):
    """Make ``device`` the default for creation ops; returns the previous default."""
    from .backend import Backend
    from .errors import ArgumentTypeError

    if not isinstance(device, Backend):
        raise ArgumentTypeError("set_default_device: expected a device such as ember.Cpu(), found %r"
                                % (device,))
    previous = default_device()
    _default[0] = device
    return previous


def resolve(device, op="device"):
    if device is None:
        return default_device()
    from .backend import Backend
    if not isinstance(device, Backend):
        from .errors import ArgumentTypeError
        raise ArgumentTypeError("%s: expected a device such as ember.Cpu(), found %r" % (op, device))
    return device
