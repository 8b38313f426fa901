"""Every line the text-printing commands write fits a 120-column terminal: tables wrap their columns
into blocks and prose wraps its words (`labkit.course.commands.WIDTH`, `say`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labkit.course.commands import WIDTH

ROOT = Path(__file__).resolve().parents[2]
REWRITE = "fixtures/trials/rewrite-smollm2-example-l3-t07.jsonl"
SPOTLIGHTING = "refunds-smollm2-l2-spotlighting"  # a refunds grid whose episodes are all recorded


@pytest.mark.parametrize(
    "argv",
    [
        ["compare"],
        ["routing", "--skip-timing"],
        ["refund-lab"],
        ["evaluate", "--trials", REWRITE, "--baselines"],
        ["evaluate", "--trials", REWRITE],
        ["grid", f"fixtures/grids/{SPOTLIGHTING}.toml", "--record", "COPY"],  # resumed: runs nothing
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_every_line_fits_a_terminal(cli, monkeypatch, tmp_path, argv):
    monkeypatch.chdir(ROOT)  # the paths are relative
    (tmp_path / "copy.jsonl").write_bytes(
        (ROOT / "fixtures" / "trials" / f"{SPOTLIGHTING}.jsonl").read_bytes()
    )
    code, out, _ = cli(*[str(tmp_path / "copy.jsonl") if arg == "COPY" else arg for arg in argv])
    longest = max(out.splitlines(), key=len)
    assert code == 0 and len(longest) <= WIDTH, longest
