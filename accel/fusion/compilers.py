"""``compiler_for(device)``: which compiler runs fused kernels for a device (ir.py: the contract).

- ``Cpu(kernels="python")`` (and ``ember.Cpu()`` under ``EMBER_NO_C=1``, which is then the pure
  device): the ``Interpreter``, ember's reference semantics in one pass over memory;
- the C-backed ``ember.Cpu()``: the ``CCompiler`` (generated C through cffi), which itself falls
  back to the interpreter where no C compiler works;
- ``Wgpu``: the ``WgslCompiler`` (generated WGSL), one per GPU device;
- anything else: None, and ``Fusion`` runs the ops unfused.

One Cpu compiler per kind, so compiled kernels are shared by every device of that kind.
"""
import os

_compilers = {}


def compiler_for(device):
    """The compiler that runs fused kernels for ``device``, or None.

    >>> compiler_for(ember.Cpu(kernels="python")).name
    'interpreter'
    """
    from ember.backends.cpu.device import Cpu
    if isinstance(device, Cpu):
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
    import sys
    wgpu = sys.modules.get("ember.accel.wgpu")  # a Wgpu device exists only once its module is loaded
    if wgpu is not None and isinstance(device, wgpu.Wgpu):
        key = ("wgpu", id(device))
        compiler = _compilers.get(key)
        if compiler is None:
            from .compile_wgsl import WgslCompiler
            compiler = _compilers[key] = WgslCompiler(device)
        return compiler
    return None
