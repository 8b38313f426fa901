"""One comparison for a notebook cell that shows labkit's own code: their syntax trees.

`ast.dump` sees indentation (which block a statement belongs to), order and every statement, so a
`return` moved into a loop or a `raise` dedented out of its `if` is a difference; comments and blank
lines are not part of the tree, so a cell may add a comment line for the learner.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def tree(source: str) -> str:
    """The syntax tree of `source` (dedented first, so a method reads as a function), as text."""
    return ast.dump(ast.parse(textwrap.dedent(source)))


def shown_in(notebook: str, name: str) -> str:
    """The source of the one top-level function `name` a code cell of `notebook` defines.

    Fails (AssertionError) when no cell or more than one defines it: the test names the cell."""
    found = []
    for cell in nbformat.read(NOTEBOOKS / notebook, as_version=4).cells:
        if cell.cell_type == "code":
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                    found.append(ast.get_source_segment(cell.source, node))
    assert len(found) == 1, f"{len(found)} cells of {notebook} define {name}; one should"
    return found[0]


def same_tree(notebook: str, function: Callable) -> tuple[str, str]:
    """The syntax trees of the cell that shows `function` and of labkit's own source, in that order."""
    return tree(shown_in(notebook, function.__name__)), tree(inspect.getsource(function))
