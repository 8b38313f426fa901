"""The orchestrator's two exceptions: one for the person building a graph, one for jobs.

GraphError is a setup mistake, raised before anything runs: a duplicate id, an unknown
dependency, a dependency cycle, a route to an undeclared target, a retry policy with a
negative interval. It is a LabError, so `python -m labkit` prints it as one line.

InvalidInput is raised *by a job* whose input is wrong. Repeating the same call with the
same input cannot make it valid, so no retry policy retries it, whatever its `retry_on`
says (Temporal's non-retryable errors, as one rule instead of a list per policy).
"""

from __future__ import annotations

from labkit.core.errors import LabError


class GraphError(LabError, ValueError):
    """A graph, route, retry policy or run setting is wrong; the message names what and where."""


class InvalidInput(ValueError):
    """A job's input is invalid: the job fails at once and is never retried."""
