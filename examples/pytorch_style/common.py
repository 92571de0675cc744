"""What both PyTorch-style examples share: choosing the framework before the imports, and data.

The framework is ``--framework torch|ember`` on the command line, else the environment variable
``EMBER_EXAMPLE_FRAMEWORK``, else ember. Data is prepared with numpy only, so both frameworks see
the same arrays.
"""
import os
import sys

import numpy as np

FRAMEWORKS = ("torch", "ember")


def framework(default="ember"):
    """The framework this run uses (read before the example's imports)."""
    name = os.environ.get("EMBER_EXAMPLE_FRAMEWORK", default)
    argv = sys.argv
    for i, a in enumerate(argv):
        if a == "--framework" and i + 1 < len(argv):
            name = argv[i + 1]
        elif a.startswith("--framework="):
            name = a.split("=", 1)[1]
    if name not in FRAMEWORKS:
        raise SystemExit("--framework must be torch or ember, found %r" % (name,))
    return name


def _bilinear(n_in, n_out):
    """The (n_out, n_in) matrix of 1-D bilinear resampling (half-pixel centres, edges clamped)."""
    pos = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = pos - lo
    m = np.zeros((n_out, n_in))
    m[np.arange(n_out), lo] += 1 - frac
    m[np.arange(n_out), hi] += frac
    return m


def digits_28(test_fraction=0.2, seed=0):
    """ember's 1,797 8x8 digits upscaled (bilinear) to MNIST's 28x28 and normalized to mean 0, std 1:
    ``(train_images, train_labels, test_images, test_labels)``, images float32 (N, 1, 28, 28),
    labels int64; the test set a fixed random fifth."""
    from ember.accel.data.digits import load_digits
    ds = load_digits()
    images, labels = ds.arrays
    m = _bilinear(8, 28)
    big = m @ images[:, 0].astype(np.float64) @ m.T
    big = ((big - big.mean()) / big.std()).astype(np.float32)[:, None]
    order = np.random.default_rng(seed).permutation(len(big))
    n_test = int(len(big) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    labels = np.asarray(labels, dtype=np.int64)
    return big[train], labels[train], big[test], labels[test]


def batches(images, labels, batch_size, seed=None, limit=None):
    """(images, labels) numpy batches in order, or shuffled by ``seed``; at most ``limit`` of them."""
    order = np.arange(len(images)) if seed is None else np.random.default_rng(seed).permutation(len(images))
    out = []
    for start in range(0, len(order), batch_size):
        if limit is not None and len(out) >= limit:
            break
        idx = order[start:start + batch_size]
        out.append((images[idx], labels[idx]))
    return out
