"""Why an episode ended: the ten stop reasons, by name.

Every stop is written as `Stop.FINAL`, `Stop.TOOL_LIMIT`, ...: a misspelt reason is an AttributeError
where it is written, not a row that no table counts. The values are the plain strings results and
recordings hold ("final", "tool_limit", ...), so a notebook may compare with either.
"""


class Stop:
    """The stop reasons as attributes, in the order the runtime checks them (`labkit.core.runtime`)."""

    FINAL = "final"  # an answer was accepted
    INVALID_DECISION = "invalid_decision"  # the policy proposed something the runtime refused
    PROVIDER_ERROR = "provider_error"  # the policy (a model server) failed to decide
    TOOL_LIMIT = "tool_limit"  # a tool proposed after the last allowed call
    TURN_LIMIT = "turn_limit"  # no answer within the turns allowed
    UNREAD_CITATION = "unread_citation"  # an answer citing a page this episode did not read
    STEP_TIMEOUT = "step_timeout"  # one decision took longer than allowed
    DEADLINE = "deadline"  # the episode's wall-clock allowance ran out
    BUDGET = "budget"  # the token or cost budget ran out, as the policy reported its usage
    ABORTED = "aborted"  # the caller's abort event was set


STOP_REASONS = tuple(value for name, value in vars(Stop).items() if name.isupper())
