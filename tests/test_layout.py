"""The shape of labkit: one folder per lab, a core, a model seam that knows no lab, a course wing.

labkit's import graph is built from the source with `ast`: every `import` and `from ... import`
anywhere in a module (inside functions too, since a lazy import is still a dependency), every
`importlib.import_module("labkit....")` with a literal name, and the top package's lazy exports;
imports under `if TYPE_CHECKING:` are left out (they never run). The rules:

- no import circle, at any length;
- `labkit.core` imports only `labkit.core`; `labkit.model` only `labkit.core` and itself;
- a lab imports the core, the model seam and only the labs it builds on (lab 02 uses lab 01's
  docuctl corpus, tools and grader); no lab imports another lab's checkers;
- nothing outside the course wing imports it (`python -m labkit`'s `__main__` is its door);
- no module is longer than MAX_LINES, and the runtime's `run` fits on one screen.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

import labkit

ROOT = Path(labkit.__file__).resolve().parent
MAX_LINES = 450
RUN_LINES = 70

# What each layer may import besides itself. Layers are matched by the longest prefix.
ALLOWED: dict[str, set[str]] = {
    "labkit.core": set(),
    "labkit.model": {"labkit.core"},
    "labkit.baseline": {"labkit.core"},
    "labkit.decision_loop": {"labkit.core", "labkit.model", "labkit.baseline"},
    "labkit.refunds": {"labkit.core", "labkit.model"},
    "labkit.routing": {"labkit.core", "labkit.model"},
    "labkit.exercises": {"labkit.core", "labkit.baseline", "labkit.decision_loop", "labkit.refunds",
                         "labkit.routing"},
    "labkit.course": {"labkit", "labkit.core", "labkit.model", "labkit.baseline", "labkit.decision_loop",
                      "labkit.refunds", "labkit.routing", "labkit.exercises"},
    "labkit.__main__": {"labkit.course"},
    "labkit": {"labkit.core", "labkit.baseline"},
}
LABS = ("labkit.baseline", "labkit.decision_loop", "labkit.refunds", "labkit.routing")
NOTEBOOKS = {
    "labkit.baseline": "01_baseline_comparison.ipynb",
    "labkit.decision_loop": "02_decision_loop.ipynb",
    "labkit.refunds": "03_refund_attack_lab.ipynb",
    "labkit.routing": "04_routing_cycles.ipynb",
}


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module under `root` (a package folder), by dotted name; a package by its __init__."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return skipped


def _imported_names(module: str, path: Path) -> Iterable[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module")
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            yield node.args[0].value


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the labkit modules it imports (a name is resolved to the module that holds it)."""
    known = modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {module: set() for module in known}
    for module, path in known.items():
        for name in _imported_names(module, path):
            if name.split(".")[0] == root.name:
                target = resolve(name)
                if target and target != module:
                    graph[module].add(target)
    if root == ROOT:  # the top package's lazy exports are imports too
        graph["labkit"] |= {f"labkit.{where}" for where in labkit._EXPORTS.values()}
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer(module: str) -> str:
    """The entry of ALLOWED that `module` belongs to (the longest matching prefix)."""
    matches = [name for name in ALLOWED if module == name or module.startswith(name + ".")]
    return max(matches, key=len)


def violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Every import that crosses layers in a direction ALLOWED does not list."""
    wrong = []
    for module, targets in sorted(graph.items()):
        home = layer(module)
        for target in sorted(targets):
            there = layer(target)
            if there != home and there not in ALLOWED[home]:
                wrong.append(f"{module} imports {target}")
            elif home in LABS and there in LABS and there != home and target.endswith(".checks"):
                wrong.append(f"{module} imports another lab's checkers {target}")
    return wrong


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """labkit's import graph, built once for this module's tests (not at collection: every xdist
    worker collects every module, and building it costs ~0.35 s)."""
    return import_graph()


def test_labkit_has_no_import_circle(graph):
    assert cycles(graph) == []


def test_every_import_goes_down_the_layers(graph):
    assert violations(graph) == []


def test_the_model_seam_and_the_core_know_no_lab(graph):
    for module, targets in graph.items():
        if layer(module) in ("labkit.core", "labkit.model"):
            assert not {t for t in targets if layer(t) in (*LABS, "labkit.course")}, module


def test_the_model_seam_imports_only_labkit_core_and_itself(graph):
    seam = {m: targets for m, targets in graph.items() if layer(m) == "labkit.model"}
    assert "labkit.model.factory" in seam
    assert {(m, t) for m, targets in seam.items() for t in targets
            if layer(t) not in ("labkit.core", "labkit.model")} == set()
    # the types every backend imports import no backend; no module imports the package back
    assert {t for t in graph["labkit.model.backend"] if layer(t) == "labkit.model"} == set()
    assert [m for m, targets in seam.items() if m != "labkit.model" and "labkit.model" in targets] == []


def test_the_routing_modules_import_down_from_graph_to_scheduler_to_plan(graph):
    assert {"labkit.routing.plan", "labkit.routing.run_state"} <= graph["labkit.routing.scheduler"]
    assert "labkit.routing.scheduler" in graph["labkit.routing.graph"]
    assert not graph["labkit.routing.plan"] & {"labkit.routing.scheduler", "labkit.routing.graph"}
    assert "labkit.routing.graph" not in graph["labkit.routing.scheduler"]


def test_no_library_module_imports_a_command(graph):
    # Commands import the library (limits included: `labkit.decision_loop.trials`), never back;
    # only the CLI registers them.
    importers = [m for m, targets in graph.items()
                 if not m.startswith("labkit.course.commands") and m != "labkit.course.cli"
                 and any(t.startswith("labkit.course.commands") for t in targets)]
    assert importers == []


def test_display_imports_no_runtime_back(graph):
    # Result imports display when it renders; display must not import the runtime back.
    assert not graph["labkit.core.display"] & {"labkit.core.runtime", "labkit.core.result",
                                              "labkit.core.decisions"}


# The checks above would have failed on the layout before the house was arranged (main at
# e0491d5): these are its three circles and two of its wrong-way imports, as edges.
BEFORE = {
    "labkit.runtime": {"labkit.controllers", "labkit.display"},
    "labkit.controllers": {"labkit.runtime"},
    "labkit.display": {"labkit.runtime"},
    "labkit.model.backend": {"labkit.model.local", "labkit.model.replay"},
    "labkit.model.local": {"labkit.model.backend"},
    "labkit.model.replay": {"labkit.model.backend"},
    "labkit.orchestrator.graph": {"labkit.orchestrator.scheduler"},
    "labkit.orchestrator.scheduler": {"labkit.orchestrator.graph"},
}


def test_the_circle_finder_finds_the_old_layouts_circles():
    assert cycles(BEFORE) == [
        ["labkit.controllers", "labkit.display", "labkit.runtime"],
        ["labkit.model.backend", "labkit.model.local", "labkit.model.replay"],
        ["labkit.orchestrator.graph", "labkit.orchestrator.scheduler"],
    ]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_layer_rules_refuse_the_old_layouts_wrong_way_imports():
    assert violations({
        "labkit.model.trials": {"labkit.baseline.controllers"},  # the seam knowing lab 01
        "labkit.course.grid.spec": {"labkit.course.commands.trials"},  # course to course: fine
        "labkit.refunds.checks": {"labkit.course.classroom.merge"},  # a lab importing the course
        "labkit.core.runtime": {"labkit.baseline.controllers"},  # the core defaulting to lab 01
        "labkit.refunds.episode": {"labkit.baseline.checks"},  # another lab's checkers
    }) == [
        "labkit.core.runtime imports labkit.baseline.controllers",
        "labkit.model.trials imports labkit.baseline.controllers",
        "labkit.refunds.checks imports labkit.course.classroom.merge",
        "labkit.refunds.episode imports labkit.baseline.checks",
    ]


def test_the_graph_sees_lazy_imports_and_skips_type_checking(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
        "def f():\n    from pkg.b import thing\n    import importlib\n"
        "    importlib.import_module('pkg.d')\n")
    for name in "bcd":
        (package / f"{name}.py").write_text("thing = 1\n")
    assert import_graph(package)["pkg.a"] == {"pkg.b", "pkg.d"}


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_is_longer_than_a_chapter(module):
    lines = len(modules()[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it by concept"


def test_the_runtime_loop_fits_on_one_screen():
    from labkit.core.runtime import run

    lines, _ = inspect.getsourcelines(run)
    assert len(lines) <= RUN_LINES


@pytest.mark.parametrize("package", [*LABS, "labkit.core", "labkit.model", "labkit.course",
                                     "labkit.exercises"])
def test_every_package_says_what_it_holds(package):
    doc = importlib.import_module(package).__doc__ or ""
    assert len(doc.split()) >= 20, f"{package} needs a docstring saying what it holds"
    if package in NOTEBOOKS:
        assert NOTEBOOKS[package] in doc, f"{package}'s docstring should name its notebook"


def test_the_lab_folders_pair_with_the_notebooks():
    notebooks = {path.name for path in (ROOT.parent / "notebooks").glob("0[1-9]_*.ipynb")}
    assert set(NOTEBOOKS.values()) == notebooks


def test_importing_every_lab_the_seam_and_the_core_loads_no_course_module():
    # The graph above reads the source; this runs it: a fresh interpreter imports every module
    # below the course wing (the checkers' notebook names too) and lists what got loaded.
    below = sorted(m for m in modules() if layer(m) in (*LABS, "labkit.core", "labkit.model",
                                                          "labkit.exercises"))
    code = (f"import sys, importlib\nfor m in {below!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in sys.modules if m.startswith('labkit.')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = ast.literal_eval(loaded.stdout)
    assert "labkit.refunds.guard_table" in names and "labkit.routing.checks" in names
    assert [name for name in names if name.startswith("labkit.course")] == []


def picture(root: Path) -> str:
    """The layout in numbers: modules, import edges, circles, lines per folder, longest modules."""
    found = modules(root)
    graph = import_graph(root)
    lines: dict[str, int] = {}
    for path in found.values():
        relative = path.relative_to(root)
        folder = relative.parts[0] if len(relative.parts) > 1 else "(top)"
        lines[folder] = lines.get(folder, 0) + len(path.read_text(encoding="utf-8").splitlines())
    longest = sorted(((len(p.read_text(encoding="utf-8").splitlines()), m) for m, p in found.items()),
                     reverse=True)[:3]
    out = [f"modules {len(found)}, import edges {sum(map(len, graph.values()))}, "
           f"circles {len(cycles(graph))}, lines {sum(lines.values())}"]
    out += [f"  circle: {' <-> '.join(circle)}" for circle in cycles(graph)]
    out.append("  lines per folder: " + ", ".join(f"{k} {v}" for k, v in sorted(lines.items())))
    out.append("  longest modules: " + ", ".join(f"{m} {n}" for n, m in longest))
    return "\n".join(out)


if __name__ == "__main__":  # python tests/test_layout.py [PACKAGE_FOLDER]: this checkout's, or another's
    print(picture(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))
