"""Writes the embedded proof's golden files (see tests/core/test_embedded_lenet.py):

    lenet.safetensors   LeNet-5 weights, trained by torch, saved by ember at f16
    lenet.json          the classes and logits ember computes on CPython for the test batch

The task is synthetic, so no data set is needed: ten 28x28 prototype images drawn from
``ember.Generator(PROTOTYPE_SEED)``; an example of class k is prototype k plus standard-normal
noise. torch trains LeNet-5 on fresh noisy examples; the trained state_dict moves into the ember
model by name, unchanged. Run from the repository root (needs torch):

    .venv/bin/python tests/golden/lenet_golden.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "core"), os.path.join(HERE, "..")]

import torch  # noqa: E402

import ember  # noqa: E402
from ember.nn import init  # noqa: E402
import test_embedded_lenet as spec  # noqa: E402


def torch_lenet():
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def train(prototypes, steps=300):
    torch.manual_seed(0)
    model = torch_lenet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        labels = torch.randint(0, 10, (64,))
        x = prototypes[labels] + torch.randn(64, 1, 28, 28)
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    labels = torch.arange(10).repeat(50)
    with torch.no_grad():
        accuracy = (model(prototypes[labels] + torch.randn(500, 1, 28, 28)).argmax(1) == labels).float().mean()
    return model, accuracy.item()


def main():
    prototypes = torch.tensor(spec.prototypes(ember).tolist())
    trained, accuracy = train(prototypes)
    with init.skip():
        model = spec.lenet(ember)
    model.load_state_dict([(k, ember.tensor(v.tolist(), dtype=ember.int64 if v.dtype == torch.int64 else None))
                           for k, v in trained.state_dict().items()])
    record = os.path.join(HERE, "lenet.safetensors")
    model.save(record, precision="f16")

    model.load(record)  # the f16 weights, as the test reads them
    logits = model.eval()(spec.images(ember))
    rows = logits.tolist()
    margins = [sorted(r)[-1] - sorted(r)[-2] for r in rows]
    out = {"labels": list(spec.LABELS), "classes": logits.argmax(1).tolist(),
           "logits": [[float("%.7g" % v) for v in r] for r in rows]}
    with open(os.path.join(HERE, "lenet.json"), "w") as f:
        f.write(json.dumps(out) + "\n")
    print("torch accuracy on 500 fresh examples %.3f; classes %s for labels %s; smallest top-2 margin %.3g"
          % (accuracy, out["classes"], out["labels"], min(margins)))


if __name__ == "__main__":
    main()
