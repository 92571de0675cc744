"""Embedding: a lookup table of ``num_embeddings`` rows of ``embedding_dim`` values."""
from ..errors import ArgumentError, DTypeError
from . import checks
from . import functional as F
from . import init
from .config import REQUIRED, Config
from .module import Module, Param


class Embedding(Module):
    """Rows of ``weight`` [num_embeddings, embedding_dim] at integer indices; weight drawn from
    N(0, 1) with the ``padding_idx`` row zero, as in PyTorch.

    >>> Embedding(10, 3)(ember.tensor([[1, 2], [4, 9]])).shape
    (2, 2, 3)
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, generator=None):
        super().__init__()
        checks.count(num_embeddings, "Embedding", "num_embeddings")
        checks.count(embedding_dim, "Embedding", "embedding_dim")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentError("Embedding: padding_idx must be in [-%d, %d), found %d"
                                    % (num_embeddings, num_embeddings, padding_idx))
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        weight = init.normal((num_embeddings, embedding_dim), 0.0, 1.0, generator, device)
        if padding_idx is not None:
            weight[padding_idx] = 0.0
        self.weight = Param(weight)

    def forward(self, index):
        checks.tensor(index, "Embedding", "index")
        if index.dtype.kind != "i":
            raise DTypeError("Embedding: expected an integer index tensor, found %s" % index.dtype.name)
        return F.embedding(index, self.weight, self.padding_idx)

    def extra_repr(self):
        s = "%d, %d" % (self.num_embeddings, self.embedding_dim)
        return s + (", padding_idx=%d" % self.padding_idx if self.padding_idx is not None else "")


class EmbeddingConfig(Config):
    """Builds ``Embedding(n_embedding, d_model, padding_idx)``."""

    FIELDS = (("n_embedding", REQUIRED, "int>0"), ("d_model", REQUIRED, "int>0"), ("padding_idx", None, "int"))

    def build(self, device, generator):
        return Embedding(self.n_embedding, self.d_model, self.padding_idx, device, generator)
