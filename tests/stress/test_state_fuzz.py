"""Optimizer-record and checkpoint-state fuzzing: structured mutations of what ``Optimizer.save`` and
the Learner's ``state.json`` hold (JSON fields, their types, nesting, tensors), loaded back. A damaged
input may only raise an ember error (``RecordError`` for a file); a load that succeeds must leave the
optimizer able to step. Seeds are fixed."""
import copy
import json
import os
import random

import numpy as np

import ember
import ember.nn.functional as F
import ember.nn.layers as nn
from ember import EmberError, record
from ember.accel import Autodiff
from ember.accel.data import DataLoader, InMemoryDataset
from ember.accel.optim import SGD, AdamW, RMSprop
from ember.accel.train import Learner

from probes import Outcomes, scale

SEEDS = (14, 2718, 16180)
OPT_INPUTS = scale(300, 6000)
STATE_INPUTS = scale(300, 3000)
DEV = Autodiff(ember.Cpu())
VALUES = [None, True, 0, -1, 1, 2 ** 63, 1e308, float("nan"), float("inf"), "x", "", [], [1], {}, {"a": 1},
          [[[]]], "weight", 0.5]


def _value(rng):
    v = rng.choice(VALUES + ["deep"])
    return ("deep", rng.choice([2000, 20000])) if v == "deep" else copy.deepcopy(v)


def _mutate(rng, obj, depth=0):
    """``obj`` (JSON data) with one field replaced, removed or added, somewhere inside."""
    if type(obj) is dict and obj and rng.random() < 0.7:
        k = rng.choice(sorted(obj, key=str))
        roll = rng.random()
        if roll < 0.15:
            del obj[k]
        elif roll < 0.6 and type(obj[k]) in (dict, list) and depth < 6:
            _mutate(rng, obj[k], depth + 1)
        else:
            obj[k] = _value(rng)
        return obj
    if type(obj) is list and obj and rng.random() < 0.7:
        i = rng.randrange(len(obj))
        roll = rng.random()
        if roll < 0.15:
            del obj[i]
        elif roll < 0.6 and type(obj[i]) in (dict, list) and depth < 6:
            _mutate(rng, obj[i], depth + 1)
        else:
            obj[i] = _value(rng)
        return obj
    if type(obj) is dict:
        obj[rng.choice(["extra", "step", "lr", "params"])] = _value(rng)
    elif type(obj) is list:
        obj.append(_value(rng))
    return obj


def _dumps(obj):
    text = json.dumps(obj, allow_nan=True)
    # ("deep", n) stands for n nested lists, written as text (json.dumps would recurse)
    while '["deep", ' in text:
        at = text.index('["deep", ')
        end = text.index("]", at)
        n = int(text[at + 9:end])
        text = text[:at] + "[" * n + "]" * n + text[end + 1:]
    return text


def _model(seed=0):
    return nn.Sequential(nn.Linear(3, 4, generator=ember.Generator(seed)), nn.Linear(4, 2,
                         generator=ember.Generator(seed + 1))).to(DEV)


def _saved(tmp_path, cls, **kw):
    m = _model()
    opt = cls(m, **kw)
    for _ in range(2):
        opt.step(m(ember.ones(5, 3, device=DEV)).sum().backward())
    path = opt.save(str(tmp_path / ("%s.safetensors" % cls.__name__)))
    with record.open(path) as r:
        return [(n, r.read(n)) for n in r.names()], dict(r.metadata)


def test_optimizer_record_fuzz(tmp_path):
    out = Outcomes("optimizer_record_fuzz", EmberError)
    path = str(tmp_path / "fuzzed.safetensors")
    kinds = [(AdamW, {"amsgrad": True}), (SGD, {"momentum": 0.9}), (RMSprop, {"momentum": 0.5, "centered": True})]
    bases = [(cls, kw, _saved(tmp_path, cls, **kw)) for cls, kw in kinds]
    for seed in SEEDS:
        rng = random.Random(seed)
        for i in range(OPT_INPUTS // len(SEEDS)):
            cls, kw, (tensors, meta) = rng.choice(bases)
            meta, tensors = dict(meta), list(tensors)
            what = rng.randrange(5)
            if what < 3:
                key = rng.choice(["param_groups", "scalars"])
                meta[key] = _dumps(_mutate(rng, json.loads(meta[key])))
            elif what == 3:
                k = rng.randrange(len(tensors))
                name, t = tensors[k]
                tensors[k] = rng.choice([(name + "x", t), (name.replace(".", "_"), t), (name, t.reshape(-1)),
                                         (name, t.to(ember.int32)), (name, ember.zeros(1))])
            else:
                meta[rng.choice(["format", "optimizer", "param_groups", "scalars"])] = rng.choice(
                    ["", "ember.optim/2", "SGD", "{}", "[]", "null", "x" * 100])
            record.write(path, tensors, metadata=meta)
            model = _model()
            opt = cls(model, **kw)
            label = "seed %d input %d (%s)" % (seed, i, cls.__name__)
            out.run(label, lambda: opt.load(path) or True)
            # loaded or refused, the optimizer still steps: a half-restored state would fail here
            out.run(label + " step", lambda: opt.step(model(ember.ones(2, 3, device=DEV)).sum().backward()) or True)
    out.check()


def _learner(ck, epochs=2):
    m = nn.Linear(4, 3, generator=ember.Generator(0))
    return Learner(m, SGD(m, lr=0.1, momentum=0.9), F.cross_entropy, epochs=epochs, progress=None, plot=False,
                   device=ember.Cpu(), checkpoint_dir=ck)


def _loader():
    x = np.random.RandomState(1).randn(16, 4).astype(np.float32)
    return DataLoader(InMemoryDataset(x, np.arange(16) % 3), 8, shuffle=True, seed=2)


def test_checkpoint_state_fuzz(tmp_path):
    ck = str(tmp_path / "ck")
    _learner(ck, epochs=1).fit(_loader())
    path = os.path.join(ck, "epoch-001")
    with open(os.path.join(path, "state.json")) as f:
        good = json.load(f)
    out = Outcomes("checkpoint_state_fuzz", EmberError)
    for seed in SEEDS:
        rng = random.Random(seed)
        for i in range(STATE_INPUTS // len(SEEDS)):
            state = _mutate(rng, copy.deepcopy(good))
            if rng.random() < 0.2:
                state = _mutate(rng, state)
            with open(os.path.join(path, "state.json"), "w") as f:
                f.write(_dumps(state) if rng.random() < 0.9 else _dumps(state)[:rng.randrange(200)])
            learner = _learner(ck)
            out.run("seed %d input %d" % (seed, i), lambda: learner._restore(path))
    out.check()
