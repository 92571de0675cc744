"""ember.accel.train: the Learner on the real digits (a small MLP, a few epochs): learning, metrics
against scikit-learn's formulas, logs, early stopping, checkpoint retention and atomicity, exact
resume (in process, and after SIGINT to a child process), gradient accumulation, the data-parallel
strategy, and the plain-lines output used when stdout is not a terminal."""
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import record
from ember.accel.data import DataLoader, load_digits
from ember.accel.optim import SGD, Adam, RMSprop, lr
from ember.accel.train import (Checkpoints, DataParallel, EarlyStopping, Learner, ProgressLines, View, metrics,
                               read_state)
from ember.accel.train.metrics import StepOutput
from ember.accel.train.progress import choose
from ember.errors import ArgumentError, ArgumentTypeError, RecordError
from ember.nn import Module
from ember.nn.dropout import Dropout
from ember.nn.linear import Linear

HERE = os.path.dirname(os.path.abspath(__file__))


class MLP(Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        g = ember.Generator(0)
        self.fc1 = Linear(64, 32, generator=g)
        self.drop = Dropout(dropout)
        self.fc2 = Linear(32, 10, generator=g)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x.flatten(1)))))


def _data(batch=64, **kw):
    train, valid = load_digits().split(0.2, seed=0, stratify=True)
    return DataLoader(train, batch, shuffle=True, seed=1, **kw), DataLoader(valid, 256)


def _learner(model=None, epochs=3, optimizer=None, **kw):
    model = model or MLP()
    kw.setdefault("progress", None)
    kw.setdefault("plot", False)
    kw.setdefault("device", ember.Cpu())
    return Learner(model, optimizer or Adam(model, lr=1e-2), F.cross_entropy, epochs=epochs, **kw)


def _weights(model):
    return [p.value.tolist() for p in model.parameters()]


def test_fit_learns_and_logs(tmp_path):
    train, valid = _data()
    learner = _learner(epochs=3, run_dir=str(tmp_path), plot=True,
                       metrics=["accuracy", "top3", "precision", "recall", "f1", "lr", "speed", "cpu", "memory"])
    result = learner.fit(train, valid)
    assert result.stopped == "completed" and len(result.history) == 3
    last = result.history[-1]
    assert last["valid_accuracy"] > 0.85 and last["valid_top3_accuracy"] >= last["valid_accuracy"]
    assert last["train_loss"] < result.history[0]["train_loss"]
    for key in ("train_precision", "valid_recall", "valid_f1", "lr", "items_per_s", "cpu_percent", "memory_mb",
                "epoch_seconds"):
        assert key in last and last[key] == last[key], key
    assert last["items_per_s"] > 0 and last["memory_mb"] > 1 and last["cpu_percent"] > 0
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert rows[0].split(",")[:3] == ["epoch", "train_loss", "train_accuracy"] and len(rows) == 4
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines] == [1, 2, 3]
    assert lines[-1]["valid_loss"] == pytest.approx(last["valid_loss"], rel=1e-12)
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    evaluated = learner.evaluate(valid)
    assert evaluated["loss"] == pytest.approx(last["valid_loss"], rel=1e-6)


def test_metrics_match_scikit_learn():
    skm = pytest.importorskip("sklearn.metrics")
    r = np.random.default_rng(0)
    logits = r.standard_normal((200, 5))
    targets = r.integers(0, 5, 200)
    targets[:3] = 4
    halves = [StepOutput(logits[:120], targets[:120], 1.0, 120), StepOutput(logits[120:], targets[120:], 3.0, 80)]
    pred = logits.argmax(1)
    expected = {
        "loss": (1.0 * 120 + 3.0 * 80) / 200,
        "accuracy": skm.accuracy_score(targets, pred),
        "top3_accuracy": skm.top_k_accuracy_score(targets, logits, k=3),
        "precision": skm.precision_score(targets, pred, average="macro", zero_division=0),
        "recall": skm.recall_score(targets, pred, average="macro", zero_division=0),
        "f1": skm.f1_score(targets, pred, average="macro", zero_division=0),
    }
    for name in ("loss", "accuracy", "top3", "precision", "recall", "f1"):
        m = metrics.make(name)
        for out in halves:
            m.update(out)
        assert m.compute() == pytest.approx(expected[m.name], rel=1e-12), name
        again = metrics.make(name)
        again.load_state_dict(json.loads(json.dumps(m.state_dict())))
        assert again.compute() == m.compute()
    with pytest.raises(ArgumentError, match="unknown metric 'auc'"):
        metrics.make("auc")


def test_early_stopping_stops_after_patience():
    train, valid = _data()
    model = MLP()
    learner = _learner(model, epochs=20, optimizer=SGD(model, lr=0.0), early_stopping=("valid_loss", "min", 2))
    result = learner.fit(train, valid)  # lr 0: the loss never improves after epoch 1
    assert result.stopped == "early_stopping" and len(result.history) == 3
    es = EarlyStopping("valid_accuracy", "max", patience=2, min_delta=0.01)
    assert [es.update(v, i) for i, v in enumerate([0.5, 0.505, 0.6, 0.6, 0.6])] == [False, False, False, False, True]
    assert es.best == 0.6 and es.best_epoch == 2
    with pytest.raises(ArgumentError, match="early stopping watches 'valid_f1'"):
        _learner(epochs=1, early_stopping=("valid_f1", "max", 2)).fit(train, valid)


def test_checkpoints_keep_the_last_n_and_the_best(tmp_path):
    train, valid = _data(batch=256)
    # the best by "lr" with mode max (the early-stopping metric) is epoch 1 under a decaying schedule
    learner = _learner(epochs=5, run_dir=str(tmp_path), keep_last=2, keep_best=True,
                       early_stopping=("lr", "max", 100), scheduler=lr.ExponentialLR(1e-2, 0.9))
    result = learner.fit(train, valid)
    folder = tmp_path / "checkpoints"
    assert sorted(os.listdir(folder)) == ["epoch-001", "epoch-004", "epoch-005"]
    assert result.best.endswith("epoch-001") and result.checkpoint.endswith("epoch-005")
    state = read_state(str(folder / "epoch-005"))
    assert state["position"] == [5, 0] and len(state["history"]) == 5
    reloaded = MLP()
    reloaded.load(str(folder / "epoch-005" / "model.safetensors"))
    assert _weights(reloaded) == _weights(learner.model)
    without_best = _learner(epochs=4, run_dir=str(tmp_path / "b"), keep_last=1, keep_best=False)
    without_best.fit(train, valid)
    assert os.listdir(tmp_path / "b" / "checkpoints") == ["epoch-004"]


def test_checkpoint_writes_are_atomic(tmp_path):
    store = Checkpoints(str(tmp_path), keep_last=3)

    def broken(folder):
        (tmp_path / "marker").write_text("x")
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.save("epoch-001", broken, {"position": [1, 0], "metric": 1.0})
    assert os.listdir(tmp_path) == ["marker"]  # no checkpoint, no temporary folder
    store.save("epoch-001", lambda folder: None, {"position": [1, 0], "metric": 1.0})
    os.makedirs(tmp_path / ".tmp-epoch-002-99")  # what a killed process leaves
    os.makedirs(tmp_path / "epoch-003")  # a folder without state.json is no checkpoint
    assert [c.name for c in Checkpoints(str(tmp_path)).list()] == ["epoch-001"]
    assert not os.path.exists(tmp_path / ".tmp-epoch-002-99")
    with pytest.raises(RecordError, match="is not a checkpoint"):
        read_state(str(tmp_path / "epoch-003"))


class StopAt(View):
    """Asks the learner to stop after the step at ``position`` (as the dashboard's q does)."""

    def __init__(self, position):
        self.position = position
        self.learner = None
        self.messages = []

    def bind(self, learner):
        self.learner = learner

    def step(self, info):
        if info["position"] == self.position:
            self.learner.request_stop("test")

    def message(self, text):
        self.messages.append(text)


def _run(folder, stop_at=None, resume=None, accumulation=1, strategy=None):
    ember.seed(5)
    train, valid = _data()
    model = MLP(dropout=0.2)
    learner = _learner(model, epochs=3, run_dir=folder, grad_accumulation=accumulation, strategy=strategy,
                       scheduler=lr.StepLR(1e-2, 7, 0.5), progress=StopAt(stop_at) if stop_at else None)
    return learner.fit(train, valid, resume=resume), model


@pytest.mark.parametrize("accumulation", [1, 2])
def test_resume_continues_exactly(tmp_path, accumulation):
    whole, model_a = _run(str(tmp_path / "a"), accumulation=accumulation)
    stopped, _ = _run(str(tmp_path / "b"), stop_at=30, accumulation=accumulation)
    assert stopped.stopped == "interrupted" and "-batch-" in stopped.checkpoint
    assert len(stopped.history) == 1
    resumed, model_b = _run(str(tmp_path / "b"), resume="latest", accumulation=accumulation)
    assert resumed.stopped == "completed"
    assert _weights(model_b) == _weights(model_a)  # bit for bit
    for a, b in zip(whole.history, resumed.history):
        assert {k: v for k, v in a.items() if k.startswith(("train_", "valid_"))} == \
            {k: v for k, v in b.items() if k.startswith(("train_", "valid_"))}
    logged = [json.loads(line)["epoch"] for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert logged == [1, 2, 3]


def test_resume_latest_without_checkpoints_starts_fresh(tmp_path):
    result, _ = _run(str(tmp_path), resume="latest")
    assert result.stopped == "completed" and len(result.history) == 3
    with pytest.raises(ArgumentError, match="not a checkpoint folder"):
        _run(str(tmp_path), resume=str(tmp_path / "nope"))


CHILD = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, %r)
    import ember, ember.nn.functional as F
    from ember.accel.data import DataLoader, load_digits
    from ember.accel.optim import Adam, lr
    from ember.accel.train import Learner, ProgressLines
    from test_learner import MLP

    run_dir, mode, out = sys.argv[1:4]
    ember.seed(5)
    train, valid = load_digits().split(0.2, seed=0, stratify=True)
    slow = train.map(lambda batch: (time.sleep(0.02), batch)[1], batched=True)  # time to signal mid-epoch
    model = MLP(dropout=0.2)
    learner = Learner(model, Adam(model, lr=1e-2), F.cross_entropy, epochs=3, scheduler=lr.StepLR(1e-2, 7, 0.5),
                      run_dir=run_dir, progress=ProgressLines(interval=0), device=ember.Cpu(), plot=False)
    result = learner.fit(DataLoader(slow, 64, shuffle=True, seed=1), DataLoader(valid, 256),
                         resume="latest" if mode == "resume" else None)
    print("RESULT %%s %%s" %% (result.stopped, result.checkpoint), flush=True)
    model.save(out)
''') % HERE


def _child(tmp_path, *args):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.Popen([sys.executable, str(script)] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _tensors(path):
    with record.open(path) as r:
        return {name: r.read(name).tolist() for name in r.names()}


def test_sigint_mid_epoch_leaves_a_checkpoint_and_resume_matches(tmp_path):
    whole = _child(tmp_path, tmp_path / "a", "full", tmp_path / "a.safetensors")
    out_a = whole.communicate(timeout=300)[0]
    assert whole.returncode == 0, out_a
    stopped = _child(tmp_path, tmp_path / "b", "stoppable", tmp_path / "b_stopped.safetensors")
    lines = []
    for line in stopped.stdout:
        lines.append(line)
        if line.startswith("epoch 2/3 batch 3/"):
            stopped.send_signal(signal.SIGINT)
            break
    out_b = "".join(lines) + stopped.communicate(timeout=300)[0]
    assert stopped.returncode == 0, out_b
    assert "stop requested (Ctrl-C): finishing the current step" in out_b
    assert "Traceback" not in out_b and "KeyboardInterrupt" not in out_b
    path = re.search(r"^RESULT interrupted (\S+)$", out_b, re.M).group(1)
    assert re.search(r"epoch-002-batch-\d{4}$", path), path
    assert sorted(os.listdir(path)) == ["model.safetensors", "optimizer.safetensors", "state.json"]
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".")]
    MLP().load(os.path.join(path, "model.safetensors"))  # loadable
    assert read_state(path)["position"][0] == 1
    resumed = _child(tmp_path, tmp_path / "b", "resume", tmp_path / "b.safetensors")
    out_c = resumed.communicate(timeout=300)[0]
    assert resumed.returncode == 0, out_c
    assert "RESULT completed" in out_c and "from %s" % path in out_c
    assert _tensors(tmp_path / "b.safetensors") == _tensors(tmp_path / "a.safetensors")


def test_ctrl_c_asks_twice_then_aborts_but_never_mid_write():
    from ember.accel.train.learner import _SignalStop
    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN under nohup/&
    learner = _learner(epochs=1)
    handler = _SignalStop(learner)
    handler._handle(signal.SIGINT, None)
    assert learner.stop_requested
    handler._handle(signal.SIGINT, None)  # the second still waits for the step
    learner._writing = True
    handler._handle(signal.SIGINT, None)  # a checkpoint is being written: it completes
    learner._writing = False
    with pytest.raises(KeyboardInterrupt):
        handler._handle(signal.SIGINT, None)
    with _SignalStop(learner) as active:  # installed on the main thread, restored after
        assert signal.getsignal(signal.SIGINT) == active._handle
        assert signal.getsignal(signal.SIGTERM) == active._handle
    assert signal.getsignal(signal.SIGINT) is before  # restored, whatever it was


def test_plain_lines_when_stdout_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # a pipe, a file, CI
    assert isinstance(choose("auto"), ProgressLines)
    monkeypatch.undo()
    assert type(choose(None)) is View
    stream = io.StringIO()
    train, valid = _data(batch=256)
    _learner(epochs=2, progress=ProgressLines(stream, interval=0), metrics=["accuracy", "lr"]).fit(train, valid)
    lines = stream.getvalue().splitlines()
    assert re.fullmatch(r"training MLP: 2 epochs of 6 batches \(1438 items\) on Cpu\(\)", lines[0])
    step = r"epoch 1/2 batch 1/6 \(16%\) \| train loss \d\.\d{4} accuracy \d\.\d{4} \| lr 0\.01 \| \d+ items/s \| " \
           r"eta \d+:\d\d"
    assert re.fullmatch(step, lines[1]), lines[1]
    epoch_lines = [line for line in lines if " done in " in line]
    assert len(epoch_lines) == 2
    assert re.fullmatch(r"epoch 2/2 done in \d+\.\d s \| train loss \d\.\d{4} accuracy \d\.\d{4} \| "
                        r"valid loss \d\.\d{4} accuracy \d\.\d{4} \| lr 0\.01", epoch_lines[1]), epoch_lines[1]
    assert re.fullmatch(r"training finished after 2 epochs in \d+\.\d s; valid_loss \d\.\d{4}", lines[-1])
    assert len(lines) == 1 + 2 * 5 + 2 + 1  # start, 5 step lines per epoch (none for the last batch), 2, end


def test_gradient_accumulation_equals_a_larger_batch():
    # batches of 32 accumulated in pairs see the same items per step as batches of 64 (the order of
    # an epoch depends only on the seed), so SGD takes the same steps up to float rounding
    train, valid = _data(batch=64)
    small = DataLoader(train.dataset, 32, shuffle=True, seed=1)
    a, b = MLP(), MLP()
    _learner(a, epochs=2, optimizer=SGD(a, lr=0.1)).fit(train)
    _learner(b, epochs=2, optimizer=SGD(b, lr=0.1), grad_accumulation=2).fit(small)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert np.allclose(pa.value.tolist(), pb.value.tolist(), atol=1e-5)


def test_data_parallel_matches_one_thread():
    train, valid = _data()
    a, b = MLP(), MLP()
    ra = _learner(a, epochs=2).fit(train, valid)
    rb = _learner(b, epochs=2, strategy=DataParallel(workers=2)).fit(train, valid)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert np.allclose(pa.value.tolist(), pb.value.tolist(), atol=1e-4)
    assert rb.history[-1]["valid_accuracy"] == pytest.approx(ra.history[-1]["valid_accuracy"], abs=0.01)


def test_learner_argument_errors():
    model = MLP()
    opt = Adam(model)
    with pytest.raises(ArgumentTypeError, match="model must be an ember.nn.Module"):
        Learner(object(), opt, F.cross_entropy)
    with pytest.raises(ArgumentTypeError, match="optimizer"):
        Learner(model, None, F.cross_entropy)
    with pytest.raises(ArgumentError, match="epochs must be an int >= 1"):
        Learner(model, opt, F.cross_entropy, epochs=0, progress=None)
    with pytest.raises(ArgumentTypeError, match="early_stopping"):
        Learner(model, opt, F.cross_entropy, early_stopping="valid_loss", progress=None)
    with pytest.raises(ArgumentError, match="progress must be"):
        Learner(model, opt, F.cross_entropy, progress="fancy")
    with pytest.raises(ArgumentTypeError, match="DataLoader"):
        _learner(model, optimizer=opt).fit([1, 2, 3])


def test_compiled_training_equals_eager():
    # the captured step (compile="auto" with SGD) gives the eager Learner's weights bit for bit,
    # resume state and checkpoints included
    train, valid = _data()
    runs = []
    for choice in (False, True):
        model = MLP()
        learner = _learner(model, epochs=2, optimizer=SGD(model, lr=0.05, momentum=0.9), compile=choice)
        result = learner.fit(train, valid)
        runs.append((_weights(model), [r["train_loss"] for r in result.history], learner))
    assert runs[0][0] == runs[1][0]
    assert runs[0][1] == runs[1][1]
    assert runs[0][2].compiled is None
    stats = runs[1][2].compiled.stats
    assert stats["replayed"] > 10 and not runs[1][2].compiled.refused, (stats, runs[1][2].compiled.refused)


def test_compile_true_says_why_it_does_not_apply():
    model = MLP()
    with pytest.raises(ArgumentError, match="RMSprop is not capturable"):
        _learner(model, optimizer=RMSprop(model, lr=1e-2), compile=True)
    with pytest.raises(ArgumentError, match="accumulated"):
        _learner(model, optimizer=SGD(model, lr=1e-2), compile=True, grad_accumulation=2)
    with pytest.raises(ArgumentError, match="compile must be"):
        _learner(model, optimizer=SGD(model, lr=1e-2), compile="yes")
    assert _learner(model, optimizer=RMSprop(model, lr=1e-2)).compiled is None  # "auto": eager


@pytest.mark.parametrize("choice", [False, True])
def test_a_scheduler_in_pytorchs_form_drives_the_learners_optimizer(choice):
    # lr.StepLR(opt, ...) (built on the optimizer) gives the weights of lr.StepLR(rate, ...), eager and captured
    train, valid = _data()
    runs = []
    for form in ("rate", "optimizer"):
        model = MLP()
        opt = SGD(model, lr=0.05, momentum=0.9)
        sched = lr.StepLR(0.05, 5, 0.5) if form == "rate" else lr.StepLR(opt, step_size=5, gamma=0.5)
        learner = _learner(model, epochs=1, optimizer=opt, scheduler=sched, compile=choice)
        learner.fit(train, valid)
        runs.append((_weights(model), sched.get_last_lr()))
    assert runs[0] == runs[1]
    assert runs[1][1][0] < 0.05  # the schedule advanced


def test_a_scheduler_of_another_optimizer_is_refused():
    model = MLP()
    other = SGD(MLP(), lr=0.1)
    with pytest.raises(ArgumentError, match="drives another optimizer"):
        _learner(model, optimizer=SGD(model, lr=0.1), scheduler=lr.StepLR(other, step_size=1))
