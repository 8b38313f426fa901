"""A pytest plugin with no hooks, loaded first (`-p tests.pytest_speed` in pyproject), for the
speed of the course's own test processes only (a learner's kernel never loads it).

nbval imports nbformat, which imports jsonschema, which imports rfc3987_syntax where jupyter-events
installed it, only for the "iri" format that no schema here uses; that module builds a parser at import
(about 1.5 s, in every pytest process). A None entry, set before nbval loads, makes that import fail
cleanly; a process that imported it already keeps it."""

import sys

sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
