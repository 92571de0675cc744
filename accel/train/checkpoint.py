"""``Checkpoints``: a folder of training checkpoints, each written atomically, the last N kept plus
the best.

A checkpoint is a folder (``epoch-003`` after an epoch, ``epoch-004-batch-0012`` when a run was
stopped mid-epoch) holding ``model.safetensors``, ``optimizer.safetensors`` and ``state.json``
(position, scheduler, RNG states, metric accumulators, history). It is built under a temporary
name (``.tmp-...``), synced, and renamed into place: a folder with a checkpoint's name is always
complete, and an interrupted write leaves only a temporary folder that the next run removes. A
checkpoint written over one of the same name moves the old one aside (``.old-...``) first and
deletes it only once the new one is in place; a crash in between leaves the old one, which the next
``Checkpoints`` of the folder moves back.

Each checkpoint belongs to a *lineage*: the checkpoints one line of training wrote. A run resumed
from the newest checkpoint of its lineage continues it; a run started fresh, or resumed from an
older point while newer checkpoints of that lineage exist, starts a new lineage (numbered, its
names end in ``-run2``, ``-run3``...), so it never writes over or prunes another lineage's
checkpoints. ``latest()`` is the checkpoint written last (``state.json``'s ``serial``).
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
_OLD = ".old-"


def checkpoint_name(epoch, batch, lineage=1):
    """The folder name of the checkpoint at 0-based ``epoch`` after ``batch`` batches of it
    (``batch == 0``: the end of epoch ``epoch - 1``, named by its 1-based number); lineages after
    the first end in ``-run<lineage>``."""
    name = "epoch-%03d" % epoch if batch == 0 else "epoch-%03d-batch-%04d" % (epoch + 1, batch)
    return name if lineage == 1 else "%s-run%d" % (name, lineage)


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
    """One checkpoint folder: ``name``, ``path``, ``position`` (epoch, batch), the ``metric``
    value it was saved with (None for a mid-epoch checkpoint), its ``lineage`` and ``serial`` (the
    order of writing in its folder; 0 for a checkpoint written before ember recorded it)."""

    def __init__(self, path, state):
        self.path = path
        self.name = os.path.basename(path)
        self.position = tuple(state["position"])
        self.metric = state.get("metric")
        self.lineage = state.get("lineage", 1)
        self.serial = state.get("serial", 0)

    def __repr__(self):
        return "Checkpoint(%s, metric=%r)" % (self.name, self.metric)


class Checkpoints:
    """The checkpoints in ``folder``: ``save`` writes one and prunes its lineage to the
    ``keep_last`` newest plus, with ``keep_best``, the one whose metric is best (``mode`` "min" or
    "max"); other lineages' checkpoints are never touched."""

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
        """Remove what an interrupted write or prune left behind; a checkpoint moved aside for a
        replacement that never arrived goes back under its name."""
        names = sorted(os.listdir(self.folder))
        for name in names:
            path = os.path.join(self.folder, name)
            if name.startswith(_OLD):
                final = os.path.join(self.folder, name[len(_OLD):].rsplit("-", 1)[0])
                if not os.path.exists(final):
                    os.rename(path, final)
                    _sync_dir(final)
                    continue
            if name.startswith(_TMP) or name.startswith(_DEL) or name.startswith(_OLD):
                shutil.rmtree(path, ignore_errors=True)

    def list(self, lineage=None):
        """Every complete checkpoint (of ``lineage``, when given), oldest position first."""
        out = []
        for name in os.listdir(self.folder):
            path = os.path.join(self.folder, name)
            if name.startswith(".") or not os.path.isfile(os.path.join(path, STATE)):
                continue
            try:
                c = Checkpoint(path, read_state(path))
            except (RecordError, KeyError, TypeError, AttributeError):
                # a damaged folder is not a checkpoint to resume from or keep as best
                continue
            if lineage is None or c.lineage == lineage:
                out.append(c)
        out.sort(key=lambda c: c.position)
        return out

    def latest(self, lineage=None):
        """The checkpoint written last (of ``lineage``, when given), or None: what
        ``fit(..., resume="latest")`` continues."""
        items = self.list(lineage)
        return max(items, key=lambda c: (c.serial, c.position)) if items else None

    def new_lineage(self):
        """The number a new lineage in this folder takes (1 in a folder without checkpoints)."""
        return max([c.lineage for c in self.list()] + [0]) + 1

    def newer(self, checkpoint):
        """The checkpoints of ``checkpoint``'s lineage at later positions than it, oldest first."""
        return [c for c in self.list(checkpoint.lineage) if c.position > checkpoint.position]

    def find(self, path):
        """The checkpoint of this folder at ``path``, or None."""
        real = os.path.realpath(path)
        for c in self.list():
            if os.path.realpath(c.path) == real:
                return c
        return None

    def _better(self, a, b):
        return a < b if self.mode == "min" else a > b

    def best(self, lineage=None):
        """The checkpoint with the best metric (of ``lineage``, when given; the earliest among
        equals), or None."""
        best = None
        for c in self.list(lineage):
            m = c.metric
            if m is None or m != m:
                continue
            if best is None or self._better(m, best.metric):
                best = c
        return best

    def save(self, name, write_files, state):
        """Write checkpoint ``name``: ``write_files(folder)`` writes the model and optimizer files into
        a temporary folder, then ``state`` (a JSON-able dict with ``position`` and ``metric``) goes
        to ``state.json`` (with ``serial``, its order of writing) and the folder is renamed into
        place; the older checkpoints of its lineage (``state["lineage"]``, default 1) are pruned.
        Returns the checkpoint's path."""
        final = os.path.join(self.folder, name)
        tmp = os.path.join(self.folder, "%s%s-%d" % (_TMP, name, os.getpid()))
        state = dict(state, serial=max([c.serial for c in self.list()] + [0]) + 1)
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            write_files(tmp)
            _write_json(os.path.join(tmp, STATE), state)
            _sync_dir(os.path.join(tmp, STATE))
            if os.path.exists(final):  # a resumed run passing the same point again
                self._replace(final, tmp, name)
            else:
                os.rename(tmp, final)
            _sync_dir(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.prune(state.get("lineage", 1))
        return final

    def _replace(self, final, tmp, name):
        # the old checkpoint stays (aside, as .old-) until the new one holds its name: a crash
        # between the renames leaves it for _clean to move back
        old = os.path.join(self.folder, "%s%s-%d" % (_OLD, name, os.getpid()))
        os.rename(final, old)
        try:
            _sync_dir(old)
            os.rename(tmp, final)
        except BaseException:
            if not os.path.exists(final):
                os.rename(old, final)
            raise
        _sync_dir(final)
        shutil.rmtree(old, ignore_errors=True)

    def prune(self, lineage=1):
        """Delete every checkpoint of ``lineage`` but the ``keep_last`` newest and (``keep_best``)
        the best of it."""
        items = self.list(lineage)
        keep = {c.name for c in items[-self.keep_last:]}
        if self.keep_best:
            best = self.best(lineage)
            if best is not None:
                keep.add(best.name)
        self.delete([c for c in items if c.name not in keep])

    def delete(self, checkpoints):
        """Delete these checkpoints (each renamed first: a crash mid-delete never leaves a partial
        folder under a checkpoint's name)."""
        for c in checkpoints:
            gone = os.path.join(self.folder, _DEL + c.name)
            os.rename(c.path, gone)
            shutil.rmtree(gone, ignore_errors=True)


__all__ = ["Checkpoints", "Checkpoint", "checkpoint_name", "read_state", "STATE", "MODEL", "OPTIMIZER"]
