"""Checkers for lab 04's exercises. Each prints one line per finding and returns True or False.

A checker never raises on a wrong answer (a notebook with a half-done exercise still runs
top to bottom); it says what is not right yet, in terms of the lab. It runs the answer
the way the lab does — on a FakeClock, through the real scheduler — rather than
inspecting its source.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labkit.orchestrator.clock import FakeClock
from labkit.orchestrator.errors import GraphError
from labkit.orchestrator.experiments import Reviser, flaky, retry_graph
from labkit.orchestrator.graph import Graph
from labkit.orchestrator.retry import RetryPolicy
from labkit.orchestrator.route import Next

STUBBORN = "Search now much faster everywhere"  # 33 characters, whatever it is told


def _report(problems: list[str], success: str) -> bool:
    for problem in problems:
        print(f"✗ not yet: {problem}")
    if not problems:
        print(f"✓ {success}")
    return not problems


def check_retry_policy(policy: Any) -> bool:
    """Exercise 1: 3 retries after the first try, waits 0.2, 0.4, 0.8 s, connection and
    timeout errors only."""
    if not isinstance(policy, RetryPolicy):
        return _report([f"expected a RetryPolicy, got {policy!r}"], "")
    problems = []
    if policy.max_attempts != 4:
        problems.append(f"max_attempts={policy.max_attempts} allows {policy.max_attempts - 1} retries; "
                        "max_attempts counts the first try, so 3 retries need 4")
    clock = FakeClock()
    result = retry_graph(flaky(3, ConnectionResetError("reset by peer")), policy).run(clock=clock)
    waits = [round(s, 6) for s in clock.sleeps]
    if policy.max_attempts == 4 and result.status != "completed":
        problems.append(f"a job that fails 3 times with ConnectionResetError then succeeds ended "
                        f"{result.status}: {result.reason}")
    if waits != [0.2, 0.4, 0.8][: len(waits)]:
        problems.append(f"the waits were {waits}; expected 0.2, 0.4, 0.8 (initial_interval, backoff_factor)")
    for error in (TimeoutError("slow"), ConnectionError("down")):
        if not policy.retryable(error):
            problems.append(f"{type(error).__name__} should be retried")
    for error in (ValueError("bad argument"), KeyError("missing")):
        if policy.retryable(error):
            problems.append(f"{type(error).__name__} is retried: repeating a bad call will not fix it")
    return _report(problems, "4 attempts, waits 0.2/0.4/0.8 s, only transient errors retried")


def check_router(router: Callable[[Any], Any]) -> bool:
    """Exercise 2: continue at most 40 words; otherwise back to 'summarize', saying why."""
    problems = []
    for words in (12, 40):
        decision = router({"words": words})
        if decision != Next.Continue:
            problems.append(f"{words} words (within 40) returned {decision!r}, expected Next.Continue")
    for words in (41, 120):
        decision = router({"words": words})
        if not isinstance(decision, Next) or decision.kind != "goto" or decision.job != "summarize":
            problems.append(f"{words} words returned {decision!r}, expected a Goto to 'summarize'")
        elif decision.feedback is None:
            problems.append(f"{words} words went back without feedback: "
                            "a reviser not told why repeats itself")
        elif str(words) not in decision.feedback or "40" not in decision.feedback:
            problems.append(f"the feedback {decision.feedback!r} should state the count ({words}) "
                            "and the limit (40)")
    return _report(problems, "within the limit continues; over it goes back with the count and the limit")


def check_loop_graph(build: Callable[[Callable], Graph]) -> bool:
    """Exercise 3: `build(reviser)` returns draft → revise → review → publish with the loop
    as a route. It must validate, converge with the scripted reviser, and end as a dead
    letter — publish cancelled, never run — with a reviser that never improves."""
    problems = []
    try:
        converging = build(Reviser()).run(max_visits=5, clock=FakeClock())
        stubborn = build(lambda ctx: STUBBORN).run(max_visits=5, clock=FakeClock())
    except GraphError as error:
        return _report([f"validate() refused the graph: {error}"], "")
    for name in ("draft", "revise", "review", "publish"):
        if name not in converging.states:
            problems.append(f"the graph has no job {name!r}")
    if problems:
        return _report(problems, "")
    if converging.status != "completed" or converging.states["publish"] != "completed":
        problems.append(f"with the scripted reviser the run ended {converging.status} "
                        f"({converging.reason}); expected it to converge and publish")
    elif len(converging.results["publish"]) > 26:
        problems.append(f"published {converging.results['publish']!r}, over 26 characters")
    if stubborn.status != "dead_letter":
        problems.append(f"with a reviser that never improves the run ended {stubborn.status}; "
                        "expected dead_letter")
    if stubborn.visits["publish"]:
        problems.append("publish ran on a draft the review never accepted")
    return _report(problems, "validates, converges with feedback, and dead-letters a loop that never does")


def check_worst_case(answer: Any) -> bool:
    """Exercise 4: max_visits=4, max_attempts=3: how many calls of one job at most, in one run?"""
    if answer == 12 and type(answer) is int:
        return _report([], "12: each of at most 4 visits makes at most 3 attempts")
    return _report([f"{answer!r}: each visit (a run of the job) can make up to max_attempts tries"], "")
