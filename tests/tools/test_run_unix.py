"""tests/mpy/run_unix.py: stages ember for the unix port, fixes its heap and passes exit statuses on."""
import os
import subprocess
import sys

import pytest

RUNNER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mpy", "run_unix.py")


def run(tmp_path, source, *options):
    script = tmp_path / "script.py"
    script.write_text(source)
    return subprocess.run([sys.executable, RUNNER, *options, "--script", str(script), "a", "b"],
                          capture_output=True, text=True, timeout=120)


def test_a_script_sees_ember_its_args_and_its_folder(tmp_path):
    (tmp_path / "data.txt").write_text("beside the script")
    done = run(tmp_path, "import sys, ember\n"
                         "print(sys.implementation.name, sys.argv[1:])\n"
                         "print(open('data.txt').read())\n"
                         "print(ember.tensor([1, 2]).sum().item())\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["micropython ['a', 'b']", "beside the script", "3"]


def test_writes_land_in_the_stage_not_beside_the_script(tmp_path):
    done = run(tmp_path, "open('out.txt', 'w').write('x')\n")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["script.py"]


def test_exit_status_of_the_script(tmp_path):
    assert run(tmp_path, "import sys\nsys.exit(5)\n").returncode == 5
    failed = run(tmp_path, "raise ValueError('boom')\n")
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr


def test_an_async_entry_point_is_awaited(tmp_path):
    done = run(tmp_path, "import asyncio\n"
                         "async def amain():\n"
                         "    await asyncio.sleep(0)\n"
                         "    print('awaited')\n")
    assert done.returncode == 0 and done.stdout == "awaited\n", done.stderr


def test_the_heap_is_fixed(tmp_path):
    source = ("import gc\n"
              "print((gc.mem_free() + gc.mem_alloc()) // 1024)\n"
              "try:\n"
              "    bytearray(1 << 20)\n"
              "except MemoryError:\n"
              "    print('MemoryError')\n")
    done = run(tmp_path, source, "--heapsize", "256k")
    assert done.returncode == 0, done.stderr
    size, outcome = done.stdout.split()
    assert 240 <= int(size) <= 256 and outcome == "MemoryError"


@pytest.mark.parametrize("options", [("--heapsize", "12x"), ("--micropython", "/no/such/micropython")])
def test_runner_problems_exit_2(tmp_path, options):
    done = run(tmp_path, "print('never')\n", *options)
    assert done.returncode == 2 and done.stderr.startswith("run_unix.py: ")


def test_a_missing_script_exits_2():
    done = subprocess.run([sys.executable, RUNNER, "--script", "/no/such/file.py"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no such script" in done.stderr
