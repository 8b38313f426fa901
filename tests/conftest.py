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
