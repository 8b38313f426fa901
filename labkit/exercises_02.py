"""Exercise checkers for lab 02, called from the notebook with the learner's answer.

Each returns a one-line verdict: what passed, or what to look at next. None raises on a
wrong answer; a broken answer (a policy that crashes the checker's episode) is reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from labkit.controllers import docuctl_tools
from labkit.corpus import docuctl
from labkit.errors import LabError
from labkit.evaluation import pass_hat_k
from labkit.model.docuctl import docuctl_policy
from labkit.runtime import STOP_REASONS, Budget, run
from labkit.task import Task, task_from

EXERCISE_TASK = Task("exercise", "rollback", "How do I restore the last release?", "v2")
# The limits the stop-reason exercise runs under. Every non-final action spends a tool, so
# turn_limit needs max_turns <= max_tools and tool_limit needs max_turns > max_tools: no one
# setting reaches both, and turn_limit gets its own.
LIMITS = {"max_turns": 3, "max_tools": 2}
TURN_LIMITS = {"max_turns": 2, "max_tools": 3}
REACHABLE = ("final", "invalid_decision", "provider_error", "tool_limit", "turn_limit", "unread_citation")


def check_stop_policy(reason: str, policy: Callable[[Task, list[dict[str, Any]]], Any]) -> str:
    """Exercise 1: write a policy that makes `run` stop with `reason`.

    Runs under max_turns 3, max_tools 2 — except turn_limit, under max_turns 2, max_tools 3
    (see TURN_LIMITS: no single setting reaches both limits).
    """
    if reason not in STOP_REASONS:
        return f"{reason!r} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}."
    if reason not in REACHABLE:
        reachable = ", ".join(REACHABLE)
        return f"{reason!r} needs a timer, a budget or a signal from the caller; try one of {reachable}."
    try:
        limits = TURN_LIMITS if reason == "turn_limit" else LIMITS
        result = run(EXERCISE_TASK, policy, tools=docuctl_tools(EXERCISE_TASK), **limits)
    except LabError as error:
        return f"Your policy raised a LabError, which the runtime re-raises: {error}"
    if result["stop"] == reason:
        return (
            f"Yes: stop={reason} after {result['turns']} turn(s) and {result['tool_calls']} tool call(s)"
            + (f" ({result['detail']})." if result["detail"] else ".")
        )
    return f"Not yet: your policy ended with stop={result['stop']} ({result['detail'] or 'no detail'})."


def check_pass_hat_k(fn: Callable[[int, int, int], float]) -> str:
    """Exercise 2: implement pass^k for one case, c passes out of n trials (k <= n)."""
    cases = [(5, 5, 5), (0, 5, 1), (3, 5, 1), (3, 5, 2), (4, 5, 4), (2, 5, 3), (9, 10, 5)]
    for c, n, k in cases:
        try:
            got = fn(c, n, k)
        except Exception as error:  # noqa: BLE001 - the verdict names the learner's error
            return f"fn({c}, {n}, {k}) raised {type(error).__name__}: {error}"
        want = pass_hat_k(c, n, k)
        if not isinstance(got, int | float) or not math.isclose(got, want, abs_tol=1e-9):
            hint = (
                " (that is (c/n)**k: trials are drawn without replacement)"
                if math.isclose(got if isinstance(got, int | float) else -1, (c / n) ** k)
                else ""
            )
            return f"fn({c}, {n}, {k}) = {got!r}, expected {want:.4f}{hint}."
    return f"Yes: all {len(cases)} checks match C(c,k)/C(n,k)."


def budget_case() -> dict[str, Any]:
    """The case exercise 3 is about: the first base case, replayed from the recording."""
    return docuctl().cases[0]


def check_budget(tokens: int, prompt: str = "base") -> str:
    """Exercise 3: the smallest token budget under which the replayed episode is not cut short.

    The episode is SmolLM2's recorded temperature-0 run on `budget_case()` with the `base`
    prompt (replayed, so it spends exactly the tokens it spent live).
    """
    if type(tokens) is not int or tokens < 1:
        return "Give the budget as a positive int of tokens."
    case = budget_case()
    task = task_from(case)

    def episode(budget: Budget | None) -> dict[str, Any]:
        return run(
            task, docuctl_policy(prompt), tools=docuctl_tools(task), max_turns=3, max_tools=2, budget=budget
        )

    free = episode(None)
    needed = int(free["usage"]["prompt_tokens"] + free["usage"]["completion_tokens"])
    capped = episode(Budget(tokens=tokens))
    if capped["stop"] == "budget":
        return f"Too small: the episode stopped with stop=budget ({capped['detail']})."
    if tokens > needed:
        return "Enough, but not the smallest budget that lets this episode finish: add up its tokens."
    return f"Yes: {needed} tokens is exactly what the {free['turns']} decisions of this episode spent."
