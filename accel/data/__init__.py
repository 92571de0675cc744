"""``ember.accel.data``: datasets, transforms, batching and the data ember can train on offline.

>>> from ember.accel.data import DataLoader, load_digits
>>> train, test = load_digits().split(0.2, seed=0, stratify=True)   # 1,437 / 360 images
>>> loader = DataLoader(train, batch_size=32, shuffle=True, seed=0, workers=2, device=ember.Cpu())
>>> for images, labels in loader:        # Tensors (32, 1, 8, 8) float32 and (32,) int64
...     ...

- A dataset is anything with ``len(ds)`` and ``ds[i]``; ``Dataset`` adds the transforms ``map``,
  ``shuffle(seed)``, ``subset(indices)`` and ``split(valid_fraction, seed, stratify)``.
- ``InMemoryDataset(*arrays)``: items from numpy arrays, gathered a batch at a time.
- ``DataLoader``: batch size, per-epoch shuffling from a seed, ``drop_last``, a custom batcher,
  worker threads with prefetch, transfer to a device.
- ``load_digits()``: the 1,797 8x8 digits shipped with ember; ``load_mnist(folder)`` reads MNIST's
  IDX files; ``read_idx``/``write_idx`` the format itself. Bad files raise ``DataError``.

Needs numpy (``pip install ember[train]`` or ``ember[numpy]``).
"""
from .dataset import (Dataset, InMemoryDataset, MappedDataset, Subset, permutation, shuffle, stack, subset,
                      train_valid_split)
from .digits import load_digits
from .errors import DataError
from .idx import read_idx, write_idx
from .loader import DataLoader, to_tensor, to_tensors
from .mnist import load_mnist

__all__ = ["Dataset", "InMemoryDataset", "MappedDataset", "Subset", "permutation", "shuffle", "stack", "subset",
           "train_valid_split", "load_digits", "DataError", "read_idx", "write_idx", "DataLoader", "to_tensor",
           "to_tensors", "load_mnist"]
