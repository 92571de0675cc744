"""cffi build script for ``ember._ckernels`` (API mode, out of line).

``setup.py`` names ``ext_c/build_ckernels.py:ffibuilder`` in ``cffi_modules``; ``python
ext_c/build_ckernels.py`` builds the module in place, into ``core_pure/`` (what ``make .venv``
does for the editable install).

On x86-64 the portable kernels are compiled three times (isa_base.c, isa_avx2.c, isa_avx512.c:
baseline SSE2, AVX2+FMA, AVX-512), each under its own symbol prefix, and dispatch.c picks one at
import from what the CPU reports. Elsewhere (aarch64: NEON is baseline) only the baseline build.
"""
import os
import sys
import sysconfig

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))


def _read(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


def _path(name, absolute):
    # setuptools wants source paths relative to the directory it runs in (the project root);
    # FFI.compile runs in a temporary directory and needs absolute ones
    path = os.path.join(HERE, name)
    return os.path.normpath(path) if absolute else os.path.relpath(path)


def _clang():
    """Whether the C compiler is clang (macOS's cc and gcc are; so is ``zig cc``)."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or ""
    return sys.platform == "darwin" or "clang" in cc or "zig" in cc


def _target_machine():
    """The machine the module is built for: the host's, or a cross build's (``_PYTHON_HOST_PLATFORM``
    such as ``linux-aarch64``, which sysconfig honours and the wheel's tag follows)."""
    return sysconfig.get_platform().rsplit("-", 1)[-1].lower()


def _options():
    machine = _target_machine()
    msvc = sys.platform == "win32"
    x86_64 = machine in ("x86_64", "amd64") and not msvc
    sources = ["dispatch.c", "isa_base.c", "quant.c", "k_random.c", "k_optim.c", "plan.c", "wgpu_encode.c"]
    macros = []
    if x86_64:
        sources += ["isa_avx2.c", "isa_avx512.c"]
        macros += [("EMB_HAVE_AVX2", "1"), ("EMB_HAVE_AVX512", "1")]
    if msvc:
        cflags, ldflags, libs = ["/O2"], [], []
    else:
        # These come after the flags Python was built with, so they win: -fno-wrapv undoes the
        # inherited -fwrapv (it cost a third of the matmul speed); GNU C for vector types and
        # fp-contract=fast so FMA is used where the ISA has it (clang's plain "fast" would ignore
        # the pragma that keeps k_optim.c uncontracted; GCC honours its own in any mode).
        contract = "-ffp-contract=fast-honor-pragmas" if _clang() else "-ffp-contract=fast"
        cflags = ["-O3", "-g0", "-std=gnu99", "-fno-wrapv", "-fno-math-errno", "-fno-trapping-math",
                  contract, "-pthread"]
        ldflags = ["-pthread"]
        libs = ["m"]
    return sources, macros, cflags, ldflags, libs


def make_builder(absolute=False):
    sources, macros, cflags, ldflags, libs = _options()
    builder = FFI()
    builder.cdef(_read("ops.h") + _read("api.h") + _read("quant.h"))
    builder.set_source(
        "ember._ckernels",
        '#include "kernels.h"\n#include "api.h"\n#include "quant.h"\n',
        sources=[_path(s, absolute) for s in sources],
        include_dirs=[_path(".", absolute)],
        define_macros=macros,
        extra_compile_args=cflags,
        extra_link_args=ldflags,
        libraries=libs,
        py_limited_api=True,
    )
    return builder


ffibuilder = make_builder()


def build_inplace():
    """Compile into core_pure/ (the ``ember`` package of an editable install); returns the path."""
    import shutil
    import tempfile

    root = os.path.dirname(HERE)
    tmp = tempfile.mkdtemp(prefix="ember-ckernels-")
    try:
        built = make_builder(absolute=True).compile(tmpdir=tmp, verbose=False)
        target = os.path.join(root, "core_pure", os.path.basename(built))
        for old in os.listdir(os.path.join(root, "core_pure")):
            if old.startswith("_ckernels") and old.endswith((".so", ".pyd")):
                os.remove(os.path.join(root, "core_pure", old))
        shutil.copy2(built, target)
        return target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print("built", build_inplace())
