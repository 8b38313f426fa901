"""Code the lab 04 notebook shows as labkit's is labkit's, character for character (blank lines and
indentation aside), so the two cannot drift."""

import inspect
from pathlib import Path

import nbformat
import pytest

from labkit.routing.experiments import within_limit, without_feedback
from labkit.routing.scheduler import ready_after

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "04_routing_cycles.ipynb"


def normalised(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if line.strip()]


@pytest.mark.parametrize("function", [ready_after, within_limit, without_feedback], ids=lambda f: f.__name__)
def test_the_cell_showing_labkits_function_holds_its_source(function):
    cells = [
        cell.source
        for cell in nbformat.read(NOTEBOOK, as_version=4).cells
        if cell.cell_type == "code" and cell.source.startswith(f"def {function.__name__}(")
    ]
    assert len(cells) == 1
    assert normalised(cells[0]) == normalised(inspect.getsource(function))
