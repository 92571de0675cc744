"""Debian packages a wheel step needs: installed with apt-get when root, else the exact command to run.

``require(["qemu-user-static"])`` returns at once when every package is installed; as root it runs
``apt-get update`` once and installs the missing ones; otherwise it exits naming the command.
"""
import os
import subprocess
import sys


def _missing(packages):
    missing = []
    for name in packages:
        run = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True)
        if "install ok installed" not in run.stdout:
            missing.append(name)
    return missing


def _as_root(commands, why):
    """Run each command as root, or exit with the commands a root shell should run."""
    if os.geteuid() != 0:
        text = " && ".join("sudo " + " ".join(c) for c in commands)
        sys.exit("%s needs, as root:\n  %s\nthen run this again." % (why, text))
    for command in commands:
        print("+ " + " ".join(command), flush=True)
        subprocess.run(command, check=True)


def require(packages, why):
    """Make sure the Debian packages are installed (why: what needs them, for the message)."""
    if not os.path.exists("/usr/bin/dpkg-query"):
        sys.exit("%s needs the Debian packages %s (this is not a Debian-like system)" % (why, " ".join(packages)))
    missing = _missing(packages)
    if missing:
        _as_root([["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends"] + missing], why)


def require_architecture(arch, why):
    """Let apt-get see the packages of a foreign architecture (dpkg --add-architecture)."""
    foreign = subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True, text=True,
                             check=True).stdout.split()
    if arch not in foreign:
        _as_root([["dpkg", "--add-architecture", arch], ["apt-get", "update"]], why)
