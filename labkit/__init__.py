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

# Each submodule and the public names it defines.
_DEFINED_IN = {
    "baseline.controllers": "adaptive_policy conflict controllers docuctl_tools fallback_workflow "
    "keyword_route revise_query scripted workflow",
    "baseline.corpus": "Corpus docuctl load_corpus",
    "baseline.documents": "Documents linear_search",
    "baseline.grading": "compare evaluate outcome",
    "baseline.task": "Task TaskError task_from",
    "core.decisions": "Tool validate_decision",
    "core.errors": "FixtureError LabError ProviderError",
    "core.result": "STOP_REASONS Result",
    "core.runtime": "Budget run",
    "core.text": "words",
}
_EXPORTS = {name: module for module, names in _DEFINED_IN.items() for name in names.split()}
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
