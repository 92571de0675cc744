"""``compiler_for(device)``: the fusion compiler of a Cpu device.

``Cpu(kernels="python")`` (and ``ember.Cpu()`` under ``EMBER_NO_C=1``, which is then the pure
device) gets the ``Interpreter``; the C-backed Cpu gets the ``CCompiler``, which itself falls back
to the interpreter where no C compiler works. One compiler per kind, so compiled kernels are shared
by every device of that kind.
"""
import os

from ember.errors import DeviceError

_compilers = {}


def compiler_for(device):
    """The compiler that runs fused kernels for ``device`` (a Cpu of either kind).

    >>> compiler_for(ember.Cpu(kernels="python")).name
    'interpreter'
    """
    from ember.backends.cpu.device import Cpu
    if not isinstance(device, Cpu):
        raise DeviceError("compiler_for: expected a Cpu device, found %r" % (device,))
    pure = getattr(device, "kernels", "python") != "c" or os.environ.get("EMBER_NO_C") not in (None, "", "0")
    kind = "interpreter" if pure else "c"
    compiler = _compilers.get(kind)
    if compiler is None:
        if pure:
            from .interpret import Interpreter
            compiler = Interpreter()
        else:
            from .compile_c import CCompiler
            compiler = CCompiler()
        _compilers[kind] = compiler
    return compiler
