"""How an episode ended: the ten stop reasons, and the Result that `run` returns."""

from __future__ import annotations

STOP_REASONS = (
    "final",
    "invalid_decision",
    "provider_error",
    "tool_limit",
    "turn_limit",
    "unread_citation",
    "step_timeout",
    "deadline",
    "budget",
    "aborted",
)


class Result(dict):
    """The outcome of one episode: a plain dict with the seed's keys, rendered as a table.

    Keys: stop (one of STOP_REASONS), answer, citation, detail, trace, turns, tool_calls,
    elapsed, usage. In a notebook it shows as `labkit.core.display.result_html` draws it;
    its repr is `trace_text`, the same content as plain lines without timings.
    """

    def _repr_html_(self) -> str:
        from labkit.core.display import result_html  # display imports nothing of the runtime

        return result_html(self)

    def __repr__(self) -> str:
        from labkit.core.display import trace_text

        return trace_text(self)
