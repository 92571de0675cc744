"""Issue 14, defects 6-8 outside the core: damaged optimizer records and checkpoint states, a corrupt
autotune cache, hyperparameters checked at construction, a step given another model's gradients, a
checkpoint folder that cannot be written. Each raises an ember error naming the input."""
import json
import os
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
import ember.nn.layers as nn
from ember import record
from ember.accel import Autodiff
from ember.accel.data import DataLoader, InMemoryDataset
from ember.accel.optim import SGD, Adam, AdamW, RMSprop
from ember.accel.train import Checkpoints, Learner, read_state
from ember.accel.wgpu import autotune
from ember.errors import ArgumentError, ArgumentTypeError, EmberError, RecordError

DEV = Autodiff(ember.Cpu())


def _model(seed=0):
    return nn.Linear(3, 2, generator=ember.Generator(seed), device=DEV)


def _stepped(opt_cls=AdamW, **kw):
    m = _model()
    opt = opt_cls(m, **kw)
    opt.step(m(ember.ones(4, 3, device=DEV)).sum().backward())
    return m, opt


@pytest.mark.parametrize("hyper", [dict(lr=float("nan")), dict(lr=float("inf")), dict(lr=-1.0),
                                   dict(weight_decay=float("nan")), dict(eps=float("nan")),
                                   dict(betas=(float("nan"), 0.9)), dict(lr="0.1")])
def test_hyperparameters_checked_when_built(hyper):
    with pytest.raises(ArgumentError, match="AdamW: .*found"):
        AdamW(_model(), **hyper)
    opt = AdamW(_model())
    with pytest.raises(ArgumentError, match="lr must be a finite number"):
        opt.lr = float("nan")


def test_step_with_another_models_gradients_says_so():
    a, b = _model(0), _model(1)
    opt = Adam(a)
    grads = b(ember.ones(4, 3, device=DEV)).sum().backward()
    before = a.weight.tolist()
    with pytest.raises(ArgumentError, match=r"Adam.step: none of the 2 gradients .*weight, bias.*another model"):
        opt.step(grads)
    assert a.weight.tolist() == before
    opt.step(a(ember.ones(4, 3, device=DEV)).sum().backward())  # its own still step
    assert a.weight.tolist() != before


def _damage(path, out, **meta_changes):
    with record.open(path) as r:
        tensors = [(n, r.read(n)) for n in r.names()]
        meta = dict(r.metadata)
    for k, v in meta_changes.items():
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    record.write(out, tensors, metadata=meta)
    return out


DAMAGED_META = [
    dict(param_groups="{not json"), dict(scalars="[" * 5000 + "]" * 5000), dict(param_groups=None),
    dict(param_groups='{"params": 1}'), dict(param_groups='[1]'), dict(param_groups='[{"params": 3}]'),
    dict(scalars='{"weight": 3}'), dict(scalars='{"weight": {"step": "x"}, "bias": {"step": 1}}'),
    dict(scalars='{"weight": {"step": -1}, "bias": {"step": 1}}'), dict(scalars='{"weight": {}, "bias": {}}'),
    dict(param_groups='[{"params": ["weight", "bias"], "lr": "fast"}]'),
    dict(param_groups='[{"params": ["weight", "bias"], "lr": 0.1, "amsgrad": "no"}]'),
    dict(param_groups='[{"params": ["weight", "bias"], "lr": 0.1, "bogus": 1}]'),
    dict(param_groups='[{"params": ["bias", "weight"]}]'),
    dict(param_groups='[{"params": ["weight", "bias"], "amsgrad": true, "lr": 0.1, "betas": [0.9, 0.99],'
         ' "eps": 1e-8, "weight_decay": 0.0, "maximize": false}]'),  # amsgrad without max_exp_avg_sq
]


@pytest.mark.parametrize("change", DAMAGED_META, ids=[str(i) for i in range(len(DAMAGED_META))])
def test_damaged_optimizer_record_is_a_record_error(tmp_path, change):
    m, opt = _stepped()
    good = opt.save(str(tmp_path / "opt.safetensors"))
    bad = _damage(good, str(tmp_path / "bad.safetensors"), **change)
    fresh = AdamW(_model())
    before = fresh.state_dict()
    with pytest.raises(RecordError, match="AdamW.load: .*bad.safetensors"):
        fresh.load(bad)
    assert fresh.state_dict() == before  # nothing half-restored
    fresh.load(good)
    assert fresh.state_dict()["state"]["weight"]["step"] == 1


def test_damaged_optimizer_tensors(tmp_path):
    m, opt = _stepped(RMSprop, momentum=0.9, centered=True)
    good = opt.save(str(tmp_path / "opt.safetensors"))
    with record.open(good) as r:
        tensors = [(n, r.read(n)) for n in r.names()]
        meta = dict(r.metadata)
    cases = {"noname": [("nodot", tensors[0][1])] + tensors[1:],
             "missing": [t for t in tensors if not t[0].endswith("grad_avg")],
             "shape": [(n, ember.zeros(7)) if i == 0 else (n, t) for i, (n, t) in enumerate(tensors)]}
    for label, ts in cases.items():
        path = str(tmp_path / (label + ".safetensors"))
        record.write(path, ts, metadata=meta)
        with pytest.raises(RecordError, match="RMSprop.load: .*%s" % label):
            RMSprop(_model(), momentum=0.9, centered=True).load(path)


def test_optimizer_load_state_dict_checks_structure():
    opt = SGD(_model(), lr=0.1, momentum=0.9)
    for bad in (None, [], {"param_groups": {}, "state": {}}, {"param_groups": [3], "state": {}},
                {"param_groups": [{"params": ["weight", "bias"]}], "state": {"weight": 1}}):
        with pytest.raises(EmberError, match="SGD.load_state_dict"):
            opt.load_state_dict(bad)


def _ck(folder, name, text):
    path = os.path.join(folder, name)
    os.makedirs(path)
    with open(os.path.join(path, "state.json"), "w") as f:
        f.write(text)
    return path


@pytest.mark.parametrize("text", ["[1, 2]", '{"position": "x"}', '{"position": [1]}', '{"position": [1, -2]}',
                                  '{"position": [1, 0], "metric": "0.5"}', '{"position": [1, 0], "metric": [1]}',
                                  "[" * 5000 + "]" * 5000, "{", '{"position": [true, 0]}'])
def test_corrupt_checkpoint_state(tmp_path, text):
    path = _ck(str(tmp_path), "epoch-002", text)
    with pytest.raises(RecordError, match="checkpoint: .*epoch-002"):
        read_state(path)
    store = Checkpoints(str(tmp_path))
    _ck(str(tmp_path), "epoch-001", '{"position": [1, 0], "metric": 0.5}')
    assert [c.name for c in store.list()] == ["epoch-001"]  # the damaged one is skipped, never resumed
    assert store.best().name == "epoch-001"


def _learner(tmp_path, epochs=1, **kw):
    m = nn.Linear(4, 3, generator=ember.Generator(0))
    return Learner(m, SGD(m, lr=0.1), F.cross_entropy, epochs=epochs, progress=None, plot=False,
                   device=ember.Cpu(), **kw)


def _loader():
    x = np.random.RandomState(1).randn(16, 4).astype(np.float32)
    return DataLoader(InMemoryDataset(x, np.arange(16) % 3), 8)


@pytest.mark.parametrize("field,value", [("rng", {"ember": 3}), ("rng", None), ("history", {"a": 1}),
                                         ("history", [1, 2]), ("metrics", [1]), ("metrics", {"train_loss": 2})])
def test_learner_resume_from_a_damaged_state(tmp_path, field, value):
    ck = str(tmp_path / "ck")
    _learner(tmp_path, checkpoint_dir=ck).fit(_loader())
    path = os.path.join(ck, "epoch-001")
    state = json.load(open(os.path.join(path, "state.json")))
    state[field] = value
    json.dump(state, open(os.path.join(path, "state.json"), "w"))
    with pytest.raises(RecordError, match="Learner: .*epoch-001.*%s" % field):
        _learner(tmp_path, checkpoint_dir=ck, epochs=2).fit(_loader(), resume=path)


def test_unwritable_checkpoint_folder_fails_at_the_start(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    learner = _learner(tmp_path, checkpoint_dir=str(blocker / "ck"))
    before = learner.model.weight.tolist()
    with pytest.raises(ArgumentError, match="Checkpoints: cannot write checkpoints to .*a-file"):
        learner.fit(_loader())
    assert learner.model.weight.tolist() == before  # no step was taken


def test_corrupt_autotune_cache_is_empty_with_one_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = autotune.cache_path()
    os.makedirs(os.path.dirname(path))
    for text in ("[" * 5000 + "]" * 5000, "{bad", '{"k": [1]}', "[1]"):
        with open(path, "w") as f:
            f.write(text)
        autotune._loaded[:] = []
        autotune._warned[:] = []
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            autotune._load()
            autotune._loaded[:] = []
            autotune._load()
            autotune._save("key", "variant")
        assert len(seen) == 1 and "corrupt cache" in str(seen[0].message)
        assert autotune._memory == {}
        assert json.load(open(path)) == {"key": "variant"}  # rewritten whole
