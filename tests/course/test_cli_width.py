"""Every line the text-printing commands write fits a 120-column terminal: tables wrap their columns
into blocks and prose wraps its words (`labkit.course.commands.WIDTH`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.course.commands import WIDTH, say

REWRITE = "fixtures/trials/rewrite-smollm2-example-l3-t07.jsonl"


@pytest.mark.parametrize(
    "argv",
    [
        ["compare"],
        ["routing", "--skip-timing"],
        ["refund-lab"],
        ["evaluate", "--trials", REWRITE, "--baselines"],
        ["evaluate", "--trials", REWRITE],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_every_line_fits_a_terminal(cli, monkeypatch, argv):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the recording path is relative
    code, out, _ = cli(*argv)
    longest = max(out.splitlines(), key=len)
    assert code == 0 and len(longest) <= WIDTH, longest


def test_say_wraps_under_the_lines_own_indent(capsys):
    say("   " + "word " * 40, "  ")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1 and all(len(line) <= WIDTH for line in lines)
    assert lines[0].startswith("   word") and lines[1].startswith("     word")
