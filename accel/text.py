"""Text for people: durations as the progress lines, the dashboard and the command line show them.

Imports nothing, so the command line works on a bare ``pip install ember``."""


def format_seconds(s):
    """``75.4`` -> ``"1:15"``, ``3725`` -> ``"1:02:05"``."""
    if s != s or s in (float("inf"), float("-inf")):
        return "?"
    s = int(round(s))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return "%d:%02d:%02d" % (h, m, sec) if h else "%d:%02d" % (m, sec)
