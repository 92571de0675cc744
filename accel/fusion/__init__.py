"""Kernel fusion as a backend decorator: ``Fusion(Wgpu())``, ``Autodiff(Fusion(Cpu()))``.

``ir.py`` is the kernel IR a compiler receives, ``graph.py`` the lazy graph, ``schedule.py`` how
the graph becomes kernels, ``compilers.py`` which compiler a device gets, ``explain.py`` how to
see what a call produced.
"""
from .device import Fusion
from .explain import explain, trace

__all__ = ["Fusion", "explain", "trace"]
