"""``Checkpoints``: a folder of training checkpoints, each written atomically, the last N kept plus
the best.

A checkpoint is a folder (``epoch-003`` after an epoch, ``epoch-004-batch-0012`` when a run was
stopped mid-epoch) holding ``model.safetensors``, ``optimizer.safetensors`` and ``state.json``
(position, scheduler, RNG states, metric accumulators, history). It is built under a temporary
name (``.tmp-...``), synced, and renamed into place: a folder with a checkpoint's name is always
complete, and an interrupted write leaves only a temporary folder that the next run removes.
"""
import json
import os
import shutil

from ember.errors import ArgumentError, RecordError
from ember.record.writer import _sync_dir  # fsyncs the folder holding a path: makes renames durable

STATE = "state.json"
MODEL = "model.safetensors"
OPTIMIZER = "optimizer.safetensors"
_TMP = ".tmp-"
_DEL = ".del-"


def checkpoint_name(epoch, batch):
    """The folder name of the checkpoint at 0-based ``epoch`` after ``batch`` batches of it
    (``batch == 0``: the end of epoch ``epoch - 1``, named by its 1-based number)."""
    if batch == 0:
        return "epoch-%03d" % epoch
    return "epoch-%03d-batch-%04d" % (epoch + 1, batch)


def _write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True, allow_nan=True)
        f.flush()
        os.fsync(f.fileno())


def read_state(path):
    """The ``state.json`` of the checkpoint folder ``path`` as a dict (``RecordError`` if absent or
    unreadable)."""
    file = os.path.join(path, STATE)
    try:
        with open(file) as f:
            state = json.load(f)
    except OSError as e:
        raise RecordError("checkpoint: %s is not a checkpoint (cannot read %s: %s)" % (path, STATE, e.strerror or e))
    except ValueError as e:
        raise RecordError("checkpoint: %s: %s is not valid JSON: %s" % (path, STATE, e))
    except RecursionError:
        raise RecordError("checkpoint: %s: %s is nested too deeply" % (path, STATE))
    _check_state(state, file)
    return state


def _number(v):
    return type(v) in (int, float)


def _check_state(state, file):
    """The fields every checkpoint has: ``position`` [epoch, batch] and ``metric`` (a number or null)."""
    if type(state) is not dict:
        raise RecordError("checkpoint: %s holds %s, expected an object" % (file, type(state).__name__))
    pos = state.get("position")
    if type(pos) is not list or len(pos) != 2 or [v for v in pos if type(v) is not int or v < 0]:
        raise RecordError("checkpoint: %s: position is %s, expected [epoch, batch] (ints >= 0)"
                          % (file, _short(pos)))
    metric = state.get("metric")
    if metric is not None and not _number(metric):
        raise RecordError("checkpoint: %s: metric is %s, expected a number or null" % (file, _short(metric)))


def _short(v, n=60):
    text = repr(v)
    return text if len(text) <= n else text[:n] + "..."


class Checkpoint:
    """One checkpoint folder: ``name``, ``path``, ``position`` (epoch, batch) and the ``metric``
    value it was saved with (None for a mid-epoch checkpoint)."""

    def __init__(self, path, state):
        self.path = path
        self.name = os.path.basename(path)
        self.position = tuple(state["position"])
        self.metric = state.get("metric")

    def __repr__(self):
        return "Checkpoint(%s, metric=%r)" % (self.name, self.metric)


class Checkpoints:
    """The checkpoints in ``folder``: ``save`` writes one and prunes to the ``keep_last`` newest
    plus, with ``keep_best``, the one whose metric is best (``mode`` "min" or "max")."""

    def __init__(self, folder, keep_last=2, keep_best=True, mode="min"):
        if type(keep_last) is not int or keep_last < 1:
            raise ArgumentError("Checkpoints: keep_last must be an int >= 1, found %r" % (keep_last,))
        if mode not in ("min", "max"):
            raise ArgumentError("Checkpoints: mode must be 'min' or 'max', found %r" % (mode,))
        self.folder = os.fspath(folder)
        self.keep_last = keep_last
        self.keep_best = bool(keep_best)
        self.mode = mode
        self._writable()
        self._clean()

    def _writable(self):
        """Fail now, not after an epoch of training, when the folder cannot hold checkpoints."""
        probe = os.path.join(self.folder, "%sprobe-%d" % (_TMP, os.getpid()))
        try:
            os.makedirs(self.folder, exist_ok=True)
            os.makedirs(probe, exist_ok=True)
            os.rmdir(probe)
        except OSError as e:
            raise ArgumentError("Checkpoints: cannot write checkpoints to %s (%s)" % (self.folder, e.strerror or e))

    def _clean(self):
        """Remove what an interrupted write or prune left behind."""
        for name in os.listdir(self.folder):
            if name.startswith(_TMP) or name.startswith(_DEL):
                shutil.rmtree(os.path.join(self.folder, name), ignore_errors=True)

    def list(self):
        """Every complete checkpoint, oldest first."""
        out = []
        for name in os.listdir(self.folder):
            path = os.path.join(self.folder, name)
            if name.startswith(".") or not os.path.isfile(os.path.join(path, STATE)):
                continue
            try:
                out.append(Checkpoint(path, read_state(path)))
            except RecordError:  # a damaged folder is not a checkpoint to resume from or keep as best
                continue
        out.sort(key=lambda c: c.position)
        return out

    def latest(self):
        """The newest checkpoint, or None."""
        items = self.list()
        return items[-1] if items else None

    def _better(self, a, b):
        return a < b if self.mode == "min" else a > b

    def best(self):
        """The checkpoint with the best metric (the earliest among equals), or None."""
        best = None
        for c in self.list():
            m = c.metric
            if m is None or m != m:
                continue
            if best is None or self._better(m, best.metric):
                best = c
        return best

    def save(self, name, write_files, state):
        """Write checkpoint ``name``: ``write_files(folder)`` writes the model and optimizer files into
        a temporary folder, then ``state`` (a JSON-able dict with ``position`` and ``metric``) goes
        to ``state.json`` and the folder is renamed into place; older checkpoints are pruned.
        Returns the checkpoint's path."""
        final = os.path.join(self.folder, name)
        tmp = os.path.join(self.folder, "%s%s-%d" % (_TMP, name, os.getpid()))
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            write_files(tmp)
            _write_json(os.path.join(tmp, STATE), state)
            _sync_dir(os.path.join(tmp, STATE))
            if os.path.exists(final):  # a resumed run passing the same point again
                old = os.path.join(self.folder, "%s%s-%d" % (_DEL, name, os.getpid()))
                os.rename(final, old)
                os.rename(tmp, final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(tmp, final)
            _sync_dir(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.prune()
        return final

    def prune(self):
        """Delete every checkpoint but the ``keep_last`` newest and (``keep_best``) the best."""
        items = self.list()
        keep = {c.name for c in items[-self.keep_last:]}
        if self.keep_best:
            best = self.best()
            if best is not None:
                keep.add(best.name)
        for c in items:
            if c.name not in keep:
                # renamed first: a crash mid-delete never leaves a partial folder under a checkpoint's name
                gone = os.path.join(self.folder, _DEL + c.name)
                os.rename(c.path, gone)
                shutil.rmtree(gone, ignore_errors=True)


__all__ = ["Checkpoints", "Checkpoint", "checkpoint_name", "read_state", "STATE", "MODEL", "OPTIMIZER"]
