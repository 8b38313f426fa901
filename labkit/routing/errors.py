"""GraphError: a setup mistake, raised before anything runs. InvalidInput: raised by a job whose
input is wrong; repeating the call cannot fix it, so no retry policy retries it."""

from labkit.core.errors import LabError


class GraphError(LabError, ValueError):
    """A graph, route, retry policy or run setting is wrong; the message names what and where."""


class InvalidInput(ValueError):
    """A job's input is invalid: the job fails at once and is never retried."""
