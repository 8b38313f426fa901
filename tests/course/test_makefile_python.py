"""`make`'s Python check, run for real on a copy of the Makefile with stand-in interpreters (shell scripts
that answer what make asks of a python): an old Python fails up front in one line, a .venv of another
Python is replaced, and a .venv of this one is kept, nothing reinstalled. Offline, a second or so."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE = """#!/bin/sh
# A stand-in python {version}: answers make's questions, records what else it is asked in calls.log.
case "$1" in
  -c) case "$2" in
        *realpath*) if [ {version} = 3.10 ]; then echo "old 3.10 {where}"
                    else echo "ok {version} {where}"; fi ;;
        *) echo "{version}.4" ;;
      esac ;;
  -m) if [ "$2" = venv ]; then
        mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && echo "home = x" > "$3/pyvenv.cfg"
      else echo "$*" >> calls.log; fi ;;
esac
"""

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@pytest.fixture
def make(tmp_path):
    """`make -s ARGS` in a copy of the Makefile beside ./py3.10 and ./py3.11: status, out, err, calls."""
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    for version, where in (("3.10", "/opt/old/bin/python3.10"), ("3.11", "/opt/new/bin/python3.11")):
        (tmp_path / f"py{version}").write_text(FAKE.format(version=version, where=where))
        (tmp_path / f"py{version}").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}

    def invoke(*args: str) -> tuple[int, str, str, list[str]]:
        done = subprocess.run(["make", "-s", *args], cwd=tmp_path, capture_output=True, text=True, env=env)
        log = tmp_path / "calls.log"
        return done.returncode, done.stdout, done.stderr, log.read_text().splitlines() if log.exists() else []

    return invoke


@pytest.mark.parametrize("target", ["lab", "test", "lint"])
@pytest.mark.parametrize(
    ("python", "line"),
    [
        (
            "./py3.10",
            "make: PYTHON=./py3.10 is Python 3.10.4 (/opt/old/bin/python3.10); labkit needs Python 3.11+",
        ),
        ("./no-python", "make: cannot run PYTHON=./no-python: labkit needs Python 3.11+"),
    ],
)
def test_a_python_older_than_3_11_fails_up_front_in_one_line_saying_how_to_choose_another(
    make, tmp_path, target, python, line
):
    code, out, err, calls = make(target, f"PYTHON={python}")
    assert code != 0 and out == "" and calls == [] and not (tmp_path / ".venv").exists()
    assert err.startswith(line) and "make lab PYTHON=python3.11\n" in err  # then make's `*** ... Error 1`


@pytest.mark.parametrize("old", ["a 3.10 venv", "its interpreter gone", "made before the stamp"])
def test_a_venv_of_another_python_is_replaced_and_a_venv_of_this_one_kept(make, tmp_path, old):
    venv = tmp_path / ".venv"
    if old == "made before the stamp":  # by this Python: kept, nothing reinstalled
        subprocess.run(["./py3.11", "-m", "venv", ".venv"], cwd=tmp_path, check=True)
    else:
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").symlink_to(tmp_path / ("py3.10" if "3.10" in old else "removed"))
    (venv / ".installed-lab").touch()  # its packages, installed
    code, out, _, calls = make("install", "PYTHON=./py3.11")
    assert code == 0 and (venv / ".python").read_text() == "ok 3.11 /opt/new/bin/python3.11\n"
    if old != "made before the stamp":  # pip's upgrade, the lab's packages, JupyterLab's settings
        assert "make: .venv is not a venv of ./py3.11 (3.11 /opt/new/bin/python3.11): replacing it" in out
        assert [c.split()[1] for c in calls] == ["pip", "pip", "labkit.course.jupyter_settings"]
    else:
        assert (out, calls) == ("", [])
    (venv / "mine").touch()
    assert make("install", "PYTHON=./py3.11") == (0, "", "", calls) and (venv / "mine").exists()


def test_with_a_wheelhouse_every_install_reads_it_and_no_index(make, tmp_path):
    (tmp_path / "wheelhouse").mkdir()
    code, _, _, calls = make("install", "PYTHON=./py3.11")
    pip = [call for call in calls if call.split()[1] == "pip"]
    assert code == 0 and len(pip) == 2 and all("--no-index --find-links wheelhouse" in call for call in pip)
