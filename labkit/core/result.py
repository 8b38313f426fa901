"""How an episode ended: the ten stop reasons, and the Result that `run` returns."""

from labkit.core.stops import STOP_REASONS, Stop

__all__ = ["STOP_REASONS", "Result", "Stop"]


class Result(dict):
    """One episode's outcome, a plain dict (stop, answer, citation, detail, trace, turns, tool_calls,
    elapsed, usage), shown by `labkit.core.display`. A grader's findings are attributes, None where the
    result is not graded: `correct`, and `expected` (the answer and citation it wanted; lab 01's
    `Graded` sets both), so the display needs nothing of the lab that graded it."""

    correct: bool | None = None
    expected: tuple[str, str] | None = None

    def _repr_html_(self) -> str:
        from labkit.core.display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        from labkit.core.display import trace_text

        return trace_text(self)
