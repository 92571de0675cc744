"""``ember.accel.distributed``: data-parallel training over MPI (mpi4py with the system's Open MPI).

>>> from ember.accel import distributed as dist
>>> dist.init()                                   # under mpirun -n 4: ranks 0..3
>>> s = dist.all_reduce(ember.tensor([1.0, 2.0]))   # summed over the ranks, on the same device
>>> ddp = dist.DistributedDataParallel()
>>> Learner(model, opt, F.cross_entropy, strategy=ddp).fit(ddp.shard(train_loader))

- ``init``, ``rank``, ``world_size``, ``barrier``; ``all_reduce``, ``broadcast``, ``all_gather``
  on ember tensors of any device (no copy on the Cpu and NumPy devices); every collective waits
  at most the group's timeout, then raises ``CollectiveTimeout``.
- ``DistributedDataParallel``: the Learner's strategy (bucketed gradient all-reduce overlapped with
  backward, rank-aware sharding, rank 0 writes checkpoints and shows the progress).

Needs ``pip install ember[mpi]`` and Open MPI (Debian: ``openmpi-bin libopenmpi-dev``);
docs/distributed.md says how to launch it.
"""
from .comm import (CollectiveTimeout, DistributedError, all_gather, all_reduce, barrier, broadcast, init,
                   is_initialized, rank, world_size)
from .ddp import DistributedDataParallel, RankShard

__all__ = ["init", "is_initialized", "rank", "world_size", "barrier", "all_reduce", "broadcast", "all_gather",
           "DistributedDataParallel", "RankShard", "DistributedError", "CollectiveTimeout"]
