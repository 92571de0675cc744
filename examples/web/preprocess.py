"""How an image becomes the shapes CNN's input, shared by the trainer (CPython) and the page (MicroPython):
a 16x16 grey image (values 0..255, row-major) is made bright-shape-on-dark (inverted when its border is
brighter than its middle) and stretched to 0..1."""

SIZE = 16


def normalize(grey):
    """``grey``: SIZE * SIZE numbers 0..255; returns a list of floats 0..1, the shape bright."""
    if len(grey) != SIZE * SIZE:
        raise ValueError("normalize: expected %d grey values (a %dx%d image), found %d"
                         % (SIZE * SIZE, SIZE, SIZE, len(grey)))
    border = 0.0
    middle = 0.0
    nb = 0
    for y in range(SIZE):
        for x in range(SIZE):
            v = grey[y * SIZE + x]
            if y == 0 or x == 0 or y == SIZE - 1 or x == SIZE - 1:
                border += v
                nb += 1
            elif 4 <= y < SIZE - 4 and 4 <= x < SIZE - 4:
                middle += v
    nm = (SIZE - 8) * (SIZE - 8)
    flip = border / nb > middle / nm
    vals = [255 - v if flip else v for v in grey]
    lo = min(vals)
    hi = max(vals)
    span = hi - lo if hi > lo else 1
    return [(v - lo) / span for v in vals]
