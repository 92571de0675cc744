"""Line charts in the terminal, drawn with braille dots (2x4 per character cell) as rich ``Text``."""
from rich.text import Text

_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col] of a braille cell


def _label(v):
    a = abs(v)
    if a != 0 and (a >= 1e5 or a < 1e-3):
        return "%.2e" % v
    return "%.4g" % v


def _line(x0, y0, x1, y1):
    """The dots of a segment (Bresenham)."""
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    while True:
        yield x0, y0
        if x0 == x1 and y0 == y1:
            return
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


def render(series, width, height, x_label="step"):
    """A chart of ``series`` (a list of ``(points, style)``, points ``[(x, y), ...]``) in ``width``
    x ``height`` character cells, y labels on the left and the x range below. NaNs are skipped."""
    gutter = 10
    cols = max(4, width - gutter - 1)
    rows = max(2, height - 1)
    clean = [([(x, y) for x, y in pts if y is not None and y == y], style) for pts, style in series]
    xs = [x for pts, _ in clean for x, _ in pts]
    ys = [y for pts, _ in clean for _, y in pts]
    text = Text(no_wrap=True, overflow="crop")
    if not xs:
        for r in range(rows):
            text.append(" " * gutter + "│" + ("waiting for data" if r == rows // 2 else "") + "\n")
        text.append(" " * gutter + "└" + "─" * cols)
        return text
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if y1 - y0 < 1e-12:
        y0, y1 = y0 - 0.5 * (abs(y0) or 1), y1 + 0.5 * (abs(y1) or 1)
    pad = 0.04 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    if x1 == x0:
        x1 = x0 + 1
    w, h = cols * 2, rows * 4
    cells = [[0] * cols for _ in range(rows)]
    styles = [[None] * cols for _ in range(rows)]

    def dot(px, py, style):
        if 0 <= px < w and 0 <= py < h:
            r, c = py // 4, px // 2
            cells[r][c] |= _BITS[py % 4][px % 2]
            styles[r][c] = style

    for pts, style in clean:
        prev = None
        for x, y in pts:
            px = int(round((x - x0) / (x1 - x0) * (w - 1)))
            py = int(round((y1 - y) / (y1 - y0) * (h - 1)))
            if prev is None:
                dot(px, py, style)
            else:
                for qx, qy in _line(prev[0], prev[1], px, py):
                    dot(qx, qy, style)
            prev = (px, py)
    for r in range(rows):
        if r == 0:
            label = _label(y1)
        elif r == rows - 1:
            label = _label(y0)
        elif r == rows // 2:
            label = _label((y0 + y1) / 2)
        else:
            label = ""
        text.append(label.rjust(gutter - 1)[:gutter - 1] + " │", style="dim")
        for c in range(cols):
            bits = cells[r][c]
            text.append(chr(0x2800 + bits) if bits else " ", style=styles[r][c])
        text.append("\n")
    left, right = "%s %s" % (x_label, _label(x0)), _label(x1)
    text.append(" " * gutter + "└" + left + " " * max(1, cols - len(left) - len(right)) + right, style="dim")
    return text
