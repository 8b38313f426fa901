"""The cases lab 04's build-it checkers put to a learner's answer, and what a wrong answer missed.

The router: the lengths the lab mentions (SHOWN_CHARS) and others drawn from a fixed seed
(`router_chars`); `router_problem` says what is wrong with one answer, down to the numbers a
feedback must hold.

The ready step: READY_CASES (each a rule of the ready step), GRAPHS and ROUNDS are the cases the lab shows;
`hidden_cases()` and `made_up()` draw small graphs from fixed seeds, printed nowhere, whose
answers `reference` (the ready step itself) gives — so a memorised table of the shown cases
fails. `ask` puts one case to the learner's step (on copies, within the time limit) and
refuses, in a sentence, an answer that is not a list of job ids; `ready_hint` says what a
wrong answer missed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from labkit.core.answers import shown
from labkit.core.check import Check, Raised, call, crashed, fail
from labkit.core.text import shorten
from labkit.routing.experiments import LIMIT
from labkit.routing.route import Next

# (deps, states, the jobs that may start now): each a rule of the ready step.
READY_CASES: list[tuple[str, dict[str, list[str]], dict[str, str], list[str]]] = [
    (
        "nothing has run yet",
        {"a": [], "b": ["a"], "c": []},
        {"a": "pending", "b": "pending", "c": "pending"},
        ["a", "c"],
    ),
    ("a dependency is still running", {"a": [], "b": ["a"]}, {"a": "running", "b": "pending"}, []),
    (
        "a dependency completed",
        {"a": [], "b": ["a"], "c": ["a"]},
        {"a": "completed", "b": "pending", "c": "pending"},
        ["b", "c"],
    ),
    (
        "one of two dependencies completed",
        {"a": [], "b": [], "c": ["a", "b"]},
        {"a": "completed", "b": "running", "c": "pending"},
        [],
    ),
    ("a dependency failed", {"a": [], "b": ["a"]}, {"a": "failed", "b": "pending"}, []),
    (
        "one job is running and one completed",
        {"a": [], "b": [], "c": []},
        {"a": "running", "b": "completed", "c": "pending"},
        ["c"],
    ),
    (
        "jobs are declared z, m, a",
        {"z": [], "m": [], "a": []},
        {"z": "pending", "m": "pending", "a": "pending"},
        ["z", "m", "a"],
    ),
]


GRAPHS = {
    "diamond": {"fetch": [], "parse": ["fetch"], "stats": ["fetch"], "report": ["parse", "stats"]},
    "chain": {"a": [], "b": ["a"], "c": ["b"], "d": ["c"]},
    "fan-out/fan-in": {
        "start": [],
        **{f"w{i}": ["start"] for i in range(4)},
        "join": [f"w{i}" for i in range(4)],
    },
}


ROUNDS = {
    "diamond": [["fetch"], ["parse", "stats"], ["report"]],
    "chain": [["a"], ["b"], ["c"], ["d"]],
    "fan-out/fan-in": [["start"], ["w0", "w1", "w2", "w3"], ["join"]],
}


STATES = ("pending", "running", "completed", "failed", "cancelled")


_NAMES = ("fetch", "parse", "load", "clean", "index", "score", "merge", "train", "report", "audit", "plot",
          "ship")


def reference(deps: Mapping[str, Sequence[str]], states: Mapping[str, str]) -> list[str]:
    """The ready step itself: the checker's answer for cases it makes up."""
    return [job for job, needs in deps.items()
            if states[job] == "pending" and all(states[dep] == "completed" for dep in needs)]


def made_up(count: int, seed: int, jobs: tuple[int, int] = (3, 5)) -> list[dict[str, list[str]]]:
    """`count` small graphs drawn from `seed`: job names from _NAMES, declared in a shuffled order."""
    rng = random.Random(seed)
    graphs = []
    for _ in range(count):
        names = rng.sample(_NAMES, rng.randint(*jobs))
        graphs.append({job: rng.sample(names[:i], rng.randint(0, min(2, i))) for i, job in enumerate(names)})
    return graphs


def hidden_cases() -> list[tuple[dict[str, list[str]], dict[str, str], list[str]]]:
    """Cases the checker holds beside READY_CASES, printed nowhere: a remembered table fails them."""
    rng = random.Random(2404)
    cases = []
    for deps in made_up(24, 2404):
        states = {job: rng.choices(STATES, weights=(5, 2, 5, 1, 1))[0] for job in deps}
        cases.append((deps, states, reference(deps, states)))
    return cases


class Refused(Exception):
    """A learner's answer that ends the check: carries the verdict."""

    def __init__(self, verdict: Check) -> None:
        super().__init__(verdict.message)
        self.verdict = verdict


def as_jobs(got: Any, where: str) -> list[str]:
    """The ready step's answer as a list of job names, or Refused saying what it should be."""
    if not isinstance(got, list | tuple):
        raise Refused(fail(f"{where}, your step returned {shown(got)} ({type(got).__name__}), not a list "
                            "of jobs: return a list such as ['a', 'c'], in declaration order."))
    jobs = list(got)
    for job in jobs:
        if type(job) is not str:
            raise Refused(fail(f"{where}, your step's list holds {shown(job)} ({type(job).__name__}), not "
                                "a job: put job ids (the keys of deps) in it."))
    return jobs


def ask(ready: Callable[..., Any], deps: Mapping[str, Sequence[str]], states: Mapping[str, str],
         where: str) -> list[str]:
    """The learner's step on copies of (deps, states), within the time limit."""
    try:
        got = call(ready, {k: list(v) for k, v in deps.items()}, dict(states))
    except Raised as raised:
        raise Refused(crashed(raised.error, where)) from None
    return as_jobs(got, where.capitalize())


def rounds_with(ready: Callable[..., Any], deps: Mapping[str, Sequence[str]], where: str) -> list[list[str]]:
    """Run `deps` round by round: start every ready job, let them all complete, repeat."""
    states = dict.fromkeys(deps, "pending")
    rounds: list[list[str]] = []
    while any(state == "pending" for state in states.values()) and len(rounds) <= len(deps):
        started = ask(ready, deps, states, where)
        if not started:
            break
        rounds.append(started)
        states.update(dict.fromkeys(started, "completed"))
    return rounds


def graph_text(deps: Mapping[str, Sequence[str]], states: Mapping[str, str]) -> str:
    """A made-up case in a line: each job, its state and what it needs, in declaration order."""
    parts = [f"{job} {states[job]}" + (f" (needs {', '.join(needs)})" if needs else "")
             for job, needs in deps.items()]
    return shorten("; ".join(parts), 170)


def ready_hint(deps: Mapping[str, Sequence[str]], states: Mapping[str, str], got: list[str],
                want: list[str]) -> str:
    """What is wrong with one answer of the ready step, in one sentence."""
    for job in got:
        if job not in states:
            return f"{shown(job)} is not a job of this graph."
        if states[job] != "pending":
            return f"{job} is {states[job]}, and only a pending job may start (nothing is started again)."
        waiting = [dep for dep in deps[job] if states[dep] != "completed"]
        if waiting:
            return (f"{job} still needs {waiting[0]}, which is {states[waiting[0]]}: a job starts only "
                    "when every dependency completed.")
    missing = [job for job in want if job not in got]
    if missing:
        return f"{missing[0]} may start: it is pending and every dependency completed."
    if len(got) != len(set(got)):
        return "each job may start once: list it once."
    return "return them in declaration order, so a run never depends on the alphabet or a hash map."


# The verdicts a router is asked about: these four, which the lab's text mentions, and
# lengths drawn here (printed nowhere), so no table of remembered answers passes.
SHOWN_CHARS = (12, LIMIT, LIMIT + 1, 45)


def router_chars() -> list[int]:
    rng = random.Random(4026)
    return [*SHOWN_CHARS, *rng.sample(range(1, LIMIT), 3), *rng.sample(range(LIMIT + 2, 140), 4)]


def says(feedback: str, number: int) -> bool:
    """Whether `feedback` states `number` as digits of its own (27 in "27 chars", not in "127")."""
    return re.search(rf"(?<!\d){number}(?!\d)", feedback) is not None


def router_problem(decision: Any, chars: int) -> Check | None:
    """What is wrong with the router's answer to a verdict of `chars` characters, or None."""
    if type(decision) is not Next:
        return fail(f"for a verdict of {chars} characters your router returned {shown(decision)}, not a "
                    "Next: return Next.Continue or Next.back_to_with('revise', feedback).")
    if chars <= LIMIT:
        if decision.kind != "continue":
            return fail(f"{chars} characters is within the limit of {LIMIT}, but your router returned "
                        f"{shown(decision)}: it should be Next.Continue.")
        return None
    if decision.kind != "goto" or type(decision.job) is not str or decision.job != "revise":
        return fail(f"{chars} characters is over the limit, but your router returned {shown(decision)}: "
                    "send it back to 'revise'.")
    if decision.feedback is None:
        return fail("over the limit your router goes back without feedback: a reviser not told why "
                    "repeats itself. Use Next.back_to_with.")
    feedback = str(decision.feedback)
    if not (says(feedback, chars) and says(feedback, LIMIT)):
        return fail(f"the feedback {shown(feedback)} should state the count ({chars}) and the limit "
                    f"({LIMIT}): it must hold both numbers as digits, {chars} for the text's length and "
                    f"{LIMIT} for the limit, e.g. '{chars} characters, limit {LIMIT}'.")
    return None
