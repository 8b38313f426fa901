"""Job states, the transitions allowed between them, and the event each transition logs.

::

    pending ──> running ──> completed ──> dead_letter      (its loop hit max_visits)
       │          │  │          └──────> pending          (reset by a Goto)
       │          │  └──> failed ──> retrying ──> running  (a retryable error, attempts left)
       │          └─────> pending                          (interrupted by a Goto)
       └──> cancelled   <── running, retrying               (a failure or dead letter upstream,
                                                              or Next.Stop)

A run ends with every job in FINAL_STATES. The scheduler checks every transition against
TRANSITIONS and treats an illegal one as its own bug (RuntimeError).
"""

from enum import StrEnum
from typing import NamedTuple


class State(StrEnum):
    """A job's state, a str ("pending", ...); TRANSITIONS says which may follow which."""

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

FINAL_STATES = frozenset({COMPLETED, FAILED, DEAD_LETTER, CANCELLED})


class Event(NamedTuple):
    """One transition of one job, `time` seconds into the run on its clock; `visit` counts runs of the
    job, `attempt` the tries within that visit (both from 1); `note` says why in a few words."""

    time: float
    job: str
    old: State
    new: State
    visit: int
    attempt: int
    note: str = ""
