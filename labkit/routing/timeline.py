"""A run's timeline, rebuilt from its events: spans per job, and a Gantt chart of them.

A span opens when a job enters `running` (an attempt) or `retrying` (a backoff) and closes at
the job's next event, its `outcome` the state it moved to: the chart shows what the log says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labkit.routing.result import RunResult
from labkit.routing.states import DEAD_LETTER, RETRYING, RUNNING, Event

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_COLOURS = {  # by how a span ended
    "completed": "#2e7d32",
    "failed": "#c62828",
    "pending": "#9e9e9e",  # reset by a Goto while running: its work was thrown away
    "cancelled": "#616161",
    "running": "#f9a825",  # a backoff that ended in the next attempt
}


@dataclass(frozen=True)
class Span:
    job: str
    kind: str  # "running" (an attempt) or "retrying" (a backoff)
    visit: int
    attempt: int
    start: float
    end: float
    outcome: str

    @property
    def duration(self) -> float:
        return self.end - self.start


def spans(events: Iterable[Event] | RunResult) -> list[Span]:
    """Attempts and backoffs in the order they ended; a span still open at the end is dropped."""
    if isinstance(events, RunResult):
        events = events.events
    open_: dict[str, Event] = {}
    out = []
    for event in events:
        began = open_.pop(event.job, None)
        if began is not None:
            kind, outcome = str(began.new), str(event.new)
            out.append(Span(event.job, kind, began.visit, began.attempt, began.time, event.time, outcome))
        if event.new in (RUNNING, RETRYING):
            open_[event.job] = event
    return out


def plot_timeline(result: RunResult, ax: Axes | None = None, title: str | None = None) -> Axes:
    """A Gantt chart of `result`: one row per job, a bar per attempt, hatched bars for backoffs."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * len(result.jobs) + 1.2))
    rows = {job: n for n, job in enumerate(result.jobs)}
    shown: set[str] = set()
    label: dict[str, Any] = {"va": "center", "fontsize": 8}
    for span in spans(result):
        style: dict[str, Any] = {"color": _COLOURS.get(span.outcome, "#1565c0"), "edgecolor": "white"}
        if span.kind == "retrying":
            style.update(color="#fff3cd", edgecolor="#f9a825", hatch="///")
            shown.add("backoff")
        else:
            shown.add(span.outcome)
        ax.barh(rows[span.job], max(span.duration, 1e-9), left=span.start, height=0.6, **style)
        if span.kind == "running" and span.visit > 1:
            ax.text(
                span.start + span.duration / 2,
                rows[span.job],
                f"v{span.visit}",
                ha="center",
                **label,
                color="white",
            )
    for event in result.events:
        if event.new == DEAD_LETTER:
            ax.text(event.time, rows[event.job], " ✗ dead letter", **label, color="#c62828")
    for job, state in result.states.items():
        if state == "cancelled" and not any(e.job == job and e.new == RUNNING for e in result.events):
            ax.text(0, rows[job], "  cancelled, never ran", **label, color="#616161")
    ax.set_yticks(range(len(rows)), list(rows))
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first declared job on top
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds since the run started")
    ax.set_title(title or f"run: {result.status}")
    legend = [
        Patch(color=_COLOURS[k], label=f"attempt → {k}")
        for k in ("completed", "failed", "pending", "cancelled")
        if k in shown
    ]
    if "backoff" in shown:
        legend.append(Patch(facecolor="#fff3cd", edgecolor="#f9a825", hatch="///", label="backoff"))
    if legend:
        ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    return ax
