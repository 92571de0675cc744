"""The process group: ``init``, ``rank``, ``world_size``, ``barrier`` and the collectives on ember
tensors, over mpi4py's ``COMM_WORLD``.

Every collective is started non-blocking and waited for with a deadline (``init(timeout=...)``):
a rank that died or hangs makes the others raise ``CollectiveTimeout`` naming the collective,
instead of blocking forever; ``init`` installs an exception hook that aborts the whole MPI job
once such an error (or any other) is not caught, so no rank is left waiting.
"""
import os
import pickle
import sys
import time

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, EmberError
from ember.tensor import Tensor

from . import buffers

DEFAULT_TIMEOUT = 60.0


class DistributedError(EmberError, RuntimeError):
    """A process group that is not set up, or a collective that cannot complete."""


class CollectiveTimeout(DistributedError, TimeoutError):
    """A collective that did not complete within the group's timeout: another rank died or hangs."""


class _Group:
    comm = None
    timeout = DEFAULT_TIMEOUT
    MPI = None


_group = _Group()


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("ember.accel.distributed needs mpi4py and an MPI library: pip install ember[mpi] "
                          "and apt-get install openmpi-bin libopenmpi-dev (%s)" % e) from None
    return MPI


def init(timeout=None):
    """Join the MPI job this process was started in (``mpirun -n 4 python train.py``; a plain
    ``python train.py`` is a job of one). ``timeout``: seconds a collective may wait for the other
    ranks before ``CollectiveTimeout`` (default ``$EMBER_DIST_TIMEOUT`` or 60). Calling it again
    only changes the timeout. Returns the rank.

    >>> from ember.accel import distributed as dist
    >>> dist.init(timeout=30)
    >>> total = dist.all_reduce(ember.tensor([float(dist.rank())]))
    """
    if timeout is None:
        timeout = float(os.environ.get("EMBER_DIST_TIMEOUT", DEFAULT_TIMEOUT))
    if type(timeout) not in (int, float) or not timeout > 0:
        raise ArgumentError("distributed.init: timeout must be a number of seconds > 0, found %r" % (timeout,))
    _group.timeout = float(timeout)
    if _group.comm is None:
        MPI = _mpi()
        _group.MPI = MPI
        _group.comm = MPI.COMM_WORLD.Dup()
        if _group.comm.Get_size() > 1:
            _abort_on_uncaught()
    return _group.comm.Get_rank()


def _abort_on_uncaught():
    """An uncaught exception on one rank prints its traceback, then aborts every rank (as
    ``python -m mpi4py`` does): the others would otherwise wait in their next collective."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.flush()
        _group.MPI.COMM_WORLD.Abort(1)
    sys.excepthook = hook


def is_initialized():
    """Whether ``init`` has run in this process."""
    return _group.comm is not None


def _comm(what):
    if _group.comm is None:
        raise DistributedError("distributed.%s: the process group is not set up; call "
                               "ember.accel.distributed.init() first" % what)
    return _group.comm


def rank():
    """This process's rank, 0 .. ``world_size() - 1``."""
    return _comm("rank").Get_rank()


def world_size():
    """How many processes the job has."""
    return _comm("world_size").Get_size()


def wait(requests, what):
    """Wait for MPI ``requests`` (one or a list) until the group's timeout, polling: a rank that
    died or hangs gives ``CollectiveTimeout`` instead of a hang."""
    MPI = _group.MPI
    if not isinstance(requests, list):
        requests = [requests]
    if MPI.Request.Testall(requests):
        return
    deadline = time.monotonic() + _group.timeout
    spins = 0
    while not MPI.Request.Testall(requests):
        spins += 1
        if spins > 500:  # waiting long: leave the core to the ranks we wait for (a loaded machine)
            os.sched_yield()
        if spins & 255 == 0 and time.monotonic() > deadline:
            comm = _group.comm
            raise CollectiveTimeout(
                "distributed.%s: rank %d of %d waited %.1f s for the other ranks (expected every rank "
                "to reach the same collective; one has died, hangs, or called another one)"
                % (what, comm.Get_rank(), comm.Get_size(), _group.timeout))


def barrier():
    """Wait until every rank has reached this point."""
    wait(_comm("barrier").Ibarrier(), "barrier")


def _check(t, what):
    if type(t) is not Tensor:
        raise ArgumentTypeError("distributed.%s: expected an ember.Tensor, found %s" % (what, type(t).__name__))


_OPS = ("sum", "mean", "max", "min", "prod")


def all_reduce(t, op="sum"):
    """A new tensor on ``t``'s device: ``t`` combined over every rank by ``op`` ("sum", "mean",
    "max", "min", "prod"). On the Cpu and NumPy devices MPI reads ``t``'s memory and writes the
    result's directly (no copy); elsewhere the values pass through host memory."""
    _check(t, "all_reduce")
    if op not in _OPS:
        raise ArgumentError("distributed.all_reduce: op must be one of %s, found %r" % (", ".join(_OPS), op))
    if op == "mean" and t.dtype.kind != "f":
        raise ArgumentError("distributed.all_reduce: op='mean' needs a float tensor, found %s" % t.dtype.name)
    if t.dtype.kind == "b":
        raise ArgumentError("distributed.all_reduce: expected a numeric tensor, found bool (cast it first, "
                            "e.g. t.int())")
    comm = _comm("all_reduce")
    MPI = _group.MPI
    send = buffers.host(t)
    out, recv = buffers.empty_like(t)
    mpi_op = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}[op]
    wait(comm.Iallreduce(send, recv, op=mpi_op), "all_reduce")
    if op == "mean":
        recv *= 1.0 / comm.Get_size()
    return buffers.finish(out, recv, t)


def broadcast(t, root=0):
    """A new tensor on ``t``'s device holding rank ``root``'s ``t`` (every rank passes a tensor
    of the same shape and dtype)."""
    _check(t, "broadcast")
    comm = _comm("broadcast")
    if type(root) is not int or not 0 <= root < comm.Get_size():
        raise ArgumentError("distributed.broadcast: root must be a rank in 0..%d, found %r"
                            % (comm.Get_size() - 1, root))
    out, recv = buffers.empty_like(t)
    if comm.Get_rank() == root:
        recv[...] = buffers.host(t)
    wait(comm.Ibcast(recv, root=root), "broadcast")
    return buffers.finish(out, recv, t)


def all_gather(t):
    """A new tensor on ``t``'s device: every rank's ``t`` stacked along a new first dim, in rank
    order (shape ``(world_size,) + t.shape``; every rank passes the same shape and dtype)."""
    _check(t, "all_gather")
    comm = _comm("all_gather")
    out, recv = buffers.empty_like(t, (comm.Get_size(),) + tuple(t.shape))
    wait(comm.Iallgather(buffers.host(t), recv), "all_gather")
    return buffers.finish(out, recv, t)


def shared(value, root=0):
    """Rank ``root``'s picklable ``value`` on every rank (also a barrier)."""
    comm = _comm("shared")
    mine = comm.Get_rank() == root
    data = np.frombuffer(pickle.dumps(value), np.uint8) if mine else None
    size = np.array([data.size if mine else 0], np.int64)
    wait(comm.Ibcast(size, root=root), "shared")
    if not mine:
        data = np.empty(int(size[0]), np.uint8)
    wait(comm.Ibcast(data, root=root), "shared")
    return value if mine else pickle.loads(data.tobytes())


def iall_reduce_sum(send, recv, what="all_reduce"):
    """Start summing numpy ``send`` over the ranks into ``recv``; the request (wait with ``wait``)."""
    return _comm(what).Iallreduce(send, recv, op=_group.MPI.SUM)
