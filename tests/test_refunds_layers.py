"""Lab 03's package stands alone: nothing under labkit/refunds imports the course wing.

`labkit.course` (CLI, classroom, grading) imports the labs; a lab that imported it back
would tie every notebook kernel to the classroom's code (the guard table moved from the
classroom into `labkit.refunds.guard_table` for that reason). Checked twice: statically,
every import in the source, lazy ones inside functions included; and at run time, in a
fresh interpreter that imports every module of the package.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import labkit.refunds

PACKAGE = Path(labkit.refunds.__file__).parent
FORBIDDEN = "labkit.course"


def _names(node: ast.AST) -> list[str]:
    """The modules one node imports: `import x`, `from x import y` (x.y too), import_module("x")."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        called = getattr(node.func, "attr", getattr(node.func, "id", None))
        if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def course_imports(source: str) -> list[str]:
    """Every module name in `source` that is labkit.course or under it, wherever it is imported."""
    return [name for node in ast.walk(ast.parse(source)) for name in _names(node)
            if name == FORBIDDEN or name.startswith(FORBIDDEN + ".")]


def test_the_scan_finds_every_way_of_importing_the_course():
    source = (
        "import labkit.course.cli\n"
        "def f():\n    from labkit.course.classroom import submission\n"
        "def g():\n    from labkit import course\n"
        "def h():\n    import importlib\n    importlib.import_module('labkit.course.grid')\n"
        "import labkit.coursework, labkit.core\n"
    )
    assert course_imports(source) == [
        "labkit.course.cli", "labkit.course.classroom", "labkit.course.classroom.submission",
        "labkit.course", "labkit.course.grid"]


def test_no_module_of_the_refund_lab_imports_the_course():
    files = sorted(PACKAGE.glob("*.py"))
    assert {f.stem for f in files} >= {"rules", "checks", "guard_table", "metrics", "episode"}
    found = {f.name: course_imports(f.read_text(encoding="utf-8")) for f in files}
    assert {name: imports for name, imports in found.items() if imports} == {}


def test_importing_the_whole_refund_lab_loads_no_course_module():
    modules = sorted(f"labkit.refunds.{f.stem}" for f in PACKAGE.glob("*.py") if f.stem != "__init__")
    code = (f"import sys, importlib\nfor m in {modules!r}: importlib.import_module(m)\n"
            "import labkit.exercises.lab03\n"
            "print(sorted(m for m in sys.modules if m.startswith('labkit.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "labkit.refunds.checks" in loaded and "labkit.refunds.guard_table" in loaded
    assert FORBIDDEN not in loaded
