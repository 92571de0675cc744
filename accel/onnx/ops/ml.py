"""The numeric ops of ``ai.onnx.ml`` that are plain tensor algebra."""
import ember

from . import op
from .util import scalar_like

DOMAIN = "ai.onnx.ml"


@op("Binarizer", attrs="threshold", domain=DOMAIN)
def binarizer(n, x):
    return (x > n.attr("threshold", 0.0)).to(x.dtype)


@op("ArrayFeatureExtractor", domain=DOMAIN)
def array_feature_extractor(n, x, idx):
    out = x.index_select(x.dim() - 1, idx.reshape(-1).to(ember.int64))
    return out.reshape(1, -1) if x.dim() == 1 else out


@op("Normalizer", attrs="norm", domain=DOMAIN)
def normalizer(n, x):
    kind = n.attr("norm", "MAX")
    if kind == "MAX":
        d = x.max(dim=1, keepdim=True)[0]
    elif kind == "L1":
        d = x.abs().sum(dim=1, keepdim=True)
    else:
        d = (x * x).sum(dim=1, keepdim=True).sqrt()
    return x / ember.where(d == 0, scalar_like(1, d), d)
