"""The classifier's bundled samples: one PNG per class of examples/web/shapes_cnn.CLASSES, drawn by
shapes_data.render (seeded), 4x enlarged (64x64 grey), written with zlib alone; and samples.json
(file name -> class) for the page's picker and the browser test."""
import json
import os
import struct
import sys
import zlib

SITE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "web")
SEED = 7
ZOOM = 4


def png(rows):
    """A greyscale 8-bit PNG of ``rows`` (lists of 0..255)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    h, w = len(rows), len(rows[0])
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def write(folder):
    sys.path.insert(0, SITE)
    import numpy as np
    import shapes_data
    from shapes_cnn import CLASSES
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(SEED)
    index = {}
    for name in CLASSES:
        img = np.kron(shapes_data.render(name, rng), np.ones((ZOOM, ZOOM), np.uint8))
        with open(os.path.join(folder, name + ".png"), "wb") as f:
            f.write(png(img.tolist()))
        index[name + ".png"] = name
    with open(os.path.join(folder, "samples.json"), "w") as f:
        json.dump(index, f)
