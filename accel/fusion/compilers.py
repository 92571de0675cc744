"""Which compiler runs fused kernels for a device (see ir.py for the contract).

- the C-backed ``ember.Cpu()``: generated C, compiled through cffi (``compile_c.py``), falling back
  to the interpreter where no C compiler works;
- ``ember.Cpu(kernels="python")`` (and ``EMBER_NO_C=1``): the single-pass interpreter
  (``interpret.py``), ember's reference semantics;
- ``Wgpu``: generated WGSL (``compile_wgsl.py``);
- anything else: None, and ``Fusion`` runs its ops unfused.
"""


def compiler_for(device):
    from ember.backends.cpu import Cpu
    if isinstance(device, Cpu):
        if getattr(device, "kernels", "python") == "c":
            from .compile_c import CCompiler
            return CCompiler(device)
        from .interpret import Interpreter
        return Interpreter(device)
    try:
        from ember.accel.wgpu import Wgpu
    except ImportError:
        return None
    if isinstance(device, Wgpu):
        from .compile_wgsl import WgslCompiler
        return WgslCompiler(device)
    return None
