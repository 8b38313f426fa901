"""A pytest plugin with no hooks, loaded first (`-p labkit.course.pytest_plugin` in pyproject): it
imports `labkit` before nbval does, which keeps jsonschema from building its RFC 3987 parser
(labkit/__init__.py says how): 1.0 s less for each pytest process."""

import labkit  # noqa: F401  (imported for its side effect on sys.modules)
