"""Sums the probes' tallies (``EMBER_STRESS_REPORT``) into the one JSON line ``make stress`` ends with."""
import json
import sys


def main(path):
    rows = []
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError:
        pass
    total = {"non_ember_exceptions": 0, "hangs": 0, "silent_wrong": 0, "kills": 0, "kills_survived": 0,
             "rss_growth_pct": 0.0, "inputs": 0, "probes": len(rows)}
    for r in rows:
        total["non_ember_exceptions"] += r.get("non_ember", 0)
        total["hangs"] += r.get("hangs", 0)
        total["silent_wrong"] += r.get("silent_wrong", 0)
        total["kills"] += r.get("kills", 0)
        total["kills_survived"] += r.get("kills_survived", 0)
        total["inputs"] += r.get("inputs", 0)
        total["rss_growth_pct"] = max(total["rss_growth_pct"], r.get("rss_growth_pct", 0.0))
    print(json.dumps(total))


if __name__ == "__main__":
    main(sys.argv[1])
