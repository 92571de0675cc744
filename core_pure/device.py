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
    """``device`` as an ember device: a device itself, None (the default) or a name (``named``)."""
    if device is None:
        return default_device()
    if type(device) is str:
        return named(device, op)
    from .backend import Backend
    if not isinstance(device, Backend):
        from .errors import ArgumentTypeError
        raise ArgumentTypeError("%s: expected a device such as ember.Cpu() or a name such as \"cpu\", found %r"
                                % (op, device))
    return device


# PyTorch's device names and the ember device each stands for; "cuda" and "gpu" are the GPU ember
# drives (Wgpu, which runs on Vulkan, Metal or D3D12), an index after ":" must be 0
NAMES = ("cpu", "numpy", "wgpu", "gpu", "cuda")
_named = {}


def named(name, op="device"):
    """The device a PyTorch-style name stands for: ``"cpu"`` is ``ember.Cpu()``, ``"numpy"`` the
    NumPy device, ``"wgpu"``, ``"gpu"`` and ``"cuda"`` (or ``"cuda:0"``) the Wgpu device (one
    instance, made on first use). A name ember has no device for, or a device that cannot start
    here, is a ``DeviceError`` saying why.

    >>> ember.ones(3).to("cpu")
    """
    from .errors import DeviceError
    base, _, index = name.lower().partition(":")
    if base not in NAMES or (index and index != "0"):
        raise DeviceError("%s: no ember device is named %r; known names: %s (or an ember device such as "
                          "ember.Cpu())" % (op, name, ", ".join(NAMES)))
    kind = "wgpu" if base in ("gpu", "cuda") else base
    dev = _named.get(kind)
    if dev is not None:
        return dev
    if kind == "cpu":
        from .backends.cpu import Cpu
        dev = Cpu()
    else:
        try:
            if kind == "numpy":
                from ember.accel.numpy import NumPy
                dev = NumPy()
            else:
                from ember.accel.wgpu import Wgpu
                dev = Wgpu()
        except (ImportError, RuntimeError, OSError) as e:
            raise DeviceError("%s: device %r (ember.accel.%s) is not available here: %s"
                              % (op, name, "NumPy" if kind == "numpy" else "Wgpu", e))
    _named[kind] = dev
    return dev
