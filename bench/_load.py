"""How busy the rest of the machine was while a benchmark measured (CPython on Linux).

This machine is shared: benchmarks drop the rounds in which other processes used the cores.
"""
import os
import time


class LoadMeter:
    """CPU time other processes used since creation, in cores (Linux /proc/stat; None elsewhere)."""

    def __init__(self):
        self.start = self._snapshot()

    @staticmethod
    def _snapshot():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / hz  # all but idle and iowait
        t = os.times()
        return busy, t[0] + t[1], time.perf_counter()

    def foreign_cores(self):
        end = self._snapshot()
        if self.start is None or end is None:
            return None
        busy, own, wall = (e - s for e, s in zip(end, self.start))
        return max(0.0, (busy - own) / wall) if wall > 0 else None
