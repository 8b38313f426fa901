"""Job states, the transitions allowed between them, and the event each transition logs.

::

    pending ──> running ──> completed ──> dead_letter      (its loop hit max_visits)
       │          │  │          └──────> pending          (reset by a Goto)
       │          │  └──> failed ──> retrying ──> running  (a retryable error, attempts left)
       │          └─────> pending                          (interrupted by a Goto)
       └──> cancelled   <── running, retrying               (an upstream job failed, a dead
                                                              letter upstream, or Next.Stop)

`dead_letter` and `cancelled` are never left. `failed` is left only for `retrying`, in the
same instant the failure is logged, so a failed job that is not retried stays failed. A
run ends with every job in one of FINAL. Nothing else may change a job's state: the
scheduler checks every transition against TRANSITIONS and treats an illegal one as its
own bug (RuntimeError), and the tests replay every run's events against the same table.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class State(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    RETRYING = "retrying"
    DEAD_LETTER = "dead_letter"
    CANCELLED = "cancelled"


PENDING, RUNNING, COMPLETED, FAILED, RETRYING, DEAD_LETTER, CANCELLED = State

TRANSITIONS: dict[State, frozenset[State]] = {
    PENDING: frozenset({RUNNING, CANCELLED}),
    RUNNING: frozenset({COMPLETED, FAILED, PENDING, CANCELLED}),
    COMPLETED: frozenset({PENDING, DEAD_LETTER}),
    FAILED: frozenset({RETRYING}),
    RETRYING: frozenset({RUNNING, PENDING, CANCELLED}),
    DEAD_LETTER: frozenset(),
    CANCELLED: frozenset(),
}

FINAL = frozenset({COMPLETED, FAILED, DEAD_LETTER, CANCELLED})
"""The states a run may end with; every job is in one of them when `run` returns."""


class Event(NamedTuple):
    """One transition of one job.

    `time` is seconds since the run started, on the run's clock (a FakeClock's virtual
    seconds in tests). `visit` counts runs of the job (1 on its first run) and `attempt`
    the tries within that visit (1 on the first try). `note` says why, in a few words:
    the error of a failed attempt, the backoff before a retry, the Goto that reset a job.

    Immutable: a log is evidence, and nothing may edit it after the fact. A named tuple,
    so it also compares equal to a plain tuple of the same seven values.
    """

    time: float
    job: str
    old: State
    new: State
    visit: int
    attempt: int
    note: str = ""


def legal(old: State, new: State) -> bool:
    """True if TRANSITIONS allows a job in state `old` to move to `new`."""
    return new in TRANSITIONS[old]
