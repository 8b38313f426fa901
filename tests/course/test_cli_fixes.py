"""The CLI's small promises: `--version`, a folder given as a trials file, `make student` run again, and
`labkit grid --record runs/x.jsonl` on a fresh clone (its folder created, and only for valid input)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from labkit.course.student import main as student

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
GRID = 'models = ["replay"]\nprompts = ["example"]\nrungs = ["L2"]\ntemperatures = [0.7]\nk = 1\ncases = '


def test_version_prints_labkits_version_from_its_package_metadata(cli):
    assert cli("--version") == (0, f"labkit {importlib.metadata.version('labkit')}\n", "")


def test_a_folder_given_as_trials_file_is_one_line_saying_it_is_a_folder(cli, tmp_path):
    code, out, err = cli("evaluate", "--trials", str(tmp_path))
    assert (code, out) == (2, "") and err.count("\n") == 1 and "not found" not in err
    assert f"argument --trials: {tmp_path} is a folder, not a trials file" in err


def test_make_student_again_says_the_copies_are_there_and_kept(tmp_path, capsys):
    assert student([str(NOTEBOOKS), str(tmp_path)]) == student([str(NOTEBOOKS), str(tmp_path)]) == 0
    out = capsys.readouterr().out.split("\n", 1)[1]  # the second run's
    assert out.startswith(f"the copies are already in {tmp_path}/") and ": \n" not in out
    assert out.splitlines()[1].endswith(", ".join(sorted(p.name for p in NOTEBOOKS.glob("0*.ipynb"))))


def test_grid_creates_the_folder_of_its_record_for_valid_input_only(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("ok.toml").write_text(GRID + '["typo-rollback"]')
    Path("bad.toml").write_text(GRID.replace("example", "nope") + '"adaptive"')
    Path("miss.toml").write_text(GRID.replace("0.7", "0.3") + '"adaptive"')  # never recorded at T=0.3
    Path("a-file").touch()
    for spec, record in [
        ("bad.toml", "runs/x.jsonl"),
        ("miss.toml", "runs/x.jsonl"),
        ("ok.toml", "a-file/x"),
    ]:
        code, out, err = cli("grid", spec, "--record", record)
        assert (code, out) == (2, "") and err.splitlines()[-1].startswith("labkit grid: error: "), err
    assert not Path("runs").exists()
    code, out, err = cli("grid", "ok.toml", "--record", "runs/deep/x.jsonl")
    assert code == 0 and Path("runs/deep/x.jsonl").is_file() and "replay example L2" in out, err


def test_no_pandas_placeholder_in_evaluate_or_refund_lab(cli):
    """A run with no success has no tokens per success (n/a); only the model asked for: no empty scripted
    table; by attack: a rate with nothing to count is n/a."""
    trials = str(Path(__file__).resolve().parents[2] / "fixtures/trials/docuctl-smollm2-base-l0-t0.jsonl")
    for argv in (
        ["evaluate", "--trials", trials],
        ["refund-lab", "--policy", "model"],
        ["refund-lab", "--by-attack"],
    ):
        code, out, _ = cli(*argv)
        words = set(out.split())
        assert code == 0 and not words & {"None", "NaN", "Empty"} and "Columns: []" not in out, argv
    assert "n/a" in out  # the by-attack rows' benign utility
