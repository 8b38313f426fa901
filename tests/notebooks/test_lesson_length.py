"""Every lab fits a 90-minute session: its lesson path (everything before "Going further") takes at most 75
minutes, counted honestly: prose read at 200 words a minute, code at 100 and printed output at 150 (what a
collapsed cell hides is not read), plus the minutes each build-it and exercise is given (its own code and
output included); the four labs hold at most 7,500 words of prose; no output in the lesson path is longer
than a screen."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
WORDS = {"01": 1150, "02": 2250, "03": 2020, "04": 2060}  # markdown words a lab may hold
TOTAL_WORDS, LESSON_MINUTES = 7500, 75
PER_MINUTE = {"prose": 200, "code": 100, "output": 150}  # words a learner reads in a minute
SCREEN_LINES, SCREEN_ROWS = 40, 15  # a text output's lines, a table's body rows


def notebook(lab: str) -> list[dict]:
    (path,) = NOTEBOOKS.glob(f"{lab}_*.ipynb")
    return json.loads(path.read_text())["cells"]


def words(cell: dict) -> int:
    return len("".join(cell["source"]).split()) if cell["cell_type"] == "markdown" else 0


def lesson_path(cells: list[dict]) -> list[dict]:
    """The cells before the "Going further" heading (all of them when there is none)."""
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and re.match(r"#+ Going further", "".join(cell["source"])):
            return cells[:i]
    return cells


def printed_words(cell: dict) -> int:
    """Words of a code cell's text outputs (a picture is looked at, not read)."""
    texts = [o.get("text", o.get("data", {}).get("text/plain", "")) for o in cell.get("outputs", [])]
    pictures = [o for o in cell.get("outputs", []) if any(k.startswith("image/") for k in o.get("data", {}))]
    return 0 if pictures else sum(len("".join(text).split()) for text in texts)


def minutes(cell: dict) -> float:
    """A cell's minutes on the lesson path: a build-it's or exercise's given minutes, else its reading."""
    given = cell["metadata"].get("labkit", {}).get("minutes")
    hidden = cell["metadata"].get("jupyter", {})
    if given or cell["cell_type"] != "code":
        return given or words(cell) / PER_MINUTE["prose"]
    code = 0 if hidden.get("source_hidden") else len("".join(cell["source"]).split()) / PER_MINUTE["code"]
    return code + (0 if hidden.get("outputs_hidden") else printed_words(cell) / PER_MINUTE["output"])


def is_exercise(cell: dict) -> bool:
    """A cell that hands the learner's work to a checker: `labNN.check_...(...)`."""
    return (
        cell["cell_type"] == "code"
        and re.search(r"\blab0\d\.check_\w+\(", "".join(cell["source"])) is not None
    )


def test_the_four_labs_hold_at_most_7500_words_of_prose():
    counts = {lab: sum(map(words, notebook(lab))) for lab in WORDS}
    over = {lab: (n, WORDS[lab]) for lab, n in counts.items() if n > WORDS[lab]}
    assert not over, f"markdown words over each lab's share (words, share): {over}"
    assert sum(counts.values()) <= TOTAL_WORDS


@pytest.mark.parametrize("lab", sorted(WORDS))
def test_every_exercise_is_given_its_minutes_and_the_lesson_path_fits_75(lab):
    cells = notebook(lab)
    unpriced = [
        i
        for i, c in enumerate(cells)
        if is_exercise(c) and not c["metadata"].get("labkit", {}).get("minutes")
    ]
    assert not unpriced, f"lab {lab}: cells {unpriced} call a checker but have no labkit.minutes metadata"
    taken = sum(map(minutes, lesson_path(cells)))
    assert taken <= LESSON_MINUTES, f"lab {lab}: {taken:.1f} minutes of prose, code, output and doing"


def _long_outputs(cell: dict) -> list[str]:
    found = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if "text/html" in data:
            body = "".join(data["text/html"]).split("<tbody>")[-1]
            if (rows := body.count("<tr")) > SCREEN_ROWS:
                found.append(f"a table of {rows} rows")
        else:
            text = "".join(output.get("text", data.get("text/plain", "")))
            if (lines := text.count("\n") + 1) > SCREEN_LINES:
                found.append(f"{lines} lines of text")
    return found


@pytest.mark.parametrize("lab", ["00", *sorted(WORDS)])
def test_no_output_in_the_lesson_path_is_longer_than_a_screen(lab):
    long = {
        i: found
        for i, cell in enumerate(lesson_path(notebook(lab)))
        if not cell["metadata"].get("jupyter", {}).get("outputs_hidden") and (found := _long_outputs(cell))
    }
    assert not long, (
        f"lab {lab}: cells with outputs longer than a screen (collapse them or plot them): {long}"
    )
