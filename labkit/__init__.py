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
import types
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
    "adaptive_policy": "controllers",
    "conflict": "controllers",
    "docuctl_tools": "controllers",
    "fallback_workflow": "controllers",
    "keyword_route": "controllers",
    "revise_query": "controllers",
    "scripted": "controllers",
    "workflow": "controllers",
    "Corpus": "corpus",
    "docuctl": "corpus",
    "load_corpus": "corpus",
    "Documents": "documents",
    "linear_search": "documents",
    "FixtureError": "errors",
    "LabError": "errors",
    "ProviderError": "errors",
    "compare": "grading",
    "evaluate": "grading",
    "outcome": "grading",
    "STOP_REASONS": "runtime",
    "Budget": "runtime",
    "Result": "runtime",
    "Tool": "runtime",
    "run": "runtime",
    "validate_decision": "runtime",
    "Task": "task",
    "TaskError": "task",
    "task_from": "task",
    "words": "text",
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
    from labkit.controllers import (
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
    from labkit.corpus import Corpus, docuctl, load_corpus
    from labkit.documents import Documents, linear_search
    from labkit.errors import FixtureError, LabError, ProviderError
    from labkit.grading import compare, evaluate, outcome
    from labkit.runtime import STOP_REASONS, Budget, Result, Tool, run, validate_decision
    from labkit.task import Task, TaskError, task_from
    from labkit.text import words


def __getattr__(name: str) -> Any:
    """Import the submodule behind a public name on first use, and cache the name here.

    `labkit.<submodule>` (labkit.display, labkit.refunds, ...) also works without importing
    it first, as it did when this file imported most of them eagerly.
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


class _Package(types.ModuleType):
    """This package's module type: keeps `labkit.controllers` the function, as it always was.

    `controllers` names both the function `labkit.controllers.controllers` (the public name)
    and the submodule that defines it. Whenever any code imports the submodule, the import
    system binds it on the package as `controllers`; the eager package then rebound the name
    to the function at once. Lazily nothing would, so `from labkit import controllers` would
    return the module after, say, `import labkit.evaluation`. A property on the module's
    type takes precedence over that binding; assigning anything but the submodule (a test's
    monkeypatch) still takes effect.
    """

    @property
    def controllers(self) -> Any:
        if "_controllers" in self.__dict__:
            return self.__dict__["_controllers"]
        from labkit.controllers import controllers

        return controllers

    @controllers.setter
    def controllers(self, value: Any) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == "labkit.controllers":
            return  # the import system binding the submodule: the public name stays the function
        self.__dict__["_controllers"] = value

    @controllers.deleter
    def controllers(self) -> None:
        self.__dict__.pop("_controllers", None)


sys.modules[__name__].__class__ = _Package
