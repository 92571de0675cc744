"""ember.nn: modules, parameters and configs, with every layer reachable as ``nn.<Name>``.

    import ember.nn as nn
    import ember.nn.functional as F
    model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = nn.CrossEntropyLoss()(model(x), y)

Importing ``ember.nn`` loads only ``Module``, ``Param`` and ``Config``; a layer's module loads the
first time one of its names is read (a module-level ``__getattr__``, which MicroPython 1.27+ has
too), so a board loads just the layer families a model uses. ``from ember.nn.linear import Linear``
still works, and ``import ember.nn.layers`` loads every layer at once.
"""
import sys as _sys
from .config import REQUIRED, Config
from .module import LoadReport, Module, ModuleDict, ModuleList, Param, Sequential

# module -> the names it defines (each also with its Config); a capitalized name missing here is
# looked up in ember.nn.layers, which loads every layer
_FAMILIES = (
    ("activation", "ELU GELU Hardsigmoid Hardswish LeakyReLU LogSoftmax Mish ReLU SiLU Sigmoid Softmax "
                   "Softplus Tanh Softsign SELU ReLU6 LogSigmoid CELU Hardtanh Softmin"),
    ("attention", "MultiHeadAttention MultiheadAttention"),
    ("conv", "Conv1d Conv2d Conv3d ConvTranspose2d ConvTranspose3d"),
    ("dropout", "Dropout Dropout1d Dropout2d Dropout3d"),
    ("embedding", "Embedding"),
    ("flatten", "Flatten Identity"),
    ("linear", "Bilinear Linear"),
    ("loss", "CrossEntropyLoss NLLLoss MSELoss L1Loss BCELoss BCEWithLogitsLoss HuberLoss SmoothL1Loss "
             "KLDivLoss"),
    ("norm", "BatchNorm1d BatchNorm2d GroupNorm LayerNorm RMSNorm"),
    ("pool", "AdaptiveAvgPool2d AvgPool1d AvgPool2d AvgPool3d MaxPool1d MaxPool2d MaxPool3d MaxUnpool2d"),
    ("positional", "PositionalEncoding RotaryEncoding"),
    ("recurrent", "GRU LSTM"),
    ("transformer", "TransformerEncoder TransformerEncoderLayer"),
)


def _family(name):
    """The layer module that defines ``name`` (or its Config), or None."""
    base = name[:-6] if name.endswith("Config") else name
    for module, names in _FAMILIES:
        if base in names.split():
            return module
    return None


def __getattr__(name):
    if "A" <= name[:1] <= "Z":
        family = _family(name) or "layers"
        module = __import__("ember.nn." + family, None, None, [name])
        try:
            value = getattr(module, name)
        except AttributeError:
            raise AttributeError("module 'ember.nn' has no attribute %r" % (name,))
    else:
        # a submodule not imported yet (``nn.functional``, and ``from . import checks`` inside
        # ember.nn, which MicroPython resolves through this function)
        try:
            if name[:2] == "__":
                raise ImportError(name)
            __import__("ember.nn." + name)  # a fromlist of "*" would load all of a package's __all__
            value = _sys.modules["ember.nn." + name]
        except ImportError:
            raise AttributeError("module 'ember.nn' has no attribute %r" % (name,))
    globals()[name] = value  # later reads skip this function
    return value
