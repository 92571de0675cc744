"""The affine map of ``nn.Linear``."""
from ...composite import composite
from ...errors import ArgumentTypeError, ShapeError
from ...tensor import Tensor


@composite
def linear(x, weight, bias=None):
    """x @ weightᵀ + bias, with PyTorch's layout: ``weight`` is [out_features, in_features]."""
    for name, t in (("input", x), ("weight", weight), ("bias", bias)):
        if (t is not None or name != "bias") and type(t) is not Tensor:
            raise ArgumentTypeError("linear: expected a tensor %s, found %s" % (name, type(t).__name__))
    if len(weight.shape) not in (1, 2):
        raise ShapeError("linear: expected a weight of shape (out_features, in_features), found %s" % (weight.shape,))
    out = x @ weight.transpose(0, 1) if len(weight.shape) == 2 else x @ weight
    if bias is not None and bias.shape not in ((), out.shape[-1:]):
        raise ShapeError("linear: expected bias of shape (%d,) (out_features), found %s" % (out.shape[-1], bias.shape))
    return out + bias if bias is not None else out
