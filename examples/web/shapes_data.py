# cpython-only: numpy
"""Synthetic 16x16 shapes for the web demo's image classifier (numpy): each image one shape of
``shapes_cnn.CLASSES`` at a random place, size, rotation, brightness and polarity, with noise, drawn at
4x resolution and averaged down (anti-aliased like a photo scaled by the browser)."""
import math

import numpy as np

from preprocess import SIZE, normalize
from shapes_cnn import CLASSES

SUPER = 4


def _mask(name, u, v):
    r = np.sqrt(u * u + v * v)
    if name == "circle":
        return r < 1.0
    if name == "ring":
        return (r < 1.0) & (r > 0.6)
    if name == "square":
        return np.maximum(abs(u), abs(v)) < 0.8
    if name == "diamond":
        return abs(u) + abs(v) < 1.0
    if name == "triangle":  # equilateral, pointing up
        return (v < 0.5) & (v > -1.0 + 1.732 * abs(u))
    if name == "cross":
        return ((abs(u) < 0.28) & (abs(v) < 1.0)) | ((abs(v) < 0.28) & (abs(u) < 1.0))
    if name == "star":
        return r < 0.45 + 0.55 * np.cos(5 * np.arctan2(v, u)) ** 4
    if name == "line":
        return (abs(v) < 0.22) & (abs(u) < 1.0)
    raise ValueError(name)


# rotation range (degrees) per class: a square turned 45 degrees is a diamond
_TURN = {"square": 15, "diamond": 15, "cross": 15, "triangle": 20, "circle": 180, "ring": 180, "star": 36, "line": 180}


def render(name, rng):
    """One grey image (SIZE, SIZE) of shape ``name``, values 0..255 (uint8)."""
    n = SIZE * SUPER
    scale = rng.uniform(0.45, 0.8) * SIZE / 2
    cx = SIZE / 2 + rng.uniform(-1, 1) * (SIZE / 2 - scale) * 0.7
    cy = SIZE / 2 + rng.uniform(-1, 1) * (SIZE / 2 - scale) * 0.7
    t = math.radians(rng.uniform(-_TURN[name], _TURN[name]))
    ys, xs = np.mgrid[0:n, 0:n]
    px, py = (xs + 0.5) / SUPER - cx, (ys + 0.5) / SUPER - cy
    u = (px * math.cos(t) + py * math.sin(t)) / scale
    v = (-px * math.sin(t) + py * math.cos(t)) / scale
    m = _mask(name, u, v).astype(np.float64).reshape(SIZE, SUPER, SIZE, SUPER).mean(axis=(1, 3))
    fg, bg = rng.uniform(140, 255), rng.uniform(0, 100)
    if rng.random() < 0.5:
        fg, bg = 255 - fg, 255 - bg
    img = bg + (fg - bg) * m + rng.normal(0, 8, m.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def make(count, seed):
    """(inputs float32 (count, 1, SIZE, SIZE) normalized as the page does, labels int64 (count,))."""
    rng = np.random.default_rng(seed)
    labels = np.arange(count) % len(CLASSES)
    rng.shuffle(labels)
    x = np.empty((count, 1, SIZE, SIZE), np.float32)
    for i, k in enumerate(labels):
        x[i, 0] = np.array(normalize(render(CLASSES[k], rng).ravel().tolist()), np.float32).reshape(SIZE, SIZE)
    return x, labels.astype(np.int64)
