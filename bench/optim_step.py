"""Optimizer step alone: ember's fused updates beside its op-by-op ones and torch.optim.

    python bench/optim_step.py [--rounds N] [--target S] [--threads N]

Parameters of two models: the MLP of train_step.py (784-128-10: 4 tensors, 102k values) and a
wider one (8 tensors of 512x512 and 512: 1.05M values). Each cell times ``opt.step(grads)`` with
fixed gradients: ember's SGD (momentum 0.9) and Adam on ``Autodiff(Cpu())`` (C kernels) and
``Autodiff(NumPy())``, fused (the built-in path) and op by op (the same device through a subclass
whose ``override`` runs the composites' bodies); PyTorch's ``torch.optim.SGD`` and ``Adam`` with
``foreach=False`` (a loop of per-tensor ops, as ember's op-by-op path) and ``foreach=True``
(multi-tensor kernels). One thread for every library. Rounds time every cell once in shuffled order; a figure is the median over
rounds (ms per step). The last line is one JSON object: ``<model>_<opt>_<cell>_ms`` and
``<model>_<opt>_<device>_fused_vs_torch_foreach`` (torch foreach's time / ember fused's).
"""
import json
import random
import sys

from train_step import THREADS, _arg, batch_seconds, calibrate, median  # noqa: E402 (sets the thread env first)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402
from ember import composite  # noqa: E402
from ember.accel.autodiff import Autodiff  # noqa: E402
from ember.accel.numpy import NumPy  # noqa: E402
from ember.accel.optim import SGD, Adam, GradientsParams  # noqa: E402
from ember.backends.cpu import ckernels  # noqa: E402
from ember.nn.module import Param  # noqa: E402

MODELS = {"mlp": [(128, 784), (128,), (10, 128), (10,)], "wide": [(512, 512), (512,)] * 4}
NAMES = ("sgd_update", "adam_update")


def op_by_op(cls):
    """A device class like ``cls`` whose optimizer composites run their bodies (an override beats
    the fused path; its tensors meet ``cls``'s)."""
    sub = type(cls.__name__, (cls,), {})
    for n in NAMES:
        sub.override(n, composite.COMPOSITES[n])
    return sub


def ember_cell(inner, shapes, make):
    r = np.random.default_rng(0)
    dev = Autodiff(inner)
    pairs = [("p%d" % i, Param(ember.tensor(r.standard_normal(s).astype(np.float32).tolist(), device=dev)))
             for i, s in enumerate(shapes)]
    grads = GradientsParams({p.id: ember.tensor(r.standard_normal(s).astype(np.float32).tolist(), device=inner)
                             for (_, p), s in zip(pairs, shapes)})
    opt = make(pairs)

    def step():
        opt.step(grads)
    return step


def torch_cell(shapes, make, foreach):
    r = np.random.default_rng(0)
    params = [torch.nn.Parameter(torch.from_numpy(r.standard_normal(s).astype(np.float32))) for s in shapes]
    for p in params:
        p.grad = torch.from_numpy(r.standard_normal(p.shape).astype(np.float32))
    opt = make(params, foreach)
    return opt.step


def main():
    torch.set_num_threads(THREADS)
    ckernels.set_num_threads(THREADS)
    rounds = _arg(sys.argv[1:], "--rounds", 7, int)
    target = _arg(sys.argv[1:], "--target", 0.2, float)
    optims = {
        "sgd": (lambda ps: SGD(ps, lr=0.01, momentum=0.9),
                lambda ps, fe: torch.optim.SGD(ps, lr=0.01, momentum=0.9, foreach=fe)),
        "adam": (lambda ps: Adam(ps, lr=1e-3), lambda ps, fe: torch.optim.Adam(ps, lr=1e-3, foreach=fe)),
    }
    devices = {"cpu": ember.Cpu(), "numpy": NumPy()}
    ops_devices = {d: op_by_op(type(dev))() for d, dev in devices.items()}
    cells = {}
    for model, shapes in MODELS.items():
        for oname, (make_e, make_t) in optims.items():
            for dname, dev in devices.items():
                for fused in (True, False):
                    key = "%s_%s_%s_%s" % (model, oname, dname, "fused" if fused else "ops")
                    cells[key] = ember_cell(dev if fused else ops_devices[dname], shapes, make_e)
            for fe in (False, True):
                cells["%s_%s_torch_%s" % (model, oname, "foreach" if fe else "loop")] = torch_cell(shapes, make_t, fe)
    counts = {k: calibrate(f, target) for k, f in cells.items()}
    samples = {k: [] for k in cells}
    rng = random.Random(0)
    for _ in range(rounds):
        order = list(cells)
        rng.shuffle(order)
        for k in order:
            samples[k].append(batch_seconds(cells[k], counts[k]) / counts[k] * 1e3)
    med = {k + "_ms": round(median(v), 4) for k, v in samples.items()}
    print("optimizer step, ms (median of %d rounds; torch %s, %d thread%s)"
          % (rounds, torch.__version__, THREADS, "" if THREADS == 1 else "s"))
    print("%-10s %10s %10s %10s %10s %10s %10s" % ("", "cpu fused", "cpu ops", "np fused", "np ops", "torch loop",
                                                   "torch fe"))
    for model in MODELS:
        for oname in optims:
            p = "%s_%s_" % (model, oname)
            print("%-10s" % (model + " " + oname) + "".join(
                " %10.3f" % med[p + c + "_ms"] for c in ("cpu_fused", "cpu_ops", "numpy_fused", "numpy_ops",
                                                          "torch_loop", "torch_foreach")))
            for d in devices:
                ratio = med[p + "torch_foreach_ms"] / med[p + d + "_fused_ms"]
                med[p + d + "_fused_vs_torch_foreach"] = round(ratio, 3)
    med["threads"] = THREADS
    med["rounds"] = rounds
    print(json.dumps(med, sort_keys=True))


if __name__ == "__main__":
    main()
