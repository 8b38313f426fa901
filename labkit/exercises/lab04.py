"""Lab 04's build-it cells and exercises.

Build it, part 1: `check_router(my_router)`. The review loop's router: `my_router(verdict)`
gets the review's result ``{"text": ..., "chars": n}`` and returns `Next.Continue` when the
text fits the 26-character limit, otherwise `Next.back_to_with("revise", feedback)` with a
feedback that states the count and the limit. The checker runs your router in the lab's
draft → revise → review → publish graph, on the real scheduler and a fake clock, with the
scripted reviser (it must converge and publish within the limit) and with a reviser that
never improves (it must end as a dead letter, publish never run).

Build it, part 2: `check_ready(my_ready)`. The scheduler's ready-job step:
`my_ready(deps, states)` gets each job's dependencies (``{job: [dep, ...]}``, in declaration
order) and each job's state (``"pending"``, ``"running"``, ``"completed"``, ``"failed"``,
``"cancelled"``) and returns the jobs that may start now — pending, with every dependency
completed — in declaration order. Checked on hand-built states, then by running whole graphs
round by round with your step.

Exercises: `check_retry_policy`, `check_router` (the 40-word summary router, as
`check_summary_router`), `check_loop_graph`, `check_worst_case` (re-exported).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from labkit.exercises.check import Check, Raised, call, crashed, fail, not_a_function
from labkit.exercises.progress import exercise
from labkit.orchestrator.clock import FakeClock
from labkit.orchestrator.exercises import check_loop_graph, check_retry_policy, check_worst_case
from labkit.orchestrator.exercises import check_router as check_summary_router
from labkit.orchestrator.experiments import DRAFT, LIMIT, Reviser
from labkit.orchestrator.graph import Graph
from labkit.orchestrator.route import Next

__all__ = [
    "check_loop_graph",
    "check_ready",
    "check_retry_policy",
    "check_router",
    "check_summary_router",
    "check_worst_case",
]

STUBBORN = "Search now much faster everywhere"  # 33 characters, whatever it is told


def _graph_with(router: Callable[[Any], Any], reviser: Callable[..., str]) -> Graph:
    """The lab's review loop (draft → revise → review → publish) routed by `router`."""
    graph = Graph()
    graph.job("draft", lambda ctx: DRAFT)
    graph.job("revise", reviser, deps=["draft"])
    graph.job("review", lambda ctx: {"text": ctx.input, "chars": len(ctx.input)}, deps=["revise"])
    graph.route("review", router, targets=["revise"])
    graph.job("publish", lambda ctx: ctx.input["text"], deps=["review"])
    return graph


@exercise("04", "router")
def check_router(my_router: Callable[[Any], Any] | None) -> Check:
    """Build it: the review loop's router with its criterion in code (see the module docstring)."""
    if (refused := not_a_function(my_router, "a router is a function verdict -> Next")) is not None:
        return refused
    for chars in (12, LIMIT, LIMIT + 1, 45):
        verdict = {"text": "x" * chars, "chars": chars}
        try:
            decision = call(my_router, verdict)
        except Raised as raised:
            return crashed(raised.error, f"on a verdict of {chars} characters")
        if chars <= LIMIT and decision != Next.Continue:
            return fail(
                f"{chars} characters is within the limit of {LIMIT}, but your router returned "
                f"{decision!r}: it should be Next.Continue."
            )
        if chars > LIMIT:
            if not isinstance(decision, Next) or decision.kind != "goto" or decision.job != "revise":
                return fail(
                    f"{chars} characters is over the limit, but your router returned {decision!r}: "
                    "send it back to 'revise'."
                )
            if decision.feedback is None:
                return fail(
                    "over the limit your router goes back without feedback: a reviser not told why "
                    "repeats itself. Use Next.back_to_with."
                )
            if str(chars) not in decision.feedback or str(LIMIT) not in decision.feedback:
                return fail(
                    f"the feedback {decision.feedback!r} should state the count ({chars}) and the "
                    f"limit ({LIMIT})."
                )
    converging = _graph_with(my_router, Reviser()).run(max_visits=5, clock=FakeClock())
    stubborn = _graph_with(my_router, lambda ctx: STUBBORN).run(max_visits=5, clock=FakeClock())
    if converging.status != "completed" or len(converging.results.get("publish", "")) > LIMIT:
        return fail(f"with the scripted reviser the loop ended {converging.status} ({converging.reason}).")
    if stubborn.status != "dead_letter" or stubborn.visits["publish"]:
        return fail(
            f"with a reviser that never improves the loop ended {stubborn.status}; it should end as a "
            "dead letter without publishing."
        )
    table = pd.DataFrame(
        [
            {
                "reviser": "scripted",
                "status": converging.status,
                "revise runs": converging.visits["revise"],
                "published": converging.results["publish"],
            },
            {
                "reviser": "never improves",
                "status": stubborn.status,
                "revise runs": stubborn.visits["revise"],
                "published": "-",
            },
        ]
    ).set_index("reviser")
    return Check(
        True,
        f"within {LIMIT} continues, over it goes back with the count and the limit; the loop "
        "converges with the scripted reviser and dead-letters a stubborn one.",
        table,
    )


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
        "running and finished jobs are not started again",
        {"a": [], "b": [], "c": []},
        {"a": "running", "b": "completed", "c": "pending"},
        ["c"],
    ),
    (
        "declaration order, not alphabetical",
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


def _rounds(ready: Callable[..., Any], deps: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Run `deps` round by round: start every ready job, let them all complete, repeat."""
    states = dict.fromkeys(deps, "pending")
    rounds: list[list[str]] = []
    while any(state == "pending" for state in states.values()) and len(rounds) <= len(deps):
        started = list(call(ready, {k: list(v) for k, v in deps.items()}, dict(states)))
        if not started:
            break
        rounds.append(started)
        states.update(dict.fromkeys(started, "completed"))
    return rounds


@exercise("04", "ready")
def check_ready(my_ready: Callable[..., Any] | None) -> Check:
    """Build it: the scheduler's ready-job step (see the module docstring)."""
    if (
        refused := not_a_function(my_ready, "my_ready must be a function (deps, states) -> list of jobs")
    ) is not None:
        return refused
    for name, deps, states, want in READY_CASES:
        try:
            got = call(my_ready, {k: list(v) for k, v in deps.items()}, dict(states))
        except Raised as raised:
            return crashed(raised.error, f"when {name}")
        if list(got) != want:
            return fail(
                f"When {name} (states {states}), your step returned {list(got)}; the jobs that may start "
                f"are {want}: pending, every dependency completed, in declaration order."
            )
    rows = []
    for name, deps in GRAPHS.items():
        try:
            rounds = _rounds(my_ready, deps)
        except Raised as raised:
            return crashed(raised.error, f"running the {name} graph")
        if rounds != ROUNDS[name]:
            return fail(
                f"Running the {name} graph round by round with your step started {rounds}; expected "
                f"{ROUNDS[name]}."
            )
        rows.append({"graph": name, "rounds": len(rounds), "jobs": len(deps)})
    return Check(
        True,
        "your step starts exactly the jobs whose dependencies completed; each graph ran in its "
        "fewest rounds.",
        pd.DataFrame(rows).set_index("graph"),
    )
