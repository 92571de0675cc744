# cpython-only: trains the web demo's shapes classifier (numpy, C kernels)
"""Train the web demo's image classifier: ``ShapesCNN`` on synthetic 16x16 shapes (``shapes_data``).

Writes ``artifacts/shapes_cnn.safetensors`` next to this file (``make web`` runs this when it is
missing) and prints the accuracy on 800 fresh shapes; exits non-zero below 90%.

    python examples/web/train_shapes.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ember  # noqa: E402
import ember.nn.functional as F  # noqa: E402
from ember.accel.autodiff import no_grad  # noqa: E402
from ember.accel.data import DataLoader, InMemoryDataset  # noqa: E402
from ember.accel.optim import AdamW, lr  # noqa: E402
from ember.accel.train import Learner  # noqa: E402

import shapes_data  # noqa: E402
from shapes_cnn import ShapesCNN  # noqa: E402

SEED = 0
EPOCHS = 12
BATCH = 64
LR = 5e-3
TARGET = 0.90
OUT = os.path.join(HERE, "artifacts", "shapes_cnn.safetensors")


def device():
    try:
        return ember.Cpu(kernels="c")
    except ImportError:
        from ember.accel import NumPy
        return NumPy()


def main():
    x, y = shapes_data.make(4000, SEED)
    vx, vy = shapes_data.make(400, SEED + 1)
    tx, ty = shapes_data.make(800, SEED + 2)
    ember.seed(SEED)
    model = ShapesCNN(generator=ember.Generator(SEED))
    loader = DataLoader(InMemoryDataset(x, y), BATCH, shuffle=True, seed=SEED)
    learner = Learner(model, AdamW(model, lr=LR, weight_decay=1e-4), F.cross_entropy, epochs=EPOCHS,
                      scheduler=lr.CosineAnnealingLR(LR, T_max=EPOCHS * len(loader)), metrics=["accuracy"],
                      device=device())
    result = learner.fit(loader, DataLoader(InMemoryDataset(vx, vy), 400))
    model.eval()
    predictions = []
    with no_grad():
        for bx, _ in DataLoader(InMemoryDataset(tx, ty), 400, device=learner.device).epoch(0):
            predictions.extend(model(bx.to(learner.device)).argmax(dim=1).tolist())
    correct = sum(int(p == t) for p, t in zip(predictions, ty.tolist()))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    model.save(OUT)
    print("shapes: trained %.1f s; accuracy on %d fresh shapes %.2f%%; wrote %s"
          % (result.seconds, len(ty), 100.0 * correct / len(ty), os.path.relpath(OUT)))
    if correct / len(ty) < TARGET:
        sys.exit("accuracy below the %.0f%% target" % (100 * TARGET))


if __name__ == "__main__":
    main()
