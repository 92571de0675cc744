"""The 1,797 real 8x8 handwritten digits (UCI "Optical Recognition of Handwritten Digits", the copy
scikit-learn ships), carried by ember as two small IDX files next to this module (README.md here
gives the source, the licence and how they were made). No network, no scikit-learn.
"""
import os

import numpy as np

from .dataset import InMemoryDataset
from .errors import DataError
from .idx import read_idx

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(HERE, "digits-images-idx3-ubyte.gz")
LABELS = os.path.join(HERE, "digits-labels-idx1-ubyte.gz")
COUNT = 1797


def load_digits(normalize=True):
    """The digits as ``InMemoryDataset(images, labels)``: images ``(1797, 1, 8, 8)``, float32 in
    [0, 1] (pixel counts 0..16 divided by 16), or with ``normalize=False`` the raw uint8 counts;
    labels int64 0..9. ``ds.targets`` are the labels (for stratified splits).

    >>> train, test = load_digits().split(0.2, seed=0, stratify=True)
    """
    images = read_idx(IMAGES)
    labels = read_idx(LABELS)
    if images.shape != (COUNT, 8, 8) or labels.shape != (COUNT,):
        raise DataError("load_digits: expected images (%d, 8, 8) and labels (%d,), found %s and %s"
                        % (COUNT, COUNT, images.shape, labels.shape))
    images = images[:, None]
    if normalize:
        images = images.astype(np.float32) / np.float32(16)
    return InMemoryDataset(images, labels.astype(np.int64))
