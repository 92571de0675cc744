"""Checkpoints that are never lost: a resumed run owns its lineage (issue 14, defect 2) and a
checkpoint written over one of the same name is replaced crash-safely (defect 3: a kill -9 at each
step of the replacement leaves the old or the new checkpoint, complete, under its name)."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

import ember
import ember.nn.functional as F
from ember.accel.data import DataLoader, load_digits
from ember.accel.optim import Adam
from ember.accel.train import Checkpoints, Learner, View, read_state
from ember.nn import Module
from ember.nn.linear import Linear


class MLP(Module):
    def __init__(self):
        super().__init__()
        g = ember.Generator(0)
        self.fc1 = Linear(64, 16, generator=g)
        self.fc2 = Linear(16, 10, generator=g)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class Messages(View):
    def __init__(self):
        self.lines = []

    def message(self, text):
        self.lines.append(text)


def _fit(folder, epochs, resume=None, keep_last=2, discard_newer=False):
    train, valid = load_digits().split(0.5, seed=0, stratify=True)
    model = MLP()
    view = Messages()
    learner = Learner(model, Adam(model, lr=1e-2), F.cross_entropy, epochs=epochs, checkpoint_dir=str(folder),
                      keep_last=keep_last, keep_best=True, progress=view, plot=False, device=ember.Cpu())
    result = learner.fit(DataLoader(train, 128, shuffle=True, seed=1), DataLoader(valid, 512), resume=resume,
                         discard_newer=discard_newer)
    return result, model, view.lines


def _weights(model):
    return [p.value.tolist() for p in model.parameters()]


def _names(folder):
    return sorted(n for n in os.listdir(folder))


def _serial(folder, name):
    return read_state(os.path.join(str(folder), name))["serial"]


@pytest.fixture(scope="module")
def eight_epochs(tmp_path_factory):
    """A first run's checkpoints epoch-001 ... epoch-008 (nothing pruned)."""
    folder = tmp_path_factory.mktemp("first") / "ck"
    _fit(folder, 8, keep_last=8)
    return folder


def _copy(src, tmp_path):
    dst = tmp_path / "ck"
    shutil.copytree(str(src), str(dst))
    return dst


FIRST = ["epoch-%03d" % e for e in range(1, 9)]


def test_resume_from_an_older_checkpoint_keeps_the_newer_and_its_own(eight_epochs, tmp_path):
    ck = _copy(eight_epochs, tmp_path)
    before = {n: open(os.path.join(str(ck), n, "model.safetensors"), "rb").read() for n in FIRST}
    result, model, lines = _fit(ck, 4, resume=str(ck / "epoch-001"))
    # the scenario: every checkpoint the resumed run wrote was deleted as soon as written
    ours = set(n for n in _names(ck) if n not in FIRST)
    assert {"epoch-003-run2", "epoch-004-run2"} <= ours <= {"epoch-002-run2", "epoch-003-run2", "epoch-004-run2"}
    assert set(FIRST) <= set(_names(ck))
    assert result.checkpoint.endswith("epoch-004-run2")
    for n in FIRST:  # the first run's checkpoints are untouched, epoch-002 included
        assert open(os.path.join(str(ck), n, "model.safetensors"), "rb").read() == before[n]
    state = read_state(str(ck / "epoch-004-run2"))
    assert state["lineage"] == 2 and state["position"] == [4, 0]
    note = [line for line in lines if "newer checkpoints" in line]
    assert note and "epoch-002" in note[0] and "epoch-008" in note[0] and "resume='latest'" in note[0] \
        and "discard_newer=True" in note[0]
    # "latest" is the checkpoint written last: this run's, which the stop message recommends
    assert Checkpoints(str(ck)).latest().name == "epoch-004-run2"
    assert _serial(ck, "epoch-004-run2") > _serial(ck, "epoch-008")
    # the resumed run, continued with "latest", equals one run from epoch-001 straight to the end
    continued, model_c, _ = _fit(ck, 6, resume="latest")
    assert continued.checkpoint.endswith("epoch-006-run2")
    straight_ck = _copy(eight_epochs, tmp_path / "straight")
    _, model_s, _ = _fit(straight_ck, 6, resume=str(straight_ck / "epoch-001"))
    assert _weights(model_c) == _weights(model_s)
    assert set(FIRST) <= set(_names(ck))
    assert best_within_lineage(continued)


def best_within_lineage(result):
    return result.best is None or result.best.endswith("-run2")


def test_discard_newer_deletes_only_when_told(eight_epochs, tmp_path):
    ck = _copy(eight_epochs, tmp_path)
    result, _, lines = _fit(ck, 3, resume=str(ck / "epoch-001"), discard_newer=True)
    kept = _names(ck)
    assert "epoch-003" in kept and "epoch-008" not in kept and not [n for n in kept if "run" in n]
    assert read_state(str(ck / "epoch-003"))["lineage"] == 1
    assert any("deleted the newer checkpoints" in line for line in lines)


def test_resume_from_the_newest_continues_its_lineage(eight_epochs, tmp_path):
    ck = _copy(eight_epochs, tmp_path)
    result, _, lines = _fit(ck, 10, resume="latest", keep_last=8)
    assert result.checkpoint.endswith("epoch-010")
    names = set(_names(ck))  # pruned within its own lineage: the 8 newest and the best
    assert set("epoch-%03d" % e for e in range(3, 11)) <= names <= set(FIRST + ["epoch-009", "epoch-010"])
    assert not lines


def test_a_fresh_run_beside_old_checkpoints_writes_its_own(eight_epochs, tmp_path):
    ck = _copy(eight_epochs, tmp_path)
    result, _, lines = _fit(ck, 2)
    assert set(_names(ck)) == set(FIRST + ["epoch-001-run2", "epoch-002-run2"])
    assert any("holds checkpoints of other runs" in line for line in lines)
    assert Checkpoints(str(ck)).latest().name == "epoch-002-run2"


# -- crash-safe replacement -----------------------------------------------------------------------

CHILD = textwrap.dedent(r"""
    import os, shutil, signal, sys
    from ember.accel.train import Checkpoints
    folder, kill_at = sys.argv[1], int(sys.argv[2])
    store = Checkpoints(folder, keep_last=3)

    def files(version):
        def write(tmp):
            for part in ("model.safetensors", "optimizer.safetensors"):
                with open(os.path.join(tmp, part), "w") as f:
                    f.write(version * 1000)
        return write

    store.save("epoch-001", files("old"), {"position": [1, 0], "metric": 1.0})
    calls = [0]

    def killing(fn):
        def step(*args, **kwargs):
            calls[0] += 1
            if calls[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return fn(*args, **kwargs)
        return step

    os.rename = killing(os.rename)
    os.fsync = killing(os.fsync)
    shutil.rmtree = killing(shutil.rmtree)
    store.save("epoch-001", files("new"), {"position": [1, 0], "metric": 0.5})
    print("steps", calls[0])
""")


def _child(folder, kill_at):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", CHILD, str(folder), str(kill_at)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_replacing_a_checkpoint_survives_a_kill_at_every_step(tmp_path):
    done = _child(tmp_path / "count", 0)
    assert done.returncode == 0, done.stderr
    steps = int(done.stdout.split()[-1])
    assert steps >= 6  # fsyncs, both renames, the old one's removal
    seen = set()
    for k in range(1, steps + 2):
        folder = tmp_path / ("k%d" % k)
        out = _child(folder, k)
        assert out.returncode == (-signal.SIGKILL if k <= steps else 0), (k, out.stderr)
        store = Checkpoints(str(folder))  # what the next run sees: recovery included
        assert [c.name for c in store.list()] == ["epoch-001"], (k, os.listdir(str(folder)))
        assert _names(folder) == ["epoch-001"], k  # nothing left aside
        version = open(str(folder / "epoch-001" / "model.safetensors")).read()[:3]
        assert version in ("old", "new")
        assert open(str(folder / "epoch-001" / "optimizer.safetensors")).read()[:3] == version
        assert read_state(str(folder / "epoch-001"))["metric"] == (1.0 if version == "old" else 0.5)
        seen.add(version)
    assert seen == {"old", "new"}


def test_a_failed_replacement_puts_the_old_checkpoint_back(tmp_path, monkeypatch):
    store = Checkpoints(str(tmp_path))
    store.save("epoch-001", lambda tmp: open(os.path.join(tmp, "model.safetensors"), "w").write("old"),
               {"position": [1, 0], "metric": 1.0})
    real = os.rename

    def failing(src, dst):
        if os.path.basename(src).startswith(".tmp-"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "rename", failing)
    with pytest.raises(OSError):
        store.save("epoch-001", lambda tmp: open(os.path.join(tmp, "model.safetensors"), "w").write("new"),
                   {"position": [1, 0], "metric": 0.5})
    monkeypatch.setattr(os, "rename", real)
    assert _names(tmp_path) == ["epoch-001"]
    assert open(str(tmp_path / "epoch-001" / "model.safetensors")).read() == "old"
