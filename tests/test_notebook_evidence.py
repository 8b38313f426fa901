"""Lab 02's model evidence, as committed: baselines beside every model row, an interval on every rate,
and no claim about a model in the prose that its printed interval does not support.

These read the executed notebook (nbval re-executes it and checks the tagged outputs are unchanged);
they check what a learner sees, not how labkit computes it (tests/test_baselines.py and
tests/test_intervals.py do that).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from labkit.decision_loop.tables import with_intervals

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "02_decision_loop.ipynb"
INTERVAL = r"-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]"  # "0.667 [0.458, 0.833]"
BASELINES = ("random L0", "random L3", "search, then answer L0", "search, then answer L3",
             "scripted loop", "adaptive loop")


@pytest.fixture(scope="module")
def cells():
    return nbformat.read(NOTEBOOK, as_version=4).cells


def output(cell) -> str:
    return "".join(
        out.get("text", "") if out.get("output_type") == "stream"
        else out.get("data", {}).get("text/plain", "")
        for out in cell.get("outputs", [])
    )


def table(cell) -> list[str]:
    """The rows of the DataFrame a cell displays, each on one line: pandas wraps a wide frame's
    plain text into blocks of columns (two header lines each), which are joined back row by row."""
    text = "".join(out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", [])
                   if out.get("output_type") == "execute_result")
    blocks = [block.splitlines() for block in text.strip("\n").split("\n\n")]
    assert blocks and len({len(block) for block in blocks}) == 1, "blocks of different lengths"
    header = " ".join(block[0].rstrip(" \\") for block in blocks)
    return [header] + [" ".join(line[i].rstrip(" \\") for line in blocks) for i in range(2, len(blocks[0]))]


def code_cell(cells, marker: str):
    found = [cell for cell in cells if cell.cell_type == "code" and marker in cell.source]
    assert len(found) == 1, f"{len(found)} code cells contain {marker!r}"
    return found[0]


def markdown(cells) -> list[str]:
    return [cell.source for cell in cells if cell.cell_type == "markdown"]


def plain(text: str) -> str:
    """`text` with a hyphen for the prose's minus sign and single spaces (an interval may wrap a line)."""
    return " ".join(text.replace("−", "-").split())


def test_the_model_table_has_a_baseline_row_and_an_interval_beside_every_model_row(cells):
    cell = code_cell(cells, "ladder_with_baselines(rows, baselines)")
    assert "nbval-check-output" in cell.metadata.get("tags", [])
    header, *rows = table(cell)
    lines = {line.split("  ")[0].strip(): line for line in rows}
    for name in BASELINES:
        assert name in lines, f"no {name!r} row in the model table"
    models = [line for line in rows if re.match(r"(base|example) L[0-3] T=0(\.7)? ", line)]
    assert len(models) == 16, "one row per prompt, rung and temperature"
    for line in [*models, *(lines[name] for name in BASELINES)]:
        # pass@1, final wrong and at least one paired difference, each with its interval
        assert len(re.findall(INTERVAL, line)) >= 3, line
    for column in ("pass@1", "pass^5", "final, wrong", "vs scripted", "vs best"):
        assert column in header


def test_the_ladder_table_shows_each_rate_with_its_interval(cells):
    rows = table(code_cell(cells, "ladder_table(rows, intervals=True)"))[1:]
    l3 = next(line for line in rows if line.strip().startswith("L3") and "0.667" in line)
    assert len(re.findall(INTERVAL, l3)) == 6, l3  # pass@1 at T=0, then pass^1..pass^5


def test_the_paired_comparisons_are_printed_with_their_verdicts(cells):
    shown = output(code_cell(cells, "def compare(a, b"))
    said = r"^(.+?): " + INTERVAL + r"  excludes\(0\)=(?:True|False): (.+)$"
    verdicts = dict(re.findall(said, shown, re.M))
    assert verdicts["example L3 T=0 - scripted loop"] == "not distinguishable"
    assert verdicts["example L3 T=0.7 - scripted loop"] == "not distinguishable"
    assert verdicts["example L3 T=0 - adaptive loop"] == "a difference"
    assert verdicts["example L3 T=0.7 - example L3 T=0"] == "not distinguishable"
    for line in shown.splitlines():  # the verdict follows from the printed interval, on every line
        match = re.search(r"(-?\d\.\d{3}) \[(-?\d\.\d{3}), (-?\d\.\d{3})\]  excludes\(0\)=(True|False)", line)
        if match:
            low, high = float(match[2]), float(match[3])
            assert (match[4] == "True") == (low > 0 or high < 0), line
            if line.endswith(("distinguishable", "difference")):
                assert line.endswith("a difference") == (match[4] == "True"), line


def test_the_prose_never_calls_the_model_better_or_worse_than_the_rule(cells):
    prose = plain(" ".join(markdown(cells)))
    assert prose.count("not distinguishable") >= 3  # model vs scripted, in reading, takeaways, rewrite
    for sentence in re.split(r"(?<=[.:;])\s", prose):
        if "scripted" in sentence:
            assert not re.search(r"\b(better|worse|beats|outperform)", sentence), sentence


def test_every_interval_the_prose_quotes_was_printed_by_a_cell(cells):
    printed = plain(" ".join(output(cell) for cell in cells if cell.cell_type == "code"))
    quoted = set()
    for text in markdown(cells):
        quoted |= set(re.findall(r"\+?(-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\])", plain(text)))
    assert len(quoted) >= 8
    for interval in quoted:
        assert interval in printed, f"the prose quotes {interval}, which no cell printed"


def test_safe_and_usable_are_computed_apart(cells):
    safety = output(code_cell(cells, "exact_copy(r)"))
    l3 = next(line for line in safety.splitlines() if line.startswith("L3")).split()
    assert l3 == ["L3", "144", "0", "115", "115"]  # no unread citation; every final an exact copy
    usable = output(code_cell(cells, "def first_hit(row)"))
    assert "first search hit in 20 of the 21 episodes" in usable
    assert "the same outcome as the scripted loop on 19 of 24 cases" in usable
    takeaways = next(text for text in markdown(cells) if text.startswith("## Takeaways"))
    assert "Safe is not usable" in takeaways and "not distinguishable" in takeaways


def test_the_rewrite_cases_sit_beside_the_baselines_with_the_way_to_a_bigger_model(cells):
    header, *cases = table(code_cell(cells, "corpus.rewrite_cases"))
    assert len(cases) == 6 and all(case.startswith("rewrite-") for case in cases)
    assert "expected_doc" in header and "expected_command" in header
    shown = "\n".join(table(code_cell(cells, 'baseline_rows("rewrite"')))
    for name in BASELINES:
        line = next(line for line in shown.splitlines() if line.startswith(name + " "))
        assert "0.000 [0.000, 0.000]" in line, line
    assert re.search(r"SmolLM2-135M example L3 T=0 +model +1 +0\.167 \[0\.000, 0\.500\]", shown)
    lesson = plain(" ".join(markdown(cells)))
    assert "--cases rewrite" in lesson and "--baselines" in lesson and "labkit rerun 2" in lesson


def test_the_predictions_are_recorded_like_the_other_labs(cells):
    sources = [cell.source for cell in cells]
    assert not any("compare_prediction" in source for source in sources)
    assert sum('predict("02", ' in source for source in sources) == 2


def test_with_intervals_puts_each_rate_and_its_interval_in_one_cell():
    frame = pd.DataFrame(
        {"kind": ["model", "baseline"], "pass@1": [0.6667, math.nan], "pass@1 low": [0.4583, math.nan],
         "pass@1 high": [0.8333, math.nan], "trials": [1, 5]},
        index=["a", "b"],
    )
    shown = with_intervals(frame)
    assert list(shown.columns) == ["kind", "pass@1", "trials"]
    assert list(shown["pass@1"]) == ["0.667 [0.458, 0.833]", "–"]
    assert list(frame.columns) == ["kind", "pass@1", "pass@1 low", "pass@1 high", "trials"]  # untouched
