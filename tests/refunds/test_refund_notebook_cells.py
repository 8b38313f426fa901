"""Lab 03's cells that show labkit's code hold it word for word: the refund tool's checks, in
order, and the sum of a matrix row (whitespace aside), so the cell and the library cannot drift."""

import ast
import inspect
from pathlib import Path

import nbformat
import pytest

from labkit.refunds import metrics, tools

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "03_refund_attack_lab.ipynb"


def defined_in_a_cell(name):
    for cell in nbformat.read(NOTEBOOK, as_version=4).cells:
        if cell.cell_type == "code":
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return ast.get_source_segment(cell.source, node)
    raise AssertionError(f"no cell of lab 03 defines {name}")


@pytest.mark.parametrize("function", [tools.first_refusal, tools.refund, metrics.matrix_row])
def test_the_cell_holds_labkits_own_code(function):
    shown = defined_in_a_cell(function.__name__)
    assert " ".join(shown.split()) == " ".join(inspect.getsource(function).split())
