"""Datasets: anything with ``len(ds)`` and ``ds[i]``, plus the in-memory dataset and its views.

    >>> ds = InMemoryDataset(images, labels)          # numpy arrays with the same first dim
    >>> ds[0]                                         # (image, label)
    >>> train, valid = ds.split(0.2, seed=0, stratify=True)
    >>> small = train.shuffle(seed=1).subset(range(100)).map(lambda item: (item[0] * 2, item[1]))

A dataset may also offer ``get_batch(indices)`` returning the collated batch (a tuple of arrays):
``InMemoryDataset`` and its ``Subset``s gather a batch with one numpy indexing per array instead of
one ``ds[i]`` per item. ``targets`` (an int array), where a dataset has it, drives stratified splits.
"""
import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, IndexOutOfRange


def stack(items):
    """The default batcher: a list of items (tuples of arrays or numbers, or single arrays) as one
    batch, a tuple of arrays with a leading batch dim (a single array for single-array items)."""
    if not items:
        raise ArgumentError("stack: expected at least one item")
    first = items[0]
    if type(first) is tuple:
        return tuple(np.stack([np.asarray(item[k]) for item in items]) for k in range(len(first)))
    return np.stack([np.asarray(item) for item in items])


class Dataset:
    """Base class (optional: any object with ``__len__`` and ``__getitem__`` is a dataset). Gives
    every dataset the transforms ``map``, ``shuffle``, ``subset`` and ``split``."""

    def __len__(self):
        raise NotImplementedError("%s.__len__ is not defined" % type(self).__name__)

    def __getitem__(self, index):
        raise NotImplementedError("%s.__getitem__ is not defined" % type(self).__name__)

    def get_batch(self, indices):
        """The items at ``indices`` collated by ``stack``."""
        return stack([self[int(i)] for i in indices])

    def map(self, fn, batched=False):
        """A view whose items are ``fn(item)``; ``batched=True``: ``fn`` takes and returns a whole
        collated batch (fast for normalization over numpy arrays)."""
        return MappedDataset(self, fn, batched)

    def shuffle(self, seed):
        """A view with the items in an order drawn from ``seed``."""
        return shuffle(self, seed)

    def subset(self, indices):
        """A view of the items at ``indices`` (a list, range or int array), in that order."""
        return Subset(self, indices)

    def split(self, valid_fraction, seed=0, stratify=False):
        """``(train, valid)`` views: see ``train_valid_split``."""
        return train_valid_split(self, valid_fraction, seed, stratify)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def _check_index(index, n, op):
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise ArgumentTypeError("%s: expected an int index, found %s" % (op, type(index).__name__))
    index = int(index)
    if not -n <= index < n:
        raise IndexOutOfRange("%s: index %d out of range for %d items" % (op, index, n))
    return index + n if index < 0 else index


class InMemoryDataset(Dataset):
    """Items from arrays held in memory: ``ds[i]`` is ``(arrays[0][i], arrays[1][i], ...)`` (the
    element itself for a single array). ``targets`` is the last array when there are two or more.

    >>> ds = InMemoryDataset(np.zeros((10, 1, 8, 8), np.float32), np.arange(10) % 2)
    >>> x, y = ds.get_batch([0, 3])   # shapes (2, 1, 8, 8) and (2,)
    """

    def __init__(self, *arrays):
        if not arrays:
            raise ArgumentError("InMemoryDataset: expected at least one array")
        arrays = tuple(np.asarray(a) for a in arrays)
        for i, a in enumerate(arrays):
            if a.ndim == 0:
                raise ArgumentError("InMemoryDataset: array %d is 0-d; expected a leading item dim" % i)
        n = len(arrays[0])
        lengths = [len(a) for a in arrays]
        if any(m != n for m in lengths):
            raise ArgumentError("InMemoryDataset: arrays must have the same length, found %s" % lengths)
        self.arrays = arrays

    @property
    def targets(self):
        """The last array (the labels) when there are several, else None."""
        return self.arrays[-1] if len(self.arrays) > 1 else None

    def __len__(self):
        return len(self.arrays[0])

    def __getitem__(self, index):
        i = _check_index(index, len(self), "InMemoryDataset")
        if len(self.arrays) == 1:
            return self.arrays[0][i]
        return tuple(a[i] for a in self.arrays)

    def get_batch(self, indices):
        idx = np.asarray(indices, dtype=np.int64)
        if len(self.arrays) == 1:
            return self.arrays[0][idx]
        return tuple(a[idx] for a in self.arrays)

    def __repr__(self):
        return "InMemoryDataset(%d items: %s)" % (len(self), ", ".join(
            "%s %s" % (a.dtype, a.shape[1:]) for a in self.arrays))


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``, in that order (a view: nothing is copied)."""

    def __init__(self, dataset, indices):
        idx = np.asarray(list(indices) if type(indices) is range else indices, dtype=np.int64).reshape(-1)
        n = len(dataset)
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = int(idx[(idx < -n) | (idx >= n)][0])
            raise IndexOutOfRange("Subset: index %d out of range for a dataset of %d items" % (bad, n))
        self.dataset = dataset
        self.indices = np.where(idx < 0, idx + n, idx)

    @property
    def targets(self):
        """The underlying dataset's targets at this subset's indices, or None."""
        t = getattr(self.dataset, "targets", None)
        return None if t is None else np.asarray(t)[self.indices]

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, index):
        return self.dataset[int(self.indices[_check_index(index, len(self), "Subset")])]

    def get_batch(self, indices):
        return gather(self.dataset, self.indices[np.asarray(indices, dtype=np.int64)])

    def __repr__(self):
        return "Subset(%d of %d items)" % (len(self), len(self.dataset))


class MappedDataset(Dataset):
    """``dataset`` with ``fn`` applied to each item (or, ``batched``, to each collated batch)."""

    def __init__(self, dataset, fn, batched=False):
        if not callable(fn):
            raise ArgumentTypeError("map: expected a callable, found %s" % type(fn).__name__)
        self.dataset = dataset
        self.fn = fn
        self.batched = batched

    @property
    def targets(self):
        """The underlying dataset's targets (a transform leaves labels alone), or None."""
        return getattr(self.dataset, "targets", None)

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        if self.batched:
            i = _check_index(index, len(self), "MappedDataset")
            batch = self.fn(gather(self.dataset, [i]))
            return tuple(a[0] for a in batch) if type(batch) is tuple else batch[0]
        return self.fn(self.dataset[index])

    def get_batch(self, indices):
        if self.batched:
            return self.fn(gather(self.dataset, indices))
        return stack([self.fn(self.dataset[int(i)]) for i in indices])


def gather(dataset, indices):
    """The batch of ``dataset``'s items at ``indices``: its ``get_batch`` when it has one (any
    dataset may lack it), else its items collated by ``stack``."""
    get = getattr(dataset, "get_batch", None)
    if get is not None:
        return get(indices)
    return stack([dataset[int(i)] for i in indices])


def permutation(n, seed):
    """A permutation of ``range(n)`` drawn from ``seed`` with ember's generator (the same on every
    platform and numpy version)."""
    from ember import Generator
    order = list(range(n))
    Generator(seed).shuffle(order)
    return np.asarray(order, dtype=np.int64)


def shuffle(dataset, seed):
    """A view of ``dataset`` with its items in an order drawn from ``seed``."""
    if type(seed) is not int:
        raise ArgumentTypeError("shuffle: seed must be an int, found %s" % type(seed).__name__)
    return Subset(dataset, permutation(len(dataset), seed))


def subset(dataset, indices):
    """A view of the items of ``dataset`` at ``indices``."""
    return Subset(dataset, indices)


def train_valid_split(dataset, valid_fraction, seed=0, stratify=False):
    """Split ``dataset`` into ``(train, valid)`` views, ``valid`` holding ``valid_fraction`` of the
    items, drawn with ``seed``. Each part keeps the dataset's order.

    ``stratify``: False; True (use ``dataset.targets``); or an array of class labels. Stratified,
    each class gives ``round(valid_fraction * its count)`` items to ``valid``, so both parts keep
    the class proportions.
    """
    if type(valid_fraction) not in (int, float) or not 0 < valid_fraction < 1:
        raise ArgumentError("train_valid_split: valid_fraction must be in (0, 1), found %r" % (valid_fraction,))
    n = len(dataset)
    if stratify is False or stratify is None:
        order = permutation(n, seed)
        k = int(round(valid_fraction * n))
        valid = order[:k]
    else:
        labels = getattr(dataset, "targets", None) if stratify is True else stratify
        if labels is None:
            raise ArgumentError("train_valid_split: stratify=True needs a dataset with targets "
                                "(InMemoryDataset(inputs, targets)); pass the labels instead")
        labels = np.asarray(labels).reshape(-1)
        if len(labels) != n:
            raise ArgumentError("train_valid_split: %d labels for %d items" % (len(labels), n))
        valid = []
        for c_i, c in enumerate(np.unique(labels)):
            members = np.flatnonzero(labels == c)
            members = members[permutation(len(members), seed * 1000003 + c_i)]
            valid.extend(members[:int(round(valid_fraction * len(members)))].tolist())
        valid = np.asarray(valid, dtype=np.int64)
    if len(valid) == 0 or len(valid) == n:
        raise ArgumentError("train_valid_split: a fraction of %r of %d items leaves one part empty"
                            % (valid_fraction, n))
    mask = np.zeros(n, dtype=bool)
    mask[valid] = True
    return Subset(dataset, np.flatnonzero(~mask)), Subset(dataset, np.flatnonzero(mask))


__all__ = ["Dataset", "InMemoryDataset", "Subset", "MappedDataset", "stack", "gather", "permutation", "shuffle",
           "subset", "train_valid_split"]
