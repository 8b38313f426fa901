"""A pytest plugin with no hooks: it only makes sure `labkit` is imported before nbval.

pyproject's addopts load it with `-p labkit.course.pytest_plugin`, which pytest imports before the
plugins it finds through entry points. nbval is one of those: it imports nbformat, which
imports jsonschema, which imports `rfc3987_syntax` where jupyter-events installed it, and that
module builds an Earley parser at import. `import labkit` first blocks that import (see
labkit/__init__.py), as it does in every notebook kernel: 1.0 s less for each pytest process,
and `make test` starts one more than the cores (tests/conftest.py) and a controller.
"""

import labkit  # noqa: F401  (imported for its side effect on sys.modules)
