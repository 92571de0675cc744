"""``DistributedDataParallel``'s captured step: what ``Learner(compile="auto")`` replays under MPI.

A step is two recorded plans (``ember.accel.compile``) with the gradient all-reduce between them:

1. ``gradients``: forward, loss and backward of this rank's shard; its results are the loss, the
   logits and the sum over the shard of the per-sample gradients, packed into one flat tensor per
   dtype (the packing is part of the plan: on the C Cpu it is one more kernel call, not Python);
2. each flat tensor is summed over the ranks by one ``Iallreduce`` from its memory into a buffer of
   the same device (no copy on the Cpu and NumPy devices), beside the small float64 all-reduce of
   the batch sizes, the loss sum and the stop flags that the eager step sends too; the sum is
   divided by the whole batch size in place;
3. ``update``: the optimizer's step on the summed gradients, cut back into parameters inside the plan.

The arithmetic is the eager step's (the same kernels, the same float32 or float64 scaling), so the
weights are those of the eager ``DistributedDataParallel``. The all-reduce cannot overlap backward
here (it starts once the plan is done); what the step saves is the Python of every op and of the
optimizer (docs/distributed.md measures both).
"""
import numpy as np

import ember
from ember.backend import grad_device
from ember.shapes import numel

from ember.accel.capture import compile as capture
from ember.accel.optim import GradientsParams

from . import buffers, comm


def _groups(model):
    """The parameters that train, grouped by dtype in model order: one flat gradient per group."""
    groups = {}
    for p in model.parameters():
        if p.requires_grad:
            groups.setdefault(p.value.dtype.name, []).append(p)
    return list(groups.values())


def _gradients(model, loss_fn, x, y):
    """The recorded half before the all-reduce: (loss, logits, [flat gradient sums per dtype])."""
    logits = model(x)
    loss = loss_fn(logits, y)
    grads = (loss * float(x.shape[0])).backward()
    flats = []
    for group in _groups(model):
        parts = []
        for p in group:
            g = grads.by_id.get(p.id)
            if g is None:  # a parameter this loss does not reach: its gradient is zeros, as in the eager step
                g = ember.zeros((numel(p.value.shape),), dtype=p.value.dtype, device=grad_device(p.value.device).inner)
            parts.append(g.reshape(-1))
        flats.append(ember.cat(parts))
    return loss, logits, flats


def _update(model, optimizer, flats):
    """The recorded half after the all-reduce: the optimizer's step on the summed gradients."""
    by_id = {}
    for group, flat in zip(_groups(model), flats):
        a = 0
        for p in group:
            n = numel(p.value.shape)
            by_id[p.id] = flat[a:a + n].reshape(p.value.shape)
            a += n
    optimizer.step(GradientsParams(by_id))


class CapturedStep:
    """The Learner's training step for ``DistributedDataParallel`` with capture on (what
    ``ddp.compiled_step()`` gives): ``step(model, optimizer, loss_fn, x, y)`` -> ``(loss, logits)``,
    the whole batch's mean loss (a float) and this shard's logits, after the optimizer step.
    ``gradients`` and ``update`` are the two ``Compiled`` plans; ``stats``, ``lowering`` and
    ``refused`` say how each went."""

    def __init__(self, ddp):
        self.ddp = ddp
        self.gradients = capture(_gradients)
        self.update = capture(_update)

    @property
    def stats(self):
        """``{"gradients": {...}, "update": {...}}``: each plan's eager, recorded and replayed calls."""
        return {"gradients": dict(self.gradients.stats), "update": dict(self.update.stats)}

    @property
    def lowering(self):
        """``{"gradients": ..., "update": ...}``: "lowered" where the backend replays a plan as its own
        kernel calls (the C Cpu), else why it keeps the generic replay (``Compiled.lowering``)."""
        return {"gradients": self.gradients.lowering, "update": self.update.lowering}

    @property
    def refused(self):
        """Why a plan runs eagerly, by plan (empty when both replay)."""
        out = {}
        for name, part in (("gradients", self.gradients), ("update", self.update)):
            if part.refused:
                out[name] = list(part.refused.values())
        return out

    def __call__(self, model, optimizer, loss_fn, x, y):
        ddp = self.ddp
        ddp._sync_weights(model)
        loss, logits, flats = self.gradients(model, loss_fn, x, y)
        sums, started = [], []
        for flat in flats:
            storage, recv = buffers.empty_like(flat)
            started.append(comm.iall_reduce_sum(buffers.host(flat), recv, "DistributedDataParallel"))
            sums.append((storage, recv, flat))
        meta = ddp._start_meta(x.shape[0], loss.item())
        comm.wait(started + [meta], "DistributedDataParallel (gradient all-reduce)")
        total, mean_loss = ddp._finish_meta()
        scale = 1.0 / total
        summed = []
        for storage, recv, flat in sums:
            recv *= scale
            summed.append(buffers.finish(storage, recv, flat))
        self.update(model, optimizer, summed)
        return mean_loss, logits

    def __repr__(self):
        return "CapturedStep(%r)" % (self.ddp,)


__all__ = ["CapturedStep"]
