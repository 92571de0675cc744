"""Composite ops: written once from primitives, replaceable per backend (the override hook).

``@composite`` registers a frontend function by name. When it is called, the device of its first
tensor argument is asked for an override (``Cpu.override("gelu", my_gelu)``) before the composite
body runs. The later autodiff decorator will look up a backward for the same name here.
"""

COMPOSITES = {}  # name -> the composite body
OVERRIDES = {}  # backend class -> {name: replacement}; empty tables are removed


def composite(fn):
    name = fn.__name__
    from .tensor import Tensor

    def dispatch(*args, **kwargs):
        if args and type(args[0]) is not Tensor:
            from .errors import ArgumentTypeError
            raise ArgumentTypeError("%s: expected a tensor as the first argument, found %s"
                                    % (name, type(args[0]).__name__))
        if OVERRIDES:
            for a in args + tuple(kwargs.values()):
                if type(a) is Tensor:
                    impl = OVERRIDES.get(type(a.device), {}).get(name)
                    if impl is not None:
                        return impl(*args, **kwargs)
                    break
        return fn(*args, **kwargs)

    try:  # keeps help() useful on CPython; MicroPython functions take no attributes
        dispatch.__name__ = name
        dispatch.__doc__ = fn.__doc__
    except AttributeError:
        pass
    COMPOSITES[name] = fn
    return dispatch
