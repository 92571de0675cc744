"""tools/system_packages.sh, the set-up step `make test` and `make demo` run first: with stub
commands on PATH it must install what is missing as root, stop with the exact command otherwise,
and say nothing when nothing is missing."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "system_packages.sh")


def _stub(folder, name, body):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, 0o755)


def _run(tmp_path, uid, installed, compiler=True, apt=True):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "apt.log"
    _stub(str(bin_), "id", 'echo %d' % uid)
    # dpkg-query -W -f=... PKG: "install ok installed" only for the packages listed as installed
    _stub(str(bin_), "dpkg-query", 'for p in %s; do [ "$3" = "$p" ] && { echo "install ok installed"; exit 0; }; done; exit 1'
          % " ".join(installed))
    if apt:
        _stub(str(bin_), "apt-get", 'echo "$@" >> %s' % log)
    if compiler:
        _stub(str(bin_), "cc", "exit 0")
    for tool in ("bash", "grep"):  # the script's own needs, nothing else from the system
        os.symlink(subprocess.check_output(["sh", "-c", "command -v " + tool], text=True).strip(), str(bin_ / tool))
    env = {"PATH": str(bin_), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    return proc, (log.read_text() if log.exists() else "")

# the Debian packages the script checks with dpkg-query, in its order
PACKAGES = ["mesa-vulkan-drivers", "libvulkan1", "openmpi-bin", "libopenmpi-dev", "chromium"]


def test_nothing_missing_is_silent(tmp_path):
    proc, apt = _run(tmp_path, uid=1000, installed=PACKAGES)
    assert (proc.returncode, proc.stdout, proc.stderr, apt) == (0, "", "", "")


def test_not_root_stops_with_the_exact_command(tmp_path):
    proc, apt = _run(tmp_path, uid=1000, installed=PACKAGES[1:], compiler=False)
    assert proc.returncode == 1 and apt == ""
    assert "sudo apt-get install -y --no-install-recommends gcc mesa-vulkan-drivers" in proc.stderr


def test_root_installs_what_is_missing(tmp_path):
    proc, apt = _run(tmp_path, uid=0, installed=[])
    assert proc.returncode == 0, proc.stderr
    assert "update -qq" in apt
    assert "install -y -qq --no-install-recommends " + " ".join(PACKAGES) in apt


def test_without_apt_get_it_names_the_packages(tmp_path):
    proc, _ = _run(tmp_path, uid=0, installed=[], apt=False)
    assert proc.returncode == 1 and "missing system packages: " + " ".join(PACKAGES) in proc.stderr


def test_the_check_can_be_skipped():
    proc = subprocess.run(["/bin/bash", SCRIPT], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/nonexistent", "EMBER_SYSTEM_PACKAGES": "0"})
    assert proc.returncode == 0
