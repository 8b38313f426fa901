"""What a run returns. `status`: ``completed`` (every job, or Next.Stop), ``failed`` (a job failed for
good) or ``dead_letter`` (a loop hit `max_visits`; it wins over ``failed``). Timings live only in
`events` and `elapsed`, so `summary()` and `table()` can be checked exactly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labkit.routing.states import Event, State

if TYPE_CHECKING:
    import pandas as pd


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

    @property
    def jobs(self) -> tuple[str, ...]:
        """Every job's id, in declaration order."""
        return tuple(self.states)

    def table(self) -> pd.DataFrame:
        """One row per job: its final state, visits (how often it was started), attempts (tries within a
        visit) and error, if any."""
        import pandas as pd

        frame = pd.DataFrame(
            {
                "state": [str(s) for s in self.states.values()],
                "visits": list(self.visits.values()),
                "attempts": list(self.attempts.values()),
                "error": [self.errors.get(job, "") for job in self.states],
            },
            index=pd.Index(list(self.states), name="job"),
        )
        return frame if self.errors else frame.drop(columns="error")

    def event_table(self, *, times: bool = True) -> pd.DataFrame:
        """Every transition in order; `times=False` drops the time column (for checked output)."""
        import pandas as pd

        columns = ["time", "job", "old", "new", "visit", "attempt", "note"]
        frame = pd.DataFrame(
            [[e.time, e.job, str(e.old), str(e.new), *e[4:]] for e in self.events], columns=columns
        )
        return frame if times else frame.drop(columns="time")

    def summary(self) -> str:
        """Status, reason and one line per job, without timings."""
        width = max((len(job) for job in self.states), default=0)
        jobs = [
            f"  {job:<{width}}  {state!s:<11}  visits={self.visits[job]}  attempts={self.attempts[job]}"
            + (f"  error: {self.errors[job]}" if job in self.errors else "")
            for job, state in self.states.items()
        ]
        return "\n".join([f"status: {self.status}", f"reason: {self.reason}", *jobs])

    def __repr__(self) -> str:
        return self.summary()
