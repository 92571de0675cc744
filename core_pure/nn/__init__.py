"""ember.nn: modules, parameters and configs. Layers live in their own modules, imported on use.

    from ember.nn import Module, Param, Sequential
    from ember.nn.linear import Linear, LinearConfig
    from ember.nn.conv import Conv2d
    import ember.nn.functional as F

Importing ``ember.nn`` loads only ``Module``, ``Param`` and ``Config`` (MicroPython has no lazy
module attributes), so a board loads just the layer families a model uses. On CPython,
``import ember.nn.layers as nn`` gives every layer in one namespace (``nn.Linear``, ``nn.LSTM``).
"""
from .config import REQUIRED, Config
from .module import LoadReport, Module, ModuleDict, ModuleList, Param, Sequential
