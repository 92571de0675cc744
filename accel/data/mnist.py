"""MNIST (or Fashion-MNIST, or any set in MNIST's layout) from IDX files in a folder the user gives."""
import os

import numpy as np

from ember.errors import ArgumentError

from .dataset import InMemoryDataset
from .errors import DataError
from .idx import read_idx

_PREFIX = {"train": "train", "test": "t10k"}


def _find(root, stem):
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        path = os.path.join(root, name)
        if os.path.isfile(path):
            return path
    raise DataError("load_mnist: no %s or %s.gz in %s" % (stem, stem, root))


def load_mnist(root, split="train", normalize=True):
    """``InMemoryDataset(images, labels)`` from ``<root>/train-images-idx3-ubyte[.gz]`` and
    ``train-labels-idx1-ubyte[.gz]`` (``split="test"``: the ``t10k-`` files). Images
    ``(N, 1, H, W)``, float32 in [0, 1] (``normalize=False``: the raw uint8); labels int64.
    Nothing is downloaded: fetch the four files once and pass their folder.
    """
    prefix = _PREFIX.get(split)
    if prefix is None:
        raise ArgumentError("load_mnist: split must be 'train' or 'test', found %r" % (split,))
    images_path = _find(root, prefix + "-images-idx3-ubyte")
    labels_path = _find(root, prefix + "-labels-idx1-ubyte")
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.ndim != 3:
        raise DataError("load_mnist: %s: expected images of shape (N, H, W), found %s" % (images_path, images.shape))
    if labels.ndim != 1:
        raise DataError("load_mnist: %s: expected labels of shape (N,), found %s" % (labels_path, labels.shape))
    if len(images) != len(labels):
        raise DataError("load_mnist: %s holds %d images but %s holds %d labels"
                        % (images_path, len(images), labels_path, len(labels)))
    images = images[:, None]
    if normalize:
        images = images.astype(np.float32) / np.float32(255)
    return InMemoryDataset(images, labels.astype(np.int64))
