"""How the Learner computes one batch's gradients: on one thread (``SingleDevice``) or split over
worker threads (``DataParallel``).

A strategy's ``step(model, loss_fn, x, y)`` returns ``(grads, loss, logits)``: the batch-mean loss's
``GradientsParams``, that loss as a float, and the logits (a tensor; ``DataParallel`` gives a
numpy array). Neither touches the model's parameters: the Learner's optimizer steps them.
``compiled_step()`` gives the whole step, optimizer included, captured (``ember.accel.compile``)
where the strategy can replay it, else None.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ember.errors import ArgumentError

from ember.accel.optim import GradientsParams


class Strategy:
    """What every strategy shares with the Learner beyond ``step``: one process runs the whole
    training, so it writes the files and shows the progress (``is_main``), its batch outputs are
    the whole batch's, and agreeing with the other processes is a no-op.
    ``ember.accel.distributed.DistributedDataParallel`` overrides these for MPI ranks."""

    is_main = True

    def outputs(self, logits, y):
        """The whole batch's logits and targets, for the metrics."""
        return logits, y

    def agree(self, value):
        """The main process's ``value`` (every process gets the same)."""
        return value

    def agree_stop(self, reason):
        """The stop reason every process acts on (a stop asked for on any of them), or None."""
        return reason

    def compiled_step(self):
        """The training step captured for this strategy: ``step(model, optimizer, loss_fn, x, y)``
        -> ``(loss, logits)`` after the optimizer step (loss: a 0-d tensor or a float), or None
        where the strategy has none (the Learner then steps eagerly)."""
        return None


def train_step(model, optimizer, loss_fn, x, y):
    """One batch: forward, loss, backward, optimizer step (what ``SingleDevice`` captures)."""
    logits = model(x)
    loss = loss_fn(logits, y)
    optimizer.step(GradientsParams.from_grads(loss.backward(), model))
    return loss, logits


class SingleDevice(Strategy):
    """Forward and backward of the whole batch on the calling thread."""

    def step(self, model, loss_fn, x, y):
        """``(grads, loss, logits)`` of the batch ``x``, ``y``: its ``GradientsParams``, loss (a float), logits."""
        logits = model(x)
        loss = loss_fn(logits, y)
        grads = GradientsParams.from_grads(loss.backward(), model)
        return grads, loss.item(), logits

    def compiled_step(self):
        """``train_step`` captured (``ember.accel.compile``): recorded once, replayed."""
        from ember.accel.capture import compile as capture
        return capture(train_step)

    def close(self):
        """Release what the strategy holds (nothing here)."""
        pass

    def __repr__(self):
        return "SingleDevice()"


class DataParallel(Strategy):
    """Thread data parallelism (Burn's thread-safe modules): each batch is cut into ``workers``
    shards; each worker thread runs forward and backward on its own ``model.fork()`` (same
    parameter ids, so gradients are keyed alike) with its shard's loss scaled by
    ``shard / batch``; the shards' ``GradientsParams`` are summed in shard order, giving the
    full-batch mean's gradients up to float rounding. The speed-up comes from backends that
    release the GIL in their kernels (the C kernels, numpy)."""

    def __init__(self, workers=2):
        if type(workers) is not int or workers < 1:
            raise ArgumentError("DataParallel: workers must be an int >= 1, found %r" % (workers,))
        self.workers = workers
        self._pool = None

    def step(self, model, loss_fn, x, y):
        """``(grads, loss, logits)`` of the batch ``x``, ``y``, in shards on the worker threads (logits: numpy)."""
        n = x.shape[0]
        k = min(self.workers, n)
        bounds = [(n * i // k, n * (i + 1) // k) for i in range(k)]
        replicas = [model.fork() for _ in bounds]

        def work(i):
            a, b = bounds[i]
            replica = replicas[i]
            logits = replica(x[a:b])
            loss = loss_fn(logits, y[a:b])
            scale = (b - a) / n
            grads = GradientsParams.from_grads((loss * scale).backward(), replica)
            return grads, loss.item() * scale, logits.detach().numpy()

        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="ember-dp")
        results = list(self._pool.map(work, range(k)))
        grads = results[0][0]
        for g, _, _ in results[1:]:
            grads = grads + g
        loss = 0.0
        for _, part, _ in results:
            loss += part
        return grads, loss, np.concatenate([r[2] for r in results])

    def close(self):
        """Shut the worker threads down (the next ``step`` starts them again)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __repr__(self):
        return "DataParallel(workers=%d)" % self.workers


__all__ = ["Strategy", "SingleDevice", "DataParallel"]
