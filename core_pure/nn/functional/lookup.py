"""Lookups: embedding rows and one-hot vectors."""
from ...composite import composite
from ...errors import ArgumentTypeError, ShapeError
from ...tensor import Tensor


@composite
def embedding(index, weight, padding_idx=None):
    """Rows of ``weight`` ([num_embeddings, dim]) at ``index``; output shape index.shape + (dim,)."""
    from ...indexing import index_select
    if type(weight) is not Tensor or len(weight.shape) != 2:
        raise ShapeError("embedding: expected a 2-D weight, found %s"
                         % (("shape %s" % (weight.shape,)) if type(weight) is Tensor else type(weight).__name__))
    if type(index) is not Tensor:
        raise ArgumentTypeError("embedding: expected an int tensor index, found %s" % type(index).__name__)
    flat = index.reshape(-1)
    rows = index_select(weight, 0, flat, "embedding")
    if padding_idx is not None:  # the padding row's lookups carry no gradient back to the weight
        from ...elementwise import where
        rows = where((flat == padding_idx).unsqueeze(1), index_select(weight.detach(), 0, flat, "embedding"), rows)
    return rows.reshape(index.shape + (weight.shape[1],))


def one_hot(index, num_classes=-1):
    """int64 one-hot vectors of ``index`` along a new last dim (``num_classes=-1``: the max index + 1)."""
    from ...indexing import one_hot as _one_hot
    return _one_hot(index, num_classes)
