"""Grading outside every controller: `outcome` passes only a final stop with the case's exact command
citing its expected page (not a paraphrase, not the other version's page); `compare` tabulates it."""

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from labkit.baseline.task import Task, task_from
from labkit.core.result import Result
from labkit.core.stops import Stop

_Case = dict[str, Any]
_Controller = Callable[[Task], Mapping[str, Any]]


def outcome(case: _Case, result: Mapping[str, Any]) -> bool:
    """True iff `result` is a final answer with the expected command and citation."""
    want = (Stop.FINAL, case["expected_doc"], case["expected_command"])
    return tuple(result.get(key) for key in ("stop", "citation", "answer")) == want


class Graded(Result):
    """The result's own dict, graded: `case`, `correct` and `expected` are attributes (for display)."""

    case: Mapping[str, Any]
    correct: bool

    @property
    def expected(self) -> tuple[str, str]:
        """The case's expected (command, page): what `outcome` demanded of the answer and citation."""
        return self.case["expected_command"], self.case["expected_doc"]


def graded(result: Mapping[str, Any], case: _Case) -> Graded:
    """`result` graded by `outcome` against `case`, for display."""
    out = Graded(result)
    out.case, out.correct = case, outcome(case, result)
    return out


def evaluate(cases: Iterable[_Case], controller: _Controller) -> list[dict[str, Any]]:
    """Run `controller` on every case: one row per case (case, passed, stop, tool_calls, citation, result)."""
    results = ((case, controller(task_from(case))) for case in cases)  # one case at a time, in order
    return [
        {
            "case": case["id"],
            "passed": outcome(case, result),
            "stop": result["stop"],
            "tool_calls": result["tool_calls"],
            "citation": result.get("citation"),
            "result": result,
        }
        for case, result in results
    ]


def compare(cases: Iterable[_Case], controllers: Mapping[str, _Controller]) -> pd.DataFrame:
    """One row per controller: cases passed, cases total, tool calls summed over the cases."""
    cases = list(cases)
    rows = [{"controller": name, **row} for name, run in controllers.items() for row in evaluate(cases, run)]
    return (
        pd.DataFrame(rows, columns=["controller", "case", "passed", "tool_calls"])
        .groupby("controller", sort=False)
        .agg(passed=("passed", "sum"), total=("case", "size"), tool_calls=("tool_calls", "sum"))
    )
