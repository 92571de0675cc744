"""Stateless neural-network ops (PyTorch's ``torch.nn.functional``), composed from primitives; each
is a composite a backend may replace.

The ops live in one module per family (``activation``, ``conv``, ``pool``, ``loss``...; a family is
never named like one of its ops, which MicroPython would shadow with the module), each imported on
the first use of one of its ops: a board running a small MLP holds the code of ``linear``, ``relu``
and its loss, not of 3-D convolutions and attention. ``F.conv2d`` and ``from ember.nn.functional
import conv2d`` both work as usual.

>>> import ember.nn.functional as F
>>> F.softmax(ember.tensor([1.0, 2.0]), dim=0)
"""
from ...elementwise import relu  # noqa: F401  (relu is a core composite; F.relu is it)

# family module -> the ops it defines
FAMILIES = {
    "activation": ("celu", "elu", "gelu", "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "log_softmax",
                   "logsigmoid", "mish", "relu6", "selu", "sigmoid", "silu", "softmax", "softmin", "softplus",
                   "softsign", "tanh"),
    "affine": ("linear",),
    "conv": ("add_bias", "conv1d", "conv2d", "conv_args", "conv_transpose", "conv_transpose2d"),
    "pool": ("adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "max_pool1d", "max_pool2d"),
    "drop": ("dropout", "dropout1d", "dropout2d", "dropout3d"),
    "lookup": ("embedding", "one_hot"),
    "norm": ("batch_norm", "group_norm", "layer_norm", "normalize", "rms_norm"),
    "resample": ("interpolate", "pad"),
    "attention": ("scaled_dot_product_attention",),
    "loss": ("binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "huber_loss",
             "kl_div", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss"),
    "spatial": ("avg_pool3d", "conv3d", "conv_transpose3d", "max_pool3d", "max_unpool2d", "unfold"),
}
_HOME = {name: family for family, names in FAMILIES.items() for name in names}

__all__ = ["relu"] + sorted(_HOME)


def __getattr__(name):
    """The op ``name``, importing its family's module the first time one of its ops is asked for."""
    family = _HOME.get(name)
    if family is None:
        raise AttributeError("module 'ember.nn.functional' has no attribute '%s'" % name)
    module = __import__("ember.nn.functional." + family, None, None, (name,))
    fn = getattr(module, name)
    globals()[name] = fn  # the next F.<name> is a plain attribute
    return fn


def __dir__():
    return __all__


# Where the C kernels load, the C-backed Cpu runs some of these as fused kernels (nn/fused_c.py).
from ...backends.cpu import ckernels as _ckernels  # noqa: E402

if _ckernels.available():
    from .. import fused_c  # noqa: E402, F401
