"""Lab 04's checkers under the name the notebooks use; they live in `labkit.routing.checks`."""

from labkit.routing.checks import *  # noqa: F403
from labkit.routing.checks import __all__  # noqa: F401
