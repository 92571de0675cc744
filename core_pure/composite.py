"""Composite ops: written once from primitives, replaceable per backend (the override hook).

``@composite`` registers a frontend function by name. When it is called, the class of the device
of its first tensor argument is asked, in order, for

1. an override (``Cpu.override("gelu", my_gelu)``): it runs instead of the composite body;
2. a recorder (``Autodiff`` registers one): it decides how the call is recorded for backward —
   as one node when the composite or the inner device's override brings a backward, else by
   running the body so each primitive records itself.

With no override and no recorder registered, the cost is two empty-dict tests.
"""

COMPOSITES = {}  # name -> the composite body
OVERRIDES = {}  # backend class -> {name: replacement}; empty tables are removed
OVERRIDE_BACKWARDS = {}  # backend class -> {name: backward of that replacement}
BACKWARDS = {}  # name -> backward of the composite body itself (registered by ember.accel.autodiff)
RECORDERS = {}  # backend class -> recorder(device, name, body, args, kwargs)


def composite(fn):
    name = fn.__name__
    from .tensor import Tensor

    def dispatch(*args, **kwargs):
        if args and type(args[0]) is not Tensor:
            from .errors import ArgumentTypeError
            raise ArgumentTypeError("%s: expected a tensor as the first argument, found %s"
                                    % (name, type(args[0]).__name__))
        if OVERRIDES or RECORDERS:
            for a in args + tuple(kwargs.values()):
                if type(a) is Tensor:
                    cls = type(a.device)
                    impl = OVERRIDES.get(cls, {}).get(name)
                    if impl is not None:
                        return impl(*args, **kwargs)
                    recorder = RECORDERS.get(cls)
                    if recorder is not None:
                        return recorder(a.device, name, fn, args, kwargs)
                    break
        return fn(*args, **kwargs)

    try:  # keeps help() useful on CPython; MicroPython functions take no attributes
        dispatch.__name__ = name
        dispatch.__doc__ = fn.__doc__
    except AttributeError:
        pass
    COMPOSITES[name] = fn
    return dispatch
