"""labkit: the helper package of Agent Engineering Labs.

The notebooks import what they need from here (``from labkit import Task, Documents, run``).
Names are imported lazily (PEP 562): `import labkit` loads only this file, and each name loads
only the module that defines it, so a kernel, `python -m labkit` or a test's subprocess does not
pay for pandas, numpy and jsonschema it may never use.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

# jsonschema imports rfc3987_syntax where it is installed (jupyter-events installs it) only to
# check the "iri" format, which labkit never uses, and that module builds a parser at import:
# `import jsonschema` 1.2-1.7 s with it, 0.1-0.2 s without. A None entry makes that import fail
# cleanly (jsonschema suppresses the ImportError); a process that imported it already keeps it.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

# Public name -> the submodule that defines it.
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

__all__ = sorted(_EXPORTS)


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
