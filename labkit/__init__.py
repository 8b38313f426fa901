"""labkit: the helper package of Agent Engineering Labs.

The notebooks import everything they need from here::

    from labkit import Task, Documents, run, outcome, compare

Names are imported lazily (PEP 562): `import labkit` loads only this file, and
`from labkit import run` loads only the module that defines `run` and what it needs.
Eagerly, `import labkit` loaded pandas, numpy and jsonschema (which builds an RFC 3987
parser at import where `rfc3987_syntax` is installed, as jupyter-events installs it):
1.63 s against 0.027 s now on the 2-core course machine, paid by every notebook kernel,
every `python -m labkit` and every subprocess a test starts (benchmarks/startup.py).
The public names and what they are bound to are unchanged; `dir(labkit)` lists them.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

# jsonschema, which labkit uses to validate fixtures and submissions, imports rfc3987_syntax
# when it is installed (jupyter-events installs it into every JupyterLab environment) only to
# check the "iri" string format, and rfc3987_syntax builds an Earley parser at import: 3.6-3.7 s
# against 0.4 s for `import jsonschema` in the learner's venv on the 2-core course machine,
# paid by the first fixture load of every notebook. labkit validates no string formats, and
# jsonschema imports that module inside `suppress(ImportError)`: a None entry in sys.modules
# makes the import fail cleanly. Only in a process that has not imported it already.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

# Public name -> the submodule that defines it. Keep in step with __all__ (a test checks).
_EXPORTS: dict[str, str] = {
    "adaptive_policy": "baseline.controllers",
    "conflict": "baseline.controllers",
    "controllers": "baseline.controllers",
    "docuctl_tools": "baseline.controllers",
    "fallback_workflow": "baseline.controllers",
    "keyword_route": "baseline.controllers",
    "revise_query": "baseline.controllers",
    "scripted": "baseline.controllers",
    "workflow": "baseline.controllers",
    "Corpus": "baseline.corpus",
    "docuctl": "baseline.corpus",
    "load_corpus": "baseline.corpus",
    "Tool": "core.decisions",
    "validate_decision": "core.decisions",
    "Documents": "baseline.documents",
    "linear_search": "baseline.documents",
    "FixtureError": "core.errors",
    "LabError": "core.errors",
    "ProviderError": "core.errors",
    "compare": "baseline.grading",
    "evaluate": "baseline.grading",
    "outcome": "baseline.grading",
    "STOP_REASONS": "core.result",
    "Result": "core.result",
    "Budget": "core.runtime",
    "run": "core.runtime",
    "Task": "baseline.task",
    "TaskError": "baseline.task",
    "task_from": "baseline.task",
    "words": "core.text",
}

__all__ = [
    "STOP_REASONS",
    "Budget",
    "Corpus",
    "Documents",
    "FixtureError",
    "LabError",
    "ProviderError",
    "Result",
    "Task",
    "TaskError",
    "Tool",
    "adaptive_policy",
    "compare",
    "conflict",
    "controllers",
    "docuctl",
    "docuctl_tools",
    "evaluate",
    "fallback_workflow",
    "keyword_route",
    "linear_search",
    "load_corpus",
    "outcome",
    "revise_query",
    "run",
    "scripted",
    "task_from",
    "validate_decision",
    "workflow",
    "words",
]

if TYPE_CHECKING:  # what type checkers and editors see; nothing is imported at run time
    from labkit.baseline.controllers import (
        adaptive_policy,
        conflict,
        controllers,
        docuctl_tools,
        fallback_workflow,
        keyword_route,
        revise_query,
        scripted,
        workflow,
    )
    from labkit.baseline.corpus import Corpus, docuctl, load_corpus
    from labkit.baseline.documents import Documents, linear_search
    from labkit.baseline.grading import compare, evaluate, outcome
    from labkit.baseline.task import Task, TaskError, task_from
    from labkit.core.errors import FixtureError, LabError, ProviderError
    from labkit.core.runtime import STOP_REASONS, Budget, Result, Tool, run, validate_decision
    from labkit.core.text import words


def __getattr__(name: str) -> Any:
    """Import the submodule behind a public name on first use, and cache the name here.

    `labkit.<package>` (labkit.refunds, labkit.routing, labkit.core, ...) also works without
    importing it first. `controllers` is the function: no module of that name sits at the top.
    """
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"labkit.{module}"), name)
        globals()[name] = value  # later lookups skip this function
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"labkit.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"labkit.{name}":
                raise  # the submodule exists and something it imports is missing: say so
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
