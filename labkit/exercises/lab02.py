"""Lab 02's checkers under the name the notebooks use; they live in `labkit.decision_loop.checks`."""

from labkit.decision_loop.checks import *  # noqa: F403
from labkit.decision_loop.checks import __all__  # noqa: F401
