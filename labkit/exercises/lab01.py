"""Lab 01's checkers under the name the notebooks use; they live in `labkit.baseline.checks`."""

from labkit.baseline.checks import *  # noqa: F403
from labkit.baseline.checks import __all__  # noqa: F401
