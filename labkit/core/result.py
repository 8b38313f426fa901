"""How an episode ended: the ten stop reasons, and the Result that `run` returns."""

from __future__ import annotations

# In the order the runtime checks them (see `labkit.core.runtime`).
STOP_REASONS = tuple(
    "final invalid_decision provider_error tool_limit turn_limit unread_citation "
    "step_timeout deadline budget aborted".split()
)


class Result(dict):
    """One episode's outcome, a plain dict (stop, answer, citation, detail, trace, turns, tool_calls,
    elapsed, usage), shown by `labkit.core.display`."""

    def _repr_html_(self) -> str:
        from labkit.core.display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        from labkit.core.display import trace_text

        return trace_text(self)
