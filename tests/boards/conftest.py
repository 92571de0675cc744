"""What every board check shares: the digits CNN trained briefly (the fit and the agreement do not
need the demo's accuracy), the held-out digits and 200 training digits to calibrate on."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APP = os.path.join(ROOT, "examples", "digits")


@pytest.fixture(scope="session")
def digits(tmp_path_factory):
    import ember
    from ember import record
    from ember.accel.data import DataLoader, load_digits
    from ember.accel.optim import AdamW
    from ember.accel.train import Learner
    import ember.nn.functional as F
    from ember.accel.deploy.model import load_class
    DigitsCNN = load_class(os.path.join(APP, "digits_cnn.py"), "DigitsCNN")
    d = tmp_path_factory.mktemp("boards")
    rest, heldout = load_digits().split(0.2, seed=0, stratify=True)
    try:
        device = ember.Cpu(kernels="c")
    except ImportError:
        from ember.accel import NumPy
        device = NumPy()
    model = DigitsCNN(generator=ember.Generator(0))
    Learner(model, AdamW(model, lr=5e-3), F.cross_entropy, epochs=6, device=device, run_dir=str(d / "run"),
            metrics=[], plot=False).fit(DataLoader(rest, 32, shuffle=True, seed=0), None)
    weights = str(d / "digits_cnn.safetensors")
    model.save(weights)

    def inputs(ds, n, path, labels=True):
        x, y = ds.get_batch(range(n))
        tensors = [("inputs", ember.tensor(x.tobytes(), dtype=ember.float32, shape=x.shape))]
        if labels:
            tensors.append(("labels", ember.tensor(y.tolist(), dtype=ember.int32)))
        record.write(path, tensors)
        return path
    return {"weights": weights, "model": os.path.join(APP, "digits_cnn.py") + ":DigitsCNN",
            "data": inputs(heldout, len(heldout), str(d / "heldout.safetensors")),
            "calibration": inputs(rest, 200, str(d / "calibration.safetensors"), labels=False),
            "dir": d}
