"""A run's timeline from its events: a span opens when a job enters `running` (an attempt) or `retrying`
(a backoff) and closes at its next event, `outcome` the state it moved to; and a Gantt chart of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from labkit.routing.result import RunResult
from labkit.routing.states import DEAD_LETTER, RETRYING, RUNNING

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# An attempt by how it ended ("pending": reset by a Goto while running, its work thrown away), a backoff.
_COLOURS = {
    "completed": "#2e7d32",
    "failed": "#c62828",
    "pending": "#9e9e9e",
    "cancelled": "#616161",
    "backoff": "#f9a825",
}


class Span(NamedTuple):
    """One attempt or backoff of `job`: its visit and try (from 1), start and end in seconds into the run,
    and `outcome`, the state it moved to."""

    job: str
    kind: str  # "running" (an attempt) or "retrying" (a backoff)
    visit: int
    attempt: int
    start: float
    end: float
    outcome: str


def spans(result: RunResult) -> list[Span]:
    """Attempts and backoffs in the order they ended; a span still open at the end is dropped."""
    opened, out = {}, []
    for event in result.events:
        if (began := opened.pop(event.job, None)) is not None:
            kind, outcome = str(began.new), str(event.new)
            out.append(Span(event.job, kind, began.visit, began.attempt, began.time, event.time, outcome))
        if event.new in (RUNNING, RETRYING):
            opened[event.job] = event
    return out


def plot_timeline(result: RunResult, ax: Axes | None = None, title: str | None = None) -> Axes:
    """A Gantt chart of `result`: a row per job, a bar per attempt coloured by how it ended, backoffs
    in amber, later visits marked v2, v3, …"""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * len(result.jobs) + 1.2))
    label = {"va": "center", "fontsize": 8}
    drawn = [(span, "backoff" if span.kind == RETRYING else span.outcome) for span in spans(result)]
    for row, job in enumerate(result.jobs):
        bars = [(span, style) for span, style in drawn if span.job == job]
        ranges = [(span.start, max(span.end - span.start, 1e-9)) for span, _ in bars]
        ax.broken_barh(ranges, (row - 0.3, 0.6), facecolors=[_COLOURS.get(s, "#1565c0") for _, s in bars])
        for span, _ in bars:
            if span.kind == RUNNING and span.visit > 1:
                ax.text(
                    (span.start + span.end) / 2, row, f"v{span.visit}", ha="center", color="white", **label
                )
        if not bars and result.states[job] == "cancelled":
            ax.text(0, row, "  cancelled, never ran", color="#616161", **label)
    for event in result.events:
        if event.new == DEAD_LETTER:
            ax.text(event.time, result.jobs.index(event.job), " ✗ dead letter", color="#c62828", **label)
    ax.set_yticks(range(len(result.jobs)), result.jobs)
    ax.set(
        ylim=(len(result.jobs) - 0.5, -0.5),  # first declared job on top
        xlim=(0, None),
        xlabel="seconds since the run started",
        title=title or f"run: {result.status}",
    )
    shown = {style for _, style in drawn}
    names = [k for k in _COLOURS if k in shown]
    legend = [Patch(color=_COLOURS[k], label=k if k == "backoff" else f"attempt → {k}") for k in names]
    if legend:
        ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    return ax
