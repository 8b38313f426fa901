"""What a run returns: its status, the reason, per-job counts, results and every event.

`status` is one of STATUSES:

- ``completed``    every job completed, or a router said Next.Stop (the rest was cancelled);
- ``failed``       a job failed for good (not retryable, or out of attempts, or its router
                   broke); only its dependents were cancelled;
- ``dead_letter``  a loop hit `max_visits`: its jobs are marked dead_letter and everything
                   downstream of them was cancelled. Checked before ``failed``: a loop that
                   never converged is the first thing to report.

`reason` says why in one line, with the counts. Timings live only in `events` and
`elapsed`; `summary()` and `table()` leave them out so a notebook can check them exactly.
Each "; "-separated clause of a reason is at most MAX_CLAUSE characters: a loop of
10,000 jobs, or a router's megabyte of feedback, is cut with "… (+N more characters)".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labkit.routing.states import Event, State

if TYPE_CHECKING:
    import pandas as pd

STATUSES = ("completed", "failed", "dead_letter")
MAX_CLAUSE = 300


def _clause(text: str) -> str:
    if len(text) <= MAX_CLAUSE:
        return text
    head = text[:MAX_CLAUSE]
    head = head.rsplit(", ", 1)[0] if ", " in head else head  # end on a whole list item when there is one
    return f"{head} … (+{len(text) - len(head):,} more characters)"


def bounded(reason: str) -> str:
    """`reason` with every "; "-separated clause cut to MAX_CLAUSE characters (see module doc)."""
    if len(reason) <= MAX_CLAUSE:
        return reason
    return "; ".join(_clause(part) for part in reason.split("; "))


@dataclass(frozen=True)
class RunResult:
    """One run of a graph. Mappings are keyed by job id, in declaration order."""

    status: str
    reason: str
    states: Mapping[str, State]
    visits: Mapping[str, int]
    attempts: Mapping[str, int]
    results: Mapping[str, Any]
    errors: Mapping[str, str]
    events: tuple[Event, ...]
    elapsed: float
    stopped_by: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", bounded(self.reason))

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    @property
    def jobs(self) -> tuple[str, ...]:
        return tuple(self.states)

    def table(self) -> pd.DataFrame:
        """One row per job: its final state, visits (runs) and attempts (tries), and its error."""
        import pandas as pd

        frame = pd.DataFrame(
            {"state": [str(s) for s in self.states.values()],
             "visits": list(self.visits.values()),
             "attempts": list(self.attempts.values()),
             "error": [self.errors.get(job, "") for job in self.states]},
            index=pd.Index(list(self.states), name="job"),
        )
        return frame if self.errors else frame.drop(columns="error")

    def event_table(self, *, times: bool = True) -> pd.DataFrame:
        """Every transition in order; `times=False` drops the time column (for checked output)."""
        import pandas as pd

        rows = [{"time": e.time, "job": e.job, "old": str(e.old), "new": str(e.new),
                 "visit": e.visit, "attempt": e.attempt, "note": e.note} for e in self.events]
        frame = pd.DataFrame(rows, columns=["time", "job", "old", "new", "visit", "attempt", "note"])
        return frame if times else frame.drop(columns="time")

    def summary(self) -> str:
        """Status, reason and one line per job, without timings."""
        width = max((len(job) for job in self.states), default=0)
        lines = [f"status: {self.status}", f"reason: {self.reason}"]
        for job, state in self.states.items():
            counts = f"visits={self.visits[job]}  attempts={self.attempts[job]}"
            line = f"  {job:<{width}}  {state!s:<11}  {counts}"
            if job in self.errors:
                line += f"  error: {self.errors[job]}"
            lines.append(line)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()
