"""How an episode ended: the ten stop reasons, and the Result that `run` returns."""

from labkit.core.stops import STOP_REASONS, Stop

__all__ = ["STOP_REASONS", "Result", "Stop"]


class Result(dict):
    """One episode's outcome, a plain dict (stop, answer, citation, detail, trace, turns, tool_calls,
    elapsed, usage), shown by `labkit.core.display`."""

    def _repr_html_(self) -> str:
        from labkit.core.display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        from labkit.core.display import trace_text

        return trace_text(self)
