"""What the stress probes share: their scale (reduced under ``make test``, full under ``make stress``:
``EMBER_STRESS=full``) and their tally, which ``make stress`` sums into one JSON line.

Each probe calls ``tally(name, **counts)``; with ``EMBER_STRESS_REPORT`` set, the counts are appended
to that file as a JSON line (``summary.py`` reads them). Counts: ``inputs``, ``non_ember`` (an
exception that is not an ``EmberError``), ``hangs`` (an input that took longer than ``HANG_SECONDS``),
``silent_wrong`` (a result that differs from the reference), ``kills``/``kills_survived``,
``rss_growth_pct``.
"""
import json
import os
import time

FULL = os.environ.get("EMBER_STRESS") == "full"
HANG_SECONDS = 5.0


def scale(reduced, full):
    """``full`` under ``make stress``, ``reduced`` otherwise."""
    return full if FULL else reduced


def tally(name, **counts):
    path = os.environ.get("EMBER_STRESS_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(dict(counts, probe=name)) + "\n")


class Outcomes:
    """Counts what each call of a fuzzed entry point did; keeps the first few surprises to show."""

    def __init__(self, name, allowed):
        self.name = name
        self.allowed = allowed  # the exception classes a damaged input may raise
        self.inputs = self.accepted = self.rejected = self.non_ember = self.hangs = self.silent_wrong = 0
        self.examples = []

    def run(self, label, fn):
        """``fn()`` for one input; its result, or None when it raised an allowed error."""
        self.inputs += 1
        t0 = time.perf_counter()
        try:
            out = fn()
            self.accepted += 1
            return out
        except self.allowed:
            self.rejected += 1
            return None
        except Exception as e:  # the defect this probe hunts: any other exception
            self.non_ember += 1
            if len(self.examples) < 5:
                self.examples.append("%s: %s: %s" % (label, type(e).__name__, str(e)[:200]))
            return None
        finally:
            if time.perf_counter() - t0 > HANG_SECONDS:
                self.hangs += 1
                if len(self.examples) < 5:
                    self.examples.append("%s: took %.1f s" % (label, time.perf_counter() - t0))

    def wrong(self, label, why):
        self.silent_wrong += 1
        if len(self.examples) < 5:
            self.examples.append("%s: %s" % (label, why))

    def check(self):
        tally(self.name, inputs=self.inputs, non_ember=self.non_ember, hangs=self.hangs,
              silent_wrong=self.silent_wrong)
        assert self.non_ember == 0 and self.hangs == 0 and self.silent_wrong == 0, \
            "%s over %d inputs (%d accepted): %d non-ember, %d hangs, %d silent wrong; e.g.\n%s" % (
                self.name, self.inputs, self.accepted, self.non_ember, self.hangs, self.silent_wrong,
                "\n".join(self.examples))
