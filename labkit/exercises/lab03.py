"""Lab 03's checkers under the name the notebooks use; they live in `labkit.refunds.checks`."""

from labkit.refunds.checks import *  # noqa: F403
from labkit.refunds.checks import __all__  # noqa: F401
