"""Progress for the command line's long jobs: a bar with rate and ETA on a terminal, plain lines in
a pipe (a line at most every ``every`` seconds, and always the last), so logs stay readable."""
import sys
import time

from ember.accel.text import format_seconds


class Progress:
    def __init__(self, total, label, unit="items", stream=None, every=5.0, width=28, bar=None):
        self.total = max(0, int(total))
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.every = every
        self.width = width
        self.done = 0
        self.start = time.perf_counter()
        self._last_line = None
        isatty = getattr(self.stream, "isatty", None)
        # bar=False: lines even on a terminal (when other output goes between the updates)
        self.terminal = bool(isatty and isatty()) if bar is None else bar

    def _text(self, note, bar):
        elapsed = time.perf_counter() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        frac = self.done / self.total if self.total else 1.0
        head = "%s %d/%d" % (self.label, self.done, self.total)
        if bar:
            fill = int(round(frac * self.width))
            head = "%s [%s%s] %d/%d" % (self.label, "#" * fill, "." * (self.width - fill), self.done, self.total)
        text = "%s (%3.0f%%) %.2f %s/s, %s elapsed, ETA %s" % (head, 100 * frac, rate, self.unit,
                                                               format_seconds(elapsed), format_seconds(left))
        return text + (" - " + note if note else "")

    def update(self, n=1, note=""):
        """``n`` more done; ``note`` says what (e.g. the item's name). A job that ends within
        ``every`` seconds (half a second on a terminal) shows nothing: quick jobs stay quiet."""
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        now = time.perf_counter()
        if self.terminal:
            if self._last_line is not None or now - self.start >= min(0.5, self.every):
                self._last_line = now
                self.stream.write("\r\x1b[K" + self._text(note, True))
                self.stream.flush()
            return
        due = now - (self._last_line if self._last_line is not None else self.start) >= self.every
        if due or (self.done >= self.total and self._last_line is not None):
            self._last_line = now
            self.stream.write(self._text(note, False) + "\n")
            self.stream.flush()

    def close(self):
        if self.terminal and self._last_line is not None:
            self.stream.write("\n")
            self.stream.flush()
