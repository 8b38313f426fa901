"""Fixtures shared by the unit tests."""

import pytest

from labkit.cli import main


@pytest.fixture
def cli(capsys):
    """Run `python -m labkit ARGS` in-process; return (exit status, stdout, stderr)."""

    def invoke(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exit:
            code = exit.code
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path, monkeypatch):
    """Checkers record progress under runs/; tests keep theirs in a temporary folder."""
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path / "runs"))
