"""Every number the prose of a lab quotes is printed by a cell nbval checks in that notebook, so the
prose cannot drift from what it computes; so is every interval the instructor guide quotes for it.

A quoted number is a decimal (a rate, a p value, an amount: compared by value, so "$64.50"
is the table's 64.5), an interval "[low, high]" with the estimate before it if there is one, or
a count "N of M". Numbers in code spans, link targets and an exercise's statement (a task the
learner is set, not a result) are not quotes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LABS = sorted(NOTEBOOKS.glob("0[0-9]_*.ipynb"))
NUMBER = r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?"  # 0.667, -0.042, 38,400
DECIMAL = re.compile(r"(?<![\w.,\-+])[-+]?\d+(?:,\d{3})*\.\d+(?![\w.])")
INTERVAL = re.compile(rf"(?:({NUMBER})\s+)?\[({NUMBER}), ({NUMBER})\]")
COUNT = re.compile(rf"(?<![\w.,])({NUMBER}) of (?:the )?({NUMBER})(?![\w.])")
EXERCISE = re.compile(r"\s*(#+ Exercises|\*\*Exercise)")  # a task the learner is set, not a result


def plain(text: str) -> str:
    """`text` with one space between words, the prose's minus sign and escaped dollar plain."""
    return " ".join(text.replace("−", "-").replace("\\$", "$").split())


def prose(source: str) -> str:
    """A markdown cell's words without its code spans and link targets."""
    return plain(re.sub(r"`[^`]*`", " ", re.sub(r"\]\([^)]*\)", "]", source)))


def value(number: str) -> float:
    return float(number.replace(",", ""))


def output(cell: dict) -> str:
    texts = [out.get("text") or out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", [])]
    return "\n".join("".join(text) for text in texts)


def checked(cells: list[dict]) -> list[dict]:
    return [c for c in cells if "nbval-check-output" in c["metadata"].get("tags", [])]


def quotes(text: str) -> dict[str, set]:
    """The decimals, intervals and counts `text` quotes, by value."""
    return {
        "decimal": {value(n) for n in DECIMAL.findall(text)},
        "interval": {tuple(value(n) for n in m if n) for m in INTERVAL.findall(text)},
        "count": {tuple(map(value, m)) for m in COUNT.findall(text)},
    }


def load(path: Path) -> list[dict]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [{**cell, "source": "".join(cell["source"])} for cell in cells]


def shown(cells: list[dict]) -> dict[str, set]:
    """What the cells nbval checks print (counts: any two numbers they print)."""
    text = plain(" ".join(output(cell) for cell in checked(cells)))
    found = quotes(text)
    found["decimal"] |= {value(n) for n in re.findall(NUMBER, text)}
    found["interval"] |= {interval[1:] for interval in found["interval"] if len(interval) == 3}
    return found


@pytest.mark.parametrize("path", LABS, ids=[path.stem for path in LABS])
def test_every_number_the_prose_quotes_is_printed_by_a_checked_cell(path):
    seen = shown(cells := load(path))
    numbers = seen["decimal"]
    missing = []
    for cell in cells:
        if cell["cell_type"] == "markdown" and not EXERCISE.match(cell["source"]):
            said = quotes(prose(cell["source"]))
            missing += [f"{n:g}" for n in said["decimal"] - numbers]
            missing += [str(i) for i in said["interval"] - seen["interval"]]
            missing += [f"{a:g} of {b:g}" for a, b in said["count"] if not {a, b} <= numbers]
    assert not missing, f"{path.name}'s prose quotes what no checked cell prints: {sorted(set(missing))}"


def rows(text: str) -> list[str]:
    """The lines of `text`, a table pandas wrapped into blocks of columns joined back row by row
    (each later block's copy of the index cut off)."""
    blocks = [block.splitlines() for block in text.split("\n\n")]
    if len(blocks) == 1 or len({len(block) for block in blocks}) > 1:
        return text.splitlines()
    lines = blocks[0]
    for block in blocks[1:]:
        cut = [len(os.path.commonprefix([a, b])) for a, b in zip(blocks[0], block, strict=True)]
        lines = [a + " " + b[b.rfind(" ", 0, n + 1) + 1 :] for a, b, n in zip(lines, block, cut, strict=True)]
    return lines


def test_every_printed_verdict_follows_from_its_interval_and_p():
    """The series' rule on every printed row: "a difference" exactly where the interval excludes 0
    and the (Holm-adjusted, where printed) p is below 0.05."""
    verdict = re.compile(rf"\[({NUMBER}), ({NUMBER})\][^\[]*?(\d\.\d+\s+)?(a difference|not distinguishable)")
    tables = [
        "".join(out.get("text") or out.get("data", {}).get("text/plain", "")).replace("−", "-")
        for path in LABS
        for cell in checked(load(path))
        for out in cell.get("outputs", [])  # each output its own table: a printed line above one is apart
    ]
    found = [m.groups() for table in tables for line in rows(table) for m in verdict.finditer(line)]
    from labkit.core.questions import questions

    # every declared comparison prints its verdict once; exploratory rows carry none
    assert len(found) == sum(len(q.comparisons) for q in questions().values())
    for low, high, p, said in found:
        excludes = value(low) > 0 or value(high) < 0
        assert (said == "a difference") == (excludes and (not p or float(p) < 0.05)), (low, high, p, said)


def test_every_interval_the_guide_quotes_for_a_lab_is_printed_by_that_lab():
    guide = plain((NOTEBOOKS / "INSTRUCTOR.md").read_text(encoding="utf-8"))
    sections = dict(re.findall(r"## Lab (\d\d) (.*?)(?= ## |$)", guide))
    said = {path.name: quotes(prose(sections.get(path.name[:2], "")))["interval"] for path in LABS}
    assert len(sections) == 4 and sum(map(len, said.values())) > 15  # the rule is not empty
    missing = {name: sorted(said[name] - shown(load(NOTEBOOKS / name))["interval"]) for name in said}
    assert not any(missing.values()), missing
