"""Package-wide rules of labkit: one meaning per public name, imports down the layers and no circle,
the statement budget, no profiling hook, and comments a reader without the repository's history can follow.

The import graph is read with `ast`: every import anywhere in a module (a lazy one is still a
dependency), `import_module` with a literal name and the top package's lazy exports, but not the
imports under `if TYPE_CHECKING:` (they never run)."""

from __future__ import annotations

import ast
import functools
import graphlib
import importlib
import io
import json
import re
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

import labkit

ROOT = Path(labkit.__file__).resolve().parent
REPO = ROOT.parent
# Growth is counted in statements (`ast.stmt` nodes), never in lines: docstrings and comments are free,
# and packing code onto fewer lines saves nothing. labkit had 7,609 and tests 5,516 when this budget
# replaced a line budget. tests/ was allowed 5% beyond that (5,800) and was raised to 6,000 for the
# round that added the under-load (tests/hangs.py), exact sign-flip, Makefile and shown-code tests, and
# to 6,100 for the one that added the coverage simulation, the declared questions and the drawn
# random baseline's tests (tests/core/test_coverage.py, test_questions.py, refunds/test_random_baseline.py),
# and to 6,150 for the round that holds fastjsonschema to never accepting what jsonschema refuses, on
# every shipped file mutated (tests/core/test_fixture_files.py): labkit.core.fixtures trusts its "valid".
# labkit was raised to 8,060 and tests to 6,170 for the embedded model's grammar filter, which asks the
# grammar about the sampler's candidates only (labkit/model/grammar_filter.py), and its live test against
# llama.cpp's own grammar sampler at several temperatures; tests to 6,180 for the room's waiting (a busy
# llama_cpp.server's live test: it answers the probe while it generates). labkit to 8,115 and tests
# to 6,230 for the layout at 1366 px: short table cells that never break (labkit/core/cells.py), lab
# 03's chart placing each label clear of the error bars, and their tests (the browser's layout test,
# the chart's). Folding the duplicates found in review (three "trials file not found" checks, the CLI's
# own name and range checks) won labkit's back; tests to 6,240 for the runtime's refusal of a usage report
# that is not a count (a learner's policy reporting NaN, 10**400 or -45 must still end with a stop reason);
# labkit to 8,125 and tests to 6,250 for the progress file's hand-edited entries (labkit.core.verdicts:
# an entry that is a list or a count that is text starts again, where it broke every checker of the lab);
# labkit to 8,140 and tests to 6,275 for lab 03's line when the model server does not answer (its rows
# were shown as the model's) and the CLI's run − run comparisons a question declares (lab02-ladder's
# first row had a verdict in notebook 02 only); labkit to 8,145 and tests to 6,290 for the held-out round's
# fixes (a guard reading only the latest refund, router feedback in other words, a tool error's hint) and
# CLI tables without pandas' placeholders (n/a for None and NaN in refund-lab, evaluate and class);
# labkit to 8,160 and tests to 6,320 for a second held-out round (a guard refunding to any card its owner
# table does not know, router feedback saying "allowed"/"maximum length", a learner's sys.exit() as a
# verdict in every checker), a grid spec's `k = 1.0` refused, and `labkit rerun` asking the model server
# before any cell runs (it stopped at the lab's first model cell); labkit to 8,165 and tests to 6,330 for
# lab 03's retry checker naming a retry of another refund (it said "did not retry"); tests to 6,340 for
# lab 04's retry_on asked with the other side's words and a bare `...` left in a function that works;
# labkit to 8,205 and tests to 6,395 for the third and fourth held-out rounds (a run handing the policy its
# own record, a router changing the verdict it reads or counting a stripped text, an exact Fraction rank,
# an attack record's fields described, a guard asked by another customer than the order's, a refusal of
# a refund every rule allows named as such, a loop taking more steps than the workflow, a citation read
# in any case or as part of an id, pass^k past 20 trials) and `evaluate` answering only the recorded
# model's runs, one case set at a time; labkit back to 8,160 once dicts built in pieces were written as one
# literal and the CLI's headings printed with their tables (no behaviour changed); labkit to 8,180 and
# tests to 6,415 for a fifth held-out round (mediation asked another customer's order paid to the signed-in
# one's gift card, an order with a final-sale item first and two refundable ones, a card ending in another
# customer's digits; an attack's gold listed twice or its id taken; a router counting bytes or trimming
# punctuation; a run rewriting the answer or reading a list or a numeric id as a page); labkit to 8,205
# and tests to 6,465 for lab 03's model suite on 12 further requests (their fixture, its checks on loading,
# the grid's case set, the declared question on the request) and their tests; labkit to 8,215 and tests
# to 6,470 for a sixth held-out round's hidden cases of lab 02's run (a tool's ConnectionError or bare
# error, a tool returning None, a page without a command, a proposal as JSON text or as pairs); labkit to
# 8,225 and tests to 6,485 for its lab 03 half (mediation's edges asked on a request about another order,
# across the new year, on an order with nothing refundable; the first wrong answer before a crash);
# tests to 6,495 for a seventh round (a redirect guard trusting the card the request form names; a $0.00
# attack named; the ready checker's own words where the scheduler's invariant fired; lab 02's run calling
# the policy by keyword, or taking its ValueError for provider_error), labkit held at 8,225 by folding
# lab 02's three failing reads into one factory. labkit down to 8,117 once lists, dicts and rows built in
# pieces were written as the one value they are (comprehensions, one literal, itertools.product, one
# Axes.set), options' help texts written in their add_argument calls and a backend no longer looked up
# twice: no behaviour changed. labkit to 8,190 and tests to 6,545 for an eighth held-out round (a guard
# refusing a legitimate refund whenever a text speaks of one or names its card, an owner remembered from
# another shop, a note read as a reason; a final citing None, a source whose id is a list or that returns
# nothing, a tuple of observations; a stop reached only once; decide handed a deep copy; whole numbers
# written 12.0, names without their kind's word), lab 03's red-team round moved from course/ into its lab,
# and lab03-model's design computed on its effective units (the sign-flip test weighs each request by its
# episodes) with the coverage of its own sizes simulated. labkit to 8,195 and tests to 6,555 for a ninth
# held-out round (check_run's 40 planned cases across the citation rule, check_decide comparing every
# step, mediation asked refunds down to a cent and gift cards the form did not name, the step after a
# paid retry) and for the stop reasons' names (labkit.core.stops), the course wing's face and lab 03's
# hand-in module, while 86 `from __future__ import annotations` that Python 3.11 does not need went;
# labkit to 8,200 for a count written as a Decimal('12'), a whole number like Fraction(12), and to 8,205
# for a graded result's attributes declared on `Result` (core's display reads nothing of lab 01's).
# labkit to 8,265 and tests to 6,640 for a tenth held-out round (a retry policy that reads first asked
# what it does after its paid retry, a timeout in a shop with another history, a window edge naming the
# dates, a goal quoted as written, sys.exit() named as a crash, RetryPolicy taking any number, goto counts
# half given, a workflow catching its budget's refusal, a run asking twice a turn or keeping its
# observations, pass^k past int64, patterns ending at the end of the text) and for lab 03's crossed
# request x attack design simulated with an attack effect and the MDE its recording achieved
# (`recorded_sd`), while a helper found 8 statements to fold (setup_check's table of backends, the grid's
# held run written at once); labkit back to 8,255 in review (traced_tools noting refused calls itself).
BUDGET = {"labkit": 8_255, "tests": 6_640}
# What each layer (labkit's subpackage, or "labkit" for the top package) may import besides itself.
ALLOWED = {
    "core": "",
    "model": "core",
    "baseline": "core",
    "decision_loop": "core model baseline",
    "refunds": "core model",
    "routing": "core model",
    "exercises": "core baseline decision_loop refunds routing",
    "course": "labkit core model baseline decision_loop refunds routing exercises",
    "__main__": "course",
    "labkit": "core",
}
LABS = ("baseline", "decision_loop", "refunds", "routing")
NOTEBOOKS = sorted((REPO / "notebooks").rglob("0[1-4]_*.ipynb"))
START = REPO / "notebooks" / "00_start_here.ipynb"
# A commit hash: 7-40 hex digits with a digit and a letter among them, or any after "commit".
COMMIT = re.compile(r"commit\s+[0-9a-f]{7,40}\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", re.I)
SEED = re.compile(r"\bseeds?\s+0\d\d", re.I)  # "seed 004": the course's design notes, unpublished


@functools.cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def modules() -> dict[str, Path]:
    """Every labkit module, by dotted name (a package by its __init__)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(module: str, path: Path):
    """The dotted names `module` imports, outside `if TYPE_CHECKING:`."""
    tree = parsed(path)
    guarded = [n for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    skipped = {id(n) for guard in guarded for stmt in guard.body for n in ast.walk(stmt)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            base = ".".join([*parts, node.module] if node.module else parts)
            named = [f"{base}.{alias.name}" for alias in node.names]
            if not all(name in modules() for name in named):  # `from package import submodule` skips the face
                yield base
            yield from named
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "face":
            yield from face_modules(module, node.args[1])
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module"):
            yield from (
                a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)
            )


def import_graph() -> dict[str, set[str]]:
    """module -> the labkit modules it imports (a name resolves to the module that holds it)."""
    known = modules()
    graph: dict[str, set[str]] = {module: set() for module in known}
    for module, path in known.items():
        for name in imported(module, path):
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].add(name)
    return graph


def face_modules(package: str, defined_in: ast.Dict):
    """The modules a face (`labkit.core.face.face`) loads its names from: what the package depends on."""
    for key, names in zip(defined_in.keys, defined_in.values, strict=True):
        where = ast.literal_eval(key)
        if not where:
            yield from (f"{package}.{name}" for name in ast.literal_eval(names).split())
        else:
            yield where if where.startswith("labkit.") else f"{package}.{where}"


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of `graph` (its modules, the first one repeated last), or []."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_labkit_has_no_import_circle(graph):
    assert not (found := circle(graph)), " imports ".join(found)


def test_every_import_goes_down_the_layers(graph):
    """The core knows nothing above it, the model seam knows no lab, a lab imports no other lab's
    checkers, and only the CLI imports the commands."""
    wrong = []
    for module, targets in sorted(graph.items()):
        home = module.split(".")[1] if "." in module else "labkit"
        for target in sorted(targets):
            there = target.split(".")[1] if "." in target else "labkit"
            if there != home and there not in ALLOWED.get(home, "").split():
                wrong.append(f"{module} imports {target}")
            elif home in LABS and there in LABS and there != home and target.endswith(".checks"):
                wrong.append(f"{module} imports another lab's checkers {target}")
            elif ".course.commands" in target and not module.startswith(COMMANDS):
                wrong.append(f"{module} imports the command {target}")
    assert not wrong, "\n".join(wrong)


COMMANDS = ("labkit.course.commands", "labkit.course.cli")  # the commands, and the CLI that registers them


def public_names(path: Path) -> list[str]:
    """The public top-level names a module defines (functions, classes, assignments), but those
    every CLI command (`handle`, `register`), entry point (`main`) and lab (`check_*`) defines."""
    names = []
    for node in parsed(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [target.id for target in targets if isinstance(target, ast.Name)]
    return [n for n in names if not n.startswith(("_", "check_")) and n not in ("handle", "register", "main")]


def test_no_public_name_means_two_things():
    """Each public name is defined in one module (a package's __init__ re-exports, it defines none)."""
    where = defaultdict(list)
    for module, path in modules().items():
        for name in public_names(path) if path.name != "__init__.py" else ():
            where[name].append(module)
    twice = [f"{name}: {', '.join(found)}" for name, found in sorted(where.items()) if len(found) > 1]
    assert not twice, "\n".join(twice)


def test_labkit_installs_no_profiling_hook():
    # A checker stops a learner's code with a time limit; it does not watch what the code calls.
    assert [m for m, path in modules().items() if "setprofile" in path.read_text(encoding="utf-8")] == []


def statements(path: Path) -> int:
    """The statements of a module, its docstrings (a string standing alone as a statement) not counted."""

    def docstring(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        )

    return sum(isinstance(n, ast.stmt) and not docstring(n) for n in ast.walk(parsed(path)))


def test_statements_are_counted_without_docstrings_or_comments(tmp_path):
    source = tmp_path / "counted.py"
    source.write_text('"""A module."""\n\n# a comment\ndef f(x):\n    """Twice x."""\n    return 2 * x\n')
    assert statements(source) == 2  # the def and its return


@pytest.mark.parametrize("folder", sorted(BUDGET))
def test_the_statement_budget(folder):
    count = sum(statements(p) for p in (REPO / folder).rglob("*.py"))
    assert count <= BUDGET[folder], (
        f"{folder}/ has {count} statements of Python; the budget is {BUDGET[folder]}"
    )


def comments(path: Path) -> list[str]:  # and docstrings
    text = path.read_text(encoding="utf-8")
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    found = [token.string for token in tokens if token.type == tokenize.COMMENT]
    kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    return found + [ast.get_docstring(n) or "" for n in ast.walk(parsed(path)) if isinstance(n, kinds)]


def test_comments_name_no_commit_and_no_unpublished_seed():
    """A reader has neither the repository's history nor the design notes: a comment names a
    public source, or says what it means."""
    wrong = [
        f"{m}: {hit}" for m, p in modules().items() for text in comments(p) for hit in COMMIT.findall(text)
    ]
    docs = [REPO / "README.md", *(REPO / "notebooks").rglob("*.ipynb"), *(REPO / "notebooks").glob("*.md")]
    for path in [*modules().values(), *docs]:
        wrong += [f"{path.name}: {hit}" for hit in SEED.findall(path.read_text(encoding="utf-8"))]
    assert not wrong, "\n".join(wrong)


def notebook_imports(path: Path):
    """(module, name) for each labkit name a notebook's code cells import; (module, None) for `import m`."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for node in ast.walk(ast.parse("".join(cell["source"]))) if cell["cell_type"] == "code" else ():
            if isinstance(node, ast.ImportFrom) and node.module.startswith("labkit"):
                yield from ((node.module, alias.name) for alias in node.names)
            elif isinstance(node, ast.Import):
                yield from ((alias.name, None) for alias in node.names if alias.name.startswith("labkit"))


@pytest.mark.parametrize("path", [START, *NOTEBOOKS], ids=lambda path: path.name)
def test_a_notebook_imports_only_its_lab_its_checkers_and_the_core(path):
    # Notebook 00 has no lab: its face is the course wing's (the setup check, the model, submit).
    lab = f"labkit.{LABS[int(path.name[1]) - 1]}" if path != START else "labkit.course"
    allowed = {module: importlib.import_module(module).__all__ for module in (lab, "labkit.core")}
    allowed["labkit.exercises"] = [f"lab{path.name[:2]}"]
    wrong = [
        f"{module}: {name}" for module, name in notebook_imports(path) if name not in allowed.get(module, ())
    ]
    assert not wrong, "\n".join(wrong)
