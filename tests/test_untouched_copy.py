"""A fresh student copy, run top to bottom and submitted untouched, is no work done.

Every build-it cell ships a starting point (a function with a `...` line) and every exercise
cell a `None` or `...` answer. Run as shipped, no checker records an attempt, so `labkit
submit` has nothing to hand in: no exercise counts as attempted and no guard or attack can
reach the class round's leaderboards.
"""

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from labkit.course.student import strip

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# Lab 02 runs this way in tests/test_rerun.py (a replay rerun is a fresh copy executed), which
# checks the same; running it twice would cost the suite 7 s.
LABS = {"1": "01_baseline_comparison", "3": "03_refund_attack_lab", "4": "04_routing_cycles"}


@pytest.mark.parametrize("lab", sorted(LABS))
def test_an_untouched_student_copy_records_no_attempt_and_submits_nothing(lab, tmp_path, monkeypatch, cli):
    runs = tmp_path / "runs"
    monkeypatch.setenv("LABKIT_RUNS", str(runs))
    folder = tmp_path / "student"
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns("solutions", "*.md"))
    path = folder / f"{LABS[lab]}.ipynb"
    notebook = nbformat.reads(nbformat.writes(nbformat.read(path, as_version=4)), as_version=4)
    strip(notebook)
    client = NotebookClient(notebook, kernel_name="python3", timeout=120,
                            resources={"metadata": {"path": str(folder)}})
    client.km_kwargs = {"env": {**os.environ, "LABKIT_RUNS": str(runs)}}  # noqa: not a secret
    client.execute()
    errors = [output for cell in notebook.cells for output in cell.get("outputs", [])
              if output.get("output_type") == "error"]
    assert errors == []
    progress = runs / "progress" / f"lab0{lab}.json"
    assert not progress.exists(), progress.read_text()
    code, out, err = cli("submit", lab, "--name", "untouched", "-o", str(tmp_path / "s.json"))
    assert code == 2 and out == "" and f"no checker of lab 0{lab} has run yet" in err
