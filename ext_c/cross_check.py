"""Compile-only proof that the portable kernels build for other machines (``make cross-check``).

The portable kernels (k_*.c through isa_base.c, quant.c, k_random.c and k_optim.c; not dispatch.c, which
holds the x86 dispatch and the threads) are compiled, warnings as errors, for

- aarch64 Linux (NEON vectors, the build an aarch64 wheel uses), and
- a bare-metal Cortex-M4 (thumb, hard float, freestanding C99: what a board's firmware would link),

with ``zig cc`` from PyPI's ``ziglang`` (the dev extra), and prints each object's section sizes.
Exit status 0 when every target compiled cleanly.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WARNINGS = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
TARGETS = [
    # (label, target, flags)
    ("aarch64 Linux", "aarch64-linux-gnu", ["-std=gnu99", "-O2"]),
    ("Cortex-M4 (thumb, hard float)", "thumb-freestanding-eabihf",
     ["-mcpu=cortex_m4", "-mfloat-abi=hard", "-ffreestanding", "-std=c99", "-Os"]),
]
ELF_MACHINES = {40: "ARM", 183: "AArch64"}
# the portable kernels (isa_base.c includes the k_*.c of k_all.c), ember.quant's int8 kernels, the random
# draws, the optimizers' updates
SOURCES = ("isa_base.c", "quant.c", "k_random.c", "k_optim.c")


def zig_cc():
    try:
        import ziglang  # noqa: F401
    except ImportError:
        sys.exit("cross-check: needs zig (pip install ziglang, in the dev extra)")
    return [sys.executable, "-m", "ziglang", "cc"]


def elf_sizes(path):
    """(machine, e_flags, text, data, bss) of an ELF relocatable object, from its section headers."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:4] != b"\x7fELF":
        raise ValueError("%s is not an ELF file" % path)
    is64 = blob[4] == 2
    end = "<" if blob[5] == 1 else ">"
    if is64:
        machine, = struct.unpack_from(end + "H", blob, 18)
        flags, = struct.unpack_from(end + "I", blob, 48)
        shoff, = struct.unpack_from(end + "Q", blob, 40)
        shentsize, shnum = struct.unpack_from(end + "HH", blob, 58)
    else:
        machine, = struct.unpack_from(end + "H", blob, 18)
        flags, = struct.unpack_from(end + "I", blob, 36)
        shoff, = struct.unpack_from(end + "I", blob, 32)
        shentsize, shnum = struct.unpack_from(end + "HH", blob, 46)
    text = data = bss = 0
    for i in range(shnum):
        at = shoff + i * shentsize
        if is64:
            _name, stype, sflags = struct.unpack_from(end + "IIQ", blob, at)
            size, = struct.unpack_from(end + "Q", blob, at + 32)
        else:
            _name, stype, sflags = struct.unpack_from(end + "III", blob, at)
            size, = struct.unpack_from(end + "I", blob, at + 20)
        if not sflags & 0x2:  # SHF_ALLOC: only what ends up in memory
            continue
        if stype == 8:  # SHT_NOBITS
            bss += size
        elif sflags & 0x4:  # SHF_EXECINSTR
            text += size
        elif sflags & 0x1:  # SHF_WRITE
            data += size
        else:
            text += size  # read-only data counts with the code, as size(1) does
    return machine, flags, text, data, bss


def main():
    cc = zig_cc()
    failed = 0
    out_dir = tempfile.mkdtemp(prefix="ember-cross-")
    print("%-32s %9s %7s %7s  %s" % ("target", "text", "data", "bss", "object"))
    for label, target, flags in TARGETS:
        for source in SOURCES:
            obj = os.path.join(out_dir, target + "-" + source[:-2] + ".o")
            cmd = cc + ["--target=" + target] + flags + WARNINGS + ["-I", HERE, "-c", os.path.join(HERE, source),
                                                                     "-o", obj]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0 or run.stderr.strip():
                failed += 1
                print("%-32s FAILED: %s" % (label, " ".join(cmd)))
                print(run.stdout + run.stderr)
                continue
            machine, eflags, text, data, bss = elf_sizes(obj)
            extra = ELF_MACHINES.get(machine, "machine %d" % machine)
            if machine == 40:
                extra += ", hard-float ABI" if eflags & 0x400 else ", soft-float ABI"
            print("%-32s %9d %7d %7d  %s (%s)" % (label, text, data, bss, os.path.basename(obj), extra))
    shutil.rmtree(out_dir, ignore_errors=True)
    if failed:
        sys.exit("cross-check: %d target(s) failed" % failed)
    print("cross-check: the portable kernels compile without warnings for every target")


if __name__ == "__main__":
    main()
