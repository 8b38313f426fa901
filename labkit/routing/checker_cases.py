"""The cases lab 04's build-it checkers put to a learner's answer, and what a wrong answer missed.

The ready step: READY_CASES, one per boundary of its rule, each asked directly; then whole graphs
(GRAPHS, and graphs drawn here from a fixed seed, printed nowhere) run on labkit's scheduler with
the learner's step in place of `ready_after`. The router: the lengths the lab mentions and
others drawn here (`router_chars`); `router_problem` says what is wrong with one answer.
"""

from __future__ import annotations

import random
import re
from typing import Any, NamedTuple

from labkit.core.answers import shown
from labkit.routing.experiments import LIMIT
from labkit.routing.route import Next


class _ReadyCase(NamedTuple):
    name: str
    finished: str
    dependents: dict[str, list[str]]
    waiting: dict[str, int]
    states: dict[str, str]


def _fan_in(other: str) -> _ReadyCase:
    """c needs a and b; a just completed while b is `other`: c still waits for b."""
    return _ReadyCase(
        f"c needs a and b, a completed and b is {other}",
        "a",
        {"a": ["c"], "b": ["c"], "c": []},
        {"a": 0, "b": 0, "c": 2},
        {"a": "completed", "b": other, "c": "pending"},
    )


def _only_dependent(state: str) -> _ReadyCase:
    """b's count reaches zero, but b is not pending: it must not start again."""
    return _ReadyCase(
        f"b's last dependency completed but b is {state}",
        "a",
        {"a": ["b"], "b": []},
        {"a": 0, "b": 1},
        {"a": "completed", "b": state},
    )


READY_CASES = [
    _ReadyCase(
        "a completed and b needs only a",
        "a",
        {"a": ["b"], "b": []},
        {"a": 0, "b": 1},
        {"a": "completed", "b": "pending"},
    ),
    _ReadyCase(
        "fetch completed and parse, stats need only fetch (a diamond)",
        "fetch",
        {"fetch": ["parse", "stats"], "parse": ["report"], "stats": ["report"], "report": []},
        {"fetch": 0, "parse": 1, "stats": 1, "report": 2},
        {"fetch": "completed", "parse": "pending", "stats": "pending", "report": "pending"},
    ),
    _ReadyCase(
        "its dependents are declared z, m, a",
        "root",
        {"root": ["z", "m", "a"], "z": [], "m": [], "a": []},
        {"root": 0, "z": 1, "m": 1, "a": 1},
        {"root": "completed", "z": "pending", "m": "pending", "a": "pending"},
    ),
    *(_fan_in(state) for state in ("pending", "running", "retrying", "failed", "dead_letter", "cancelled")),
    _ReadyCase(
        "c needs a and b and b was counted already",
        "a",
        {"a": ["c"], "b": ["c"], "c": []},
        {"a": 0, "b": 0, "c": 1},
        {"a": "completed", "b": "completed", "c": "pending"},
    ),
    *(
        _only_dependent(state)
        for state in ("running", "retrying", "completed", "failed", "dead_letter", "cancelled")
    ),
    _ReadyCase(
        "c became ready earlier and waits for a slot",
        "a",
        {"a": ["b"], "b": [], "c": []},
        {"a": 0, "b": 1, "c": 0},
        {"a": "completed", "b": "pending", "c": "pending"},
    ),
    _ReadyCase(
        "the finished job has no dependents",
        "b",
        {"a": ["b"], "b": []},
        {"a": 0, "b": 0},
        {"a": "completed", "b": "completed"},
    ),
]

# Graphs run on the scheduler with the learner's step: {job: deps}, in declaration order.
GRAPHS = {
    "diamond": {"fetch": [], "parse": ["fetch"], "stats": ["fetch"], "report": ["parse", "stats"]},
    "chain": {"a": [], "b": ["a"], "c": ["b"], "d": ["c"]},
    "fan-out/fan-in": {
        "start": [],
        **{f"w{i}": ["start"] for i in range(4)},
        "join": [f"w{i}" for i in range(4)],
    },
}
_NAMES = (
    "fetch",
    "parse",
    "load",
    "clean",
    "index",
    "score",
    "merge",
    "train",
    "report",
    "audit",
    "plot",
    "ship",
)


def made_up(count: int, seed: int) -> list[dict[str, list[str]]]:
    """`count` graphs of 5 to 8 jobs drawn from `seed`, declared in a shuffled order."""
    rng = random.Random(seed)
    graphs = []
    for _ in range(count):
        names = rng.sample(_NAMES, rng.randint(5, 8))
        graphs.append({job: rng.sample(names[:i], rng.randint(0, min(3, i))) for i, job in enumerate(names)})
    return graphs


def ready_problem(
    case: _ReadyCase, got: Any, waiting: dict[str, int], want: list[str], want_waiting: dict[str, int]
) -> str | None:
    """What is wrong with one answer of the ready step (its list and the counts it left), or None."""
    if not isinstance(got, list | tuple) or any(type(job) is not str for job in got):
        return f"your step returned {shown(got)}: return a list of job ids such as ['b', 'c']."
    releases = case.dependents[case.finished]
    for job, count in want_waiting.items():
        if waiting.get(job) != count:
            if job not in releases:
                return (
                    f"waiting[{job!r}] changed, but {job} does not depend on {case.finished}: count "
                    f"{case.finished} off dependents[{case.finished!r}] only."
                )
            return (
                f"waiting[{job!r}] is {shown(waiting.get(job))}, not {count}: {job} depends on "
                f"{case.finished}, so subtract 1 from its count."
            )
    for job in got:
        if job not in releases:
            return (
                f"{shown(job)} does not depend on {case.finished}: only a job that {case.finished} "
                "releases can become ready now (one whose count reached 0 earlier is queued already)."
            )
        if want_waiting[job]:
            return (
                f"{job} still waits for {want_waiting[job]} dependency(ies): it starts when its count is 0."
            )
        if case.states[job] != "pending":
            return f"{job} is {case.states[job]}: only a pending job may start (nothing starts twice)."
    if missing := [job for job in want if job not in got]:
        return f"{missing[0]} may start: its count reached 0 and it is pending."
    if list(got) != want:
        return f"return each ready job once, in the order of dependents[{case.finished!r}] ({want})."
    return None


# The lengths the lab's text mentions, then lengths drawn here (printed nowhere).
_SHOWN_CHARS = (12, LIMIT, LIMIT + 1, 45)


def router_chars() -> list[int]:
    rng = random.Random(4026)
    return [*_SHOWN_CHARS, *rng.sample(range(1, LIMIT), 3), *rng.sample(range(LIMIT + 2, 140), 4)]


def _says(feedback: str, number: int) -> bool:
    """Whether `feedback` states `number` as digits of its own (27 in "27 chars", not in "127")."""
    return re.search(rf"(?<!\d){number}(?!\d)", feedback) is not None


def router_problem(decision: Any, chars: int) -> str | None:
    """What is wrong with the router's answer to a verdict of `chars` characters, or None."""
    if type(decision) is not Next:
        return (
            f"for a verdict of {chars} characters your router returned {shown(decision)}, not a Next: "
            "return Next.Continue or Next.back_to_with('revise', feedback)."
        )
    if chars <= LIMIT:
        if decision.kind != "continue":
            return (
                f"{chars} characters is within the limit of {LIMIT}, but your router returned "
                f"{shown(decision)}: it should be Next.Continue."
            )
        return None
    if decision.kind != "goto" or decision.job != "revise":
        return (
            f"{chars} characters is over the limit, but your router returned {shown(decision)}: "
            "send it back to 'revise'."
        )
    if decision.feedback is None:
        return (
            "over the limit your router goes back without feedback: a reviser not told why repeats "
            "itself. Use Next.back_to_with."
        )
    if not (_says(decision.feedback, chars) and _says(decision.feedback, LIMIT)):
        return (
            f"the feedback {shown(decision.feedback)} should state the count ({chars}) and the limit "
            f"({LIMIT}) as digits, e.g. '{chars} characters, limit {LIMIT}'."
        )
    return None
