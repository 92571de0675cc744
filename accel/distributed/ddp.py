"""``DistributedDataParallel``: the Learner's strategy for data parallelism over MPI ranks.

Each rank trains a replica on its shard of every batch (``shard(loader)``: the rank's contiguous
slice of each global batch, so every sample is seen once per epoch across the ranks). The loss of
a shard is scaled by ``shard / batch`` before backward, so the sum of the ranks' gradients is the
gradient of the whole batch's mean loss, as ``DataParallel`` does across threads. Gradients are
summed in buckets (about ``bucket_mb`` each, last layer first): a bucket's ``Iallreduce`` starts as
soon as the backward walk has finished its last gradient (``ember.accel.autodiff.leaf_gradients``)
and runs while the walk goes on through the earlier layers.
"""
from array import array

import numpy as np

from ember.backend import grad_device
from ember import dtypes
from ember.backends.cpu.array import CpuArray
from ember.errors import ArgumentError, ArgumentTypeError
from ember.tensor import Tensor

from ember.accel.autodiff.graph import leaf_gradients
from ember.accel.data.loader import DataLoader
from ember.accel.numpy.device import NumPy
from ember.accel.numpy.interop import from_numpy
from ember.accel.optim import GradientsParams
from ember.accel.train.strategy import Strategy

from . import buffers, comm


class RankShard(DataLoader):
    """``loader`` as one rank sees it: the same batches per epoch (same order, same count, so
    every rank steps together and a checkpoint's position means the same at any world size), each
    cut to this rank's contiguous slice."""

    def __init__(self, loader, rank, world):
        if not isinstance(loader, DataLoader):
            raise ArgumentTypeError("DistributedDataParallel.shard: expected a DataLoader, found %s"
                                    % type(loader).__name__)
        if loader.batch_size < world:
            raise ArgumentError("DistributedDataParallel.shard: batch_size %d gives some of the %d ranks no "
                                "sample; expected batch_size >= world size" % (loader.batch_size, world))
        self.__dict__.update(loader.__dict__)
        self.full = loader
        self.rank = rank
        self.world = world

    def batch_indices(self, epoch):
        """[this rank's indices of batch 0, of batch 1, ...] for ``epoch``."""
        out = []
        for ix in self.full.batch_indices(epoch):
            n = len(ix)
            out.append(ix[n * self.rank // self.world:n * (self.rank + 1) // self.world])
        return out

    def __repr__(self):
        return "RankShard(rank %d of %d, %r)" % (self.rank, self.world, self.full)


class _Bucket:
    __slots__ = ("params", "offsets", "buffer", "filled", "request")

    def __init__(self, params, dtype):
        self.params = params
        self.offsets = {}
        n = 0
        for p in params:
            size = 1
            for s in p.value.shape:
                size *= s
            self.offsets[p.id] = (n, n + size)
            n += size
        self.buffer = np.zeros(n, dtype)
        self.filled = set()
        self.request = None


def _buckets(params, limit):
    """Parameters grouped in the order backward finishes them (last first), each group of one
    dtype and at most ``limit`` bytes (a bigger parameter is a group of its own)."""
    groups, current, size, dtype = [], [], 0, None
    for p in reversed(params):
        d = buffers.host_dtype(p.value.dtype)
        nbytes = d.itemsize * max(1, int(np.prod(p.value.shape, dtype=np.int64)))
        if current and (d != dtype or size + nbytes > limit):
            groups.append(_Bucket(current, dtype))
            current, size = [], 0
        current.append(p)
        size += nbytes
        dtype = d
    if current:
        groups.append(_Bucket(current, dtype))
    return groups


class _Reducer:
    """One backward pass's bucketed all-reduce: buckets start in a fixed order (every rank must
    issue the same collectives in the same order), each once all its gradients are in."""

    def __init__(self, buckets):
        self.buckets = buckets
        self.where = {}
        for b in buckets:
            b.filled.clear()
            b.request = None
            for p in b.params:
                self.where[p.id] = b
        self.next = 0
        self.device = None

    def ready(self, id, grad):
        """The leaf hook: copy a finished gradient into its bucket; start what can start."""
        b = self.where.get(id)
        if b is None:
            return
        if self.device is None:
            self.device = grad.device
        a, z = b.offsets[id]
        b.buffer[a:z] = buffers.host(grad).reshape(-1)
        b.filled.add(id)
        self._start(all_in=False)
        live = [x.request for x in self.buckets[:self.next] if x.request is not None]
        if live:
            comm._group.MPI.Request.Testall(live)  # lets MPI move the started buckets along

    def _start(self, all_in):
        while self.next < len(self.buckets):
            b = self.buckets[self.next]
            if not all_in and len(b.filled) < len(b.params):
                return
            b.request = comm.iall_reduce_sum(comm._group.MPI.IN_PLACE, b.buffer, "DistributedDataParallel")
            self.next += 1

    def finish(self, grads, scale):
        """The summed gradients times ``scale`` (``GradientsParams``): buckets the hook did not
        complete (a parameter that got no gradient here counts as zeros) start now; waits for all."""
        for b in self.buckets[self.next:]:
            for p in b.params:
                if p.id in b.filled:
                    continue
                a, z = b.offsets[p.id]
                g = grads.by_id.get(p.id)
                if g is not None:
                    if self.device is None:
                        self.device = g.device
                    b.buffer[a:z] = buffers.host(g).reshape(-1)
                else:
                    b.buffer[a:z] = 0
        self._start(all_in=True)
        comm.wait([b.request for b in self.buckets], "DistributedDataParallel (gradient all-reduce)")
        out = {}
        for b in self.buckets:
            b.buffer *= scale
            for p in b.params:
                a, z = b.offsets[p.id]
                out[p.id] = _tensor(b.buffer[a:z], p.value, self.device)
        return GradientsParams(out)


def _tensor(values, param_value, device):
    """A new tensor of ``param_value``'s shape and dtype on ``device`` holding ``values`` (copied
    out of a bucket, into storage ``buffers.storage`` may reuse from an earlier step)."""
    shape, dtype = tuple(param_value.shape), param_value.dtype
    data, flat = buffers.storage(device, dtype, len(values))
    flat[...] = values
    out = Tensor(CpuArray(data, shape, dtype), shape, dtype, device) if type(data) is array else None
    if out is None and isinstance(device, NumPy) and dtype is not dtypes.bfloat16:
        out = Tensor(flat.reshape(shape), shape, dtype, device)
    if out is None:
        out = from_numpy(flat.reshape(shape), device)
        out = out if out.dtype is dtype else out.to(dtype)
    return out


class DistributedDataParallel(Strategy):
    """Data parallelism over the ranks of an MPI job, for ``Learner(strategy=...)``.

    >>> from ember.accel import distributed as dist
    >>> ddp = dist.DistributedDataParallel()            # joins the job (dist.init())
    >>> learner = Learner(model, AdamW(model, lr=1e-3), F.cross_entropy, epochs=5, run_dir="runs/a",
    ...                   strategy=ddp)
    >>> learner.fit(ddp.shard(DataLoader(train, batch_size=128, shuffle=True)), valid)

    Run it with ``mpirun -n 4 python train.py``. Every rank starts from rank 0's weights, trains on
    its slice of each batch of ``batch_size``, and ends each step with the same summed gradients,
    so the weights are those of one process training on the whole batch. Rank 0 writes the
    checkpoints, the run log and shows the progress; the others wait for each checkpoint.
    ``bucket_mb``: the size of the gradient buckets; ``timeout``: seconds a collective waits for
    the other ranks (``dist.init``).
    """

    def __init__(self, bucket_mb=1.0, timeout=None):
        if type(bucket_mb) not in (int, float) or not bucket_mb > 0:
            raise ArgumentError("DistributedDataParallel: bucket_mb must be a number > 0, found %r" % (bucket_mb,))
        if timeout is not None or not comm.is_initialized():
            comm.init(timeout)
        self.bucket_bytes = int(bucket_mb * 2 ** 20)
        self.rank = comm.rank()
        self.world = comm.world_size()
        self.is_main = self.rank == 0
        self._plan = None
        self._synced = None
        self._meta = None
        self._meta_send = None
        self._stepped = False
        self._stop_mine = None  # a stop asked for on this rank, until the ranks have agreed on it

    def shard(self, loader):
        """This rank's view of ``loader`` (a ``RankShard``): its slice of each batch."""
        return RankShard(loader, self.rank, self.world)

    def _sync_weights(self, model):
        """Rank 0's parameter values on every rank (once per model)."""
        if self._synced is model:
            return
        for p in model.parameters():
            p.value = comm.broadcast(p.value)
        self._synced = model

    def _buckets(self, model):
        params = [p for p in model.parameters() if p.requires_grad]
        key = tuple((p.id, tuple(p.value.shape), p.value.dtype.name) for p in params)
        if self._plan is None or self._plan[0] != key:
            self._plan = (key, _buckets(params, self.bucket_bytes))
        return self._plan[1]

    def step(self, model, loss_fn, x, y):
        """``(grads, loss, logits)`` of this rank's shard ``x``, ``y``: the whole batch's mean-loss
        gradients, its mean loss and this shard's logits (``outputs`` gathers them on rank 0).

        One small float64 all-reduce, started after forward and overlapped with backward, carries
        every rank's batch size, its loss sum and its stop flag (``agree_stop``); the gradient
        buckets carry sums of per-sample gradients, divided by the batch size at the end."""
        self._sync_weights(model)
        n = x.shape[0]
        logits = model(x)
        loss = loss_fn(logits, y)
        summing = self._start_meta(n, loss.item())
        reducer = _Reducer(self._buckets(model))
        with leaf_gradients(reducer.ready):
            grads = (loss * float(n)).backward()
        comm.wait(summing, "DistributedDataParallel (batch sizes and loss)")
        total, mean_loss = self._finish_meta()
        return reducer.finish(grads, 1.0 / total), mean_loss, logits

    def _start_meta(self, n, loss):
        """Start the small float64 all-reduce of this rank's batch size ``n``, loss sum (``loss``
        is its shard's mean) and stop flag; the request."""
        w = self.world
        send = self._meta_send = np.zeros(2 * w + 1)  # held: MPI reads it until the request is done
        send[self.rank] = n
        send[w] = loss * n
        send[w + 1 + self.rank] = 1.0 if self._stop_mine is not None else 0.0
        self._meta = np.empty_like(send)
        return comm.iall_reduce_sum(send, self._meta)

    def _finish_meta(self):
        """``(whole batch size, its mean loss)`` once ``_start_meta``'s request is done."""
        total = float(self._meta[:self.world].sum())
        self._stepped = True
        return total, float(self._meta[self.world] / total)

    def compiled_step(self):
        """The captured step (``captured.CapturedStep``) the Learner replays with ``compile`` on."""
        from .captured import CapturedStep
        return CapturedStep(self)

    def outputs(self, logits, y):
        """On rank 0 the whole batch's logits and targets (numpy, the ranks' rows in rank order),
        for the metrics rank 0 logs; on the others their own shard's (they log nothing)."""
        logits, y = _numpy(logits), _numpy(y)
        counts = [int(c) for c in self._meta[:self.world]]
        rows = [logits.reshape(len(logits), -1).view(np.uint8), y.reshape(len(y), -1).view(np.uint8)]
        row_bytes = sum(r.shape[1] for r in rows)
        packed = np.ascontiguousarray(np.concatenate(rows, axis=1))
        whole = np.empty((sum(counts), row_bytes), np.uint8) if self.is_main else None
        recv = [whole, [c * row_bytes for c in counts]] if self.is_main else None
        comm.wait(comm._comm("outputs").Igatherv(packed, recv, root=0), "DistributedDataParallel (outputs)")
        if not self.is_main:
            return logits, y
        cut = rows[0].shape[1]
        return (np.ascontiguousarray(whole[:, :cut]).view(logits.dtype).reshape((-1,) + logits.shape[1:]),
                np.ascontiguousarray(whole[:, cut:]).view(y.dtype).reshape((-1,) + y.shape[1:]))

    def agree(self, value):
        """Rank 0's ``value`` on every rank, once all have reached this point."""
        return comm.shared(value)

    def agree_stop(self, reason):
        """A stop asked for on any rank, on every rank (the reason of the lowest rank asking).
        Right after a ``step`` it reads the flags that step carried, so a stop asked for during
        step k takes effect after step k + 1, on every rank at once; elsewhere (the end of an
        epoch) it asks the ranks directly."""
        if reason is not None and self._stop_mine is None:
            self._stop_mine = reason
        if self._stepped:
            self._stepped = False
            flags = self._meta[self.world + 1:]
        else:
            mine = np.zeros(self.world)
            mine[self.rank] = 1.0 if self._stop_mine is not None else 0.0
            flags = np.empty_like(mine)
            comm.wait(comm.iall_reduce_sum(mine, flags), "agree_stop")
        asking = [r for r in range(self.world) if flags[r] > 0]
        if not asking:
            return None
        agreed = comm.shared(self._stop_mine, root=asking[0])
        self._stop_mine = None
        return agreed

    def close(self):
        """Nothing to release: the process group lives as long as the process."""

    def __repr__(self):
        return "DistributedDataParallel(rank %d of %d, bucket_mb=%g)" % (self.rank, self.world,
                                                                          self.bucket_bytes / 2 ** 20)


def _numpy(t):
    if isinstance(t, np.ndarray):
        return t
    if grad_device(t.device) is not None:
        t = t.detach()
    return t.numpy()
