"""labkit: the helper package of Agent Engineering Labs.

The notebooks import what they need from here (``from labkit import Task, docuctl, run``). Names
load lazily (PEP 562): each loads only the module defining it, so `import labkit` or
`python -m labkit` does not pay for pandas, numpy and jsonschema it may never use.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from labkit.core.errors import errors_in_one_line

# jsonschema imports rfc3987_syntax where installed (by jupyter-events) only for the "iri" format,
# which labkit never uses, and that module builds a parser at import (about 1.5 s). A None entry
# makes that import fail cleanly; a process that imported it already keeps it.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

# In a notebook a LabError (a user's mistake: an unknown name, a missing file) reads as one line, as
# on the CLI, not as a traceback through labkit's frames.
errors_in_one_line()

# Each submodule and the public names it defines.
_DEFINED_IN = {
    "baseline.controllers": "conflict controllers docuctl_tools scripted workflow",
    "baseline.corpus": "docuctl load_corpus",
    "baseline.documents": "Documents",
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
    """A public name, imported on first use and cached here; `labkit.<package>` works too
    (`controllers` is the function: no module of that name sits at the top)."""
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
