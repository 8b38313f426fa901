"""Lab 02's notebook: every knob a learner turns leaves the later cells working, and what the
notebook shows fits on screen (no line cut mid-word, rows in rung order).

The sweep runs the code cells from the top through the last cell a knob reaches, once per row
of SWEEP (each turns every knob at once: the step timeout above the slow policy's sleep, every
knob at its low end, every one at its high end), in one kernel; the defaults are nbval's run.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import nbformat
import pytest

nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "02_decision_loop.ipynb"
LAST = "under_limits(MAX_TURNS, MAX_TOOLS)"  # the last cell a knob reaches
WIDTH = 110

LIMITS = "MAX_TURNS, MAX_TOOLS"
# One run per row: every knob at a plausible value, low and high, at once. Where the slow decision
# must come in time (the first row), it has 0.9 s to spare, so a busy machine's late wake-up is no miss.
SWEEP = [
    {"STEP_TIMEOUT": 1.0, "SLOW_S": 0.1, "DEADLINE": 1.0, "BUDGET_TOKENS": 1000, LIMITS: (2, 2)},
    {"STEP_TIMEOUT": 0.01, "SLOW_S": 0.05, "DEADLINE": 0.01, "BUDGET_TOKENS": 100, LIMITS: (1, 0)},
    {"STEP_TIMEOUT": 0.25, "SLOW_S": 0.3, "DEADLINE": 0.3, "BUDGET_TOKENS": 10**6, LIMITS: (8, 6)},
]


def _cells() -> tuple:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    return notebook, notebook.cells


def _text(cell) -> str:
    return "".join(
        out.get("text", "")
        if out.get("output_type") == "stream"
        else out.get("data", {}).get("text/plain", "")
        for out in cell.get("outputs", [])
    )


def _with(knobs: dict) -> list:
    """The code cells from the top through the last cell a knob reaches, every knob set to `knobs`."""
    _, cells = _cells()
    code = [cell for cell in cells if cell.cell_type == "code"]
    end = next(i for i, cell in enumerate(code) if LAST in cell.source)
    code = code[: end + 1]
    for name, value in knobs.items():
        pattern = re.compile(rf"^{re.escape(name)} = [^#\n]*?(?=\s*(#|$))", re.M)
        owners = [cell for cell in code if pattern.search(cell.source)]
        assert len(owners) == 1, f"the knob {name} is set in {len(owners)} cells, not one"
        owners[0].source = pattern.sub(f"{name} = {value!r}", owners[0].source, count=1)
    return code


@functools.cache
def _swept() -> tuple[list, ...]:
    """Every sweep's cells, run one after the other in one kernel (each run starts from the top,
    imports included, so it sees only its own knobs): one kernel start instead of three."""
    notebook, _ = _cells()
    runs = [_with(knobs) for knobs in SWEEP]
    notebook.cells = [cell for run in runs for cell in run]
    client = nbclient.NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    return tuple(runs)


@pytest.mark.parametrize(
    "index", range(len(SWEEP)), ids=[",".join(f"{v}" for v in knobs.values()) for knobs in SWEEP]
)
def test_every_knob_over_its_plausible_values_leaves_the_later_cells_working(index):
    knobs, code = SWEEP[index], _swept()[index]
    side_by_side = next(cell for cell in code if "changed = [name for name in ten_stops.index" in cell.source)
    shown = _text(side_by_side)
    # the ten-stops table still shows, and says which episode a knob changed rather than stopping
    assert "aborted" in shown and "Traceback" not in shown
    if knobs["STEP_TIMEOUT"] > knobs["SLOW_S"]:
        assert "results['step_timeout'] ended" in shown
    if knobs["BUDGET_TOKENS"] >= 960:  # three decisions of 320 tokens fit: the scripted loop finishes
        assert "results['budget'] ended final" in shown
    limits = next(cell for cell in code if LAST in cell.source)
    assert "cases the adaptive loop passed" in _text(limits)


# -- legibility -------------------------------------------------------------------------------------


def test_the_prompt_and_schema_cells_print_no_line_past_the_output_width():
    _, cells = _cells()
    for marker in ("print(wrapped(json.dumps(policy.schema", "policy.messages(task, [])"):
        cell = next(cell for cell in cells if marker in cell.source)
        lines = _text(cell).splitlines()
        assert lines and all(len(line) <= WIDTH for line in lines), max(lines, key=len)


def test_no_cell_above_an_exercise_answers_it():
    _, cells = _cells()
    sources = [cell.source for cell in cells]
    exercise_2 = next(i for i, source in enumerate(sources) if "lab02.check_pass_hat_k(" in source)
    assert not any("C(c,k)" in source or "math.comb" in source for source in sources[:exercise_2])
    labkits = next(cell for cell in cells if 'sampled[f"pass^{k}"]' in cell.source)
    assert labkits.metadata.get("jupyter", {}).get("source_hidden") is True
    build_it = next(source for source in sources if "lab02.check_run(my_run)" in source)
    assert "tool.call(**{" not in build_it  # step 4 is said in words, not given as code
    exercise_4 = next(i for i, source in enumerate(sources) if "lab02.check_missing_rule(" in source)
    assert "...," in sources[exercise_4]  # it asks the figure, which no table shows
