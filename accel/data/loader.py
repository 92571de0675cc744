"""``DataLoader``: a dataset in batches, shuffled per epoch from a seed, optionally prepared ahead
by worker threads and moved onto a device.

    >>> loader = DataLoader(train, batch_size=32, shuffle=True, seed=0, workers=2, device=ember.Cpu())
    >>> for x, y in loader:              # epoch 0, then epoch 1 on the next loop, ...
    ...     ...
    >>> for x, y in loader.epoch(3, start=10):   # epoch 3 from its 11th batch (resuming a run)
    ...     ...

The order of epoch ``e`` depends only on ``(seed, e)``, so a run that resumes at epoch ``e`` sees
exactly the batches an uninterrupted run would. Workers never change the order: batch ``k`` is
always the ``k``-th one yielded.
"""
import collections
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError

from .dataset import gather, permutation

# numpy dtypes ember has no dtype for -> the ember-held dtype their values fit in
_WIDEN = {np.dtype("u1"): np.int32, np.dtype("u2"): np.int32, np.dtype("i2"): np.int32, np.dtype("u4"): np.int64}


def to_tensor(array, device):
    """A numpy array (or a number) as an ember tensor on ``device`` (shared memory on the NumPy
    device; uint8/int16/uint16 become int32 and uint32 int64, the ember dtypes that hold them)."""
    from ember.accel.numpy.interop import from_numpy
    a = np.asarray(array)
    wide = _WIDEN.get(a.dtype)
    if wide is not None:
        a = a.astype(wide)
    return from_numpy(np.ascontiguousarray(a), device)


def to_tensors(batch, device):
    """Every numpy array of a batch (an array, or a tuple/list/dict of them) as a tensor on ``device``."""
    if isinstance(batch, np.ndarray):
        return to_tensor(batch, device)
    if type(batch) in (tuple, list):
        return type(batch)(to_tensors(b, device) for b in batch)
    if type(batch) is dict:
        return {k: to_tensors(v, device) for k, v in batch.items()}
    return batch


def _int(v, name, low):
    if type(v) is not int or v < low:
        raise ArgumentError("DataLoader: %s must be an int >= %d, found %r" % (name, low, v))
    return v


class DataLoader:
    """Batches of ``dataset``.

    - ``batch_size``; ``drop_last`` drops a last batch smaller than ``batch_size``.
    - ``shuffle``: a new order every epoch, drawn from ``(seed, epoch)``.
    - ``batcher``: turns a list of items into a batch; the default stacks them (and uses the
      dataset's ``get_batch`` when it has one: one numpy gather per batch).
    - ``workers``: threads that prepare batches (``dataset`` access, batcher, device transfer)
      while the caller trains; ``prefetch``: how many batches are prepared ahead of the one
      the caller holds (0 with no workers: each batch is made when asked for).
    - ``device``: move every array of each batch there as a Tensor (None: numpy batches).
    """

    def __init__(self, dataset, batch_size=32, shuffle=False, seed=0, drop_last=False, batcher=None,
                 workers=0, prefetch=2, device=None):
        try:
            n = len(dataset)
        except TypeError:
            raise ArgumentTypeError("DataLoader: expected a dataset (len and indexing), found %s"
                                    % type(dataset).__name__)
        self.dataset = dataset
        self.batch_size = _int(batch_size, "batch_size", 1)
        self.workers = _int(workers, "workers", 0)
        self.prefetch = _int(prefetch, "prefetch", 0)
        if type(seed) is not int:
            raise ArgumentTypeError("DataLoader: seed must be an int, found %s" % type(seed).__name__)
        if batcher is not None and not callable(batcher):
            raise ArgumentTypeError("DataLoader: batcher must be callable, found %s" % type(batcher).__name__)
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.drop_last = bool(drop_last)
        self.batcher = batcher
        self.device = device
        self.next_epoch = 0
        if n == 0:
            raise ArgumentError("DataLoader: the dataset is empty")
        if len(self) == 0:
            raise ArgumentError("DataLoader: %d items make no batch of %d with drop_last=True" % (n, batch_size))

    def __len__(self):
        """Batches per epoch."""
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def order(self, epoch):
        """The item indices of ``epoch``, in the order they are served."""
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        return permutation(n, self.seed * 1000003 + epoch)

    def batch_indices(self, epoch):
        """[indices of batch 0, indices of batch 1, ...] for ``epoch``."""
        order = self.order(epoch)
        b = self.batch_size
        return [order[i:i + b] for i in range(0, len(self) * b, b)]

    def make_batch(self, indices):
        """The batch of the items at ``indices``: batcher, then device transfer."""
        if self.batcher is not None:
            batch = self.batcher([self.dataset[int(i)] for i in indices])
        else:
            batch = gather(self.dataset, indices)
        return batch if self.device is None else to_tensors(batch, self.device)

    def epoch(self, epoch, start=0):
        """An iterator over the batches of ``epoch``, from batch ``start`` on."""
        if type(epoch) is not int or epoch < 0:
            raise ArgumentError("DataLoader.epoch: epoch must be an int >= 0, found %r" % (epoch,))
        if type(start) is not int or not 0 <= start <= len(self):
            raise ArgumentError("DataLoader.epoch: start must be in [0, %d], found %r" % (len(self), start))
        todo = self.batch_indices(epoch)[start:]
        if self.workers == 0:
            return (self.make_batch(ix) for ix in todo)
        return _Prefetcher(self, todo)

    def __iter__(self):
        e = self.next_epoch
        self.next_epoch += 1
        return self.epoch(e)

    def __repr__(self):
        return "DataLoader(%d items, batch_size=%d, %d batches%s%s)" % (
            len(self.dataset), self.batch_size, len(self), ", shuffle (seed %d)" % self.seed if self.shuffle else "",
            ", %d workers" % self.workers if self.workers else "")


class _Prefetcher:
    """Yields ``make_batch`` of each index list in order; while the caller holds batch ``k``,
    worker threads prepare batches ``k+1 .. k+max(prefetch, workers)``. Closing it (or dropping it)
    cancels what is queued."""

    def __init__(self, loader, todo):
        self._make = loader.make_batch
        self._todo = collections.deque(todo)
        self._ahead = max(loader.prefetch, loader.workers)
        self._pool = ThreadPoolExecutor(loader.workers, thread_name_prefix="ember-data")
        self._pending = collections.deque()
        self._lock = threading.Lock()
        self._fill()

    def _fill(self):
        with self._lock:
            while self._todo and len(self._pending) < self._ahead:
                self._pending.append(self._pool.submit(self._make, self._todo.popleft()))

    def __iter__(self):
        return self

    def __next__(self):
        if not self._pending:
            self.close()
            raise StopIteration
        future = self._pending.popleft()
        try:
            batch = future.result()
        except BaseException:
            self.close()
            raise
        self._fill()
        return batch

    def close(self):
        for f in self._pending:
            f.cancel()
        self._pending.clear()
        self._todo.clear()
        self._pool.shutdown(wait=True)

    def __del__(self):
        try:
            self._pool.shutdown(wait=False, cancel_futures=True)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
