"""Lab 02's build-it cell and exercises, as `labkit.exercises.lab02`.

Build it, `check_run(my_run)`: the heart of `labkit.core.runtime.run`. `my_run(task, decide,
tools, max_turns, max_tools)` returns {"stop", "turns", "tool_calls", "answer", "citation"}; it
runs beside labkit's `run` on every case of `run_cases` (more than the reference table shows),
with tools that count their calls. Exercises: 1 `check_stop_policy`, 2 `check_pass_hat_k`,
3 `check_budget`, 4 `check_missing_rule`. Model episodes are replayed from `fixtures/trials/`
(never `LABKIT_MODEL`). A learner's function runs on copies within a time limit
(`labkit.core.check.call`); whatever it returns or raises ends in a verdict.
"""

import json
import math
import random
from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.baseline.controllers import docuctl_tools
from labkit.baseline.grading import outcome
from labkit.baseline.task import Task, task_from
from labkit.core.answers import shown
from labkit.core.check import Check, Raised, TimedOut, call, crashed, fail, not_a_function, unanswered
from labkit.core.errors import LabError
from labkit.core.progress import exercise
from labkit.core.runtime import MAX_NUMBER, STOP_REASONS, Budget, run
from labkit.core.text import shorten
from labkit.decision_loop.evaluation import case_by_id, replay_trials
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.run_cases import TASK, case_tools, cases, reference_table, run_reference
from labkit.decision_loop.tables import pass_hat_k
from labkit.model.replay import TRIALS, ReplayBackend

__all__ = [
    "RULE_RUN",
    "check_budget",
    "check_missing_rule",
    "check_pass_hat_k",
    "check_run",
    "check_stop_policy",
    "reference_table",
]

KEYS = ("stop", "turns", "tool_calls", "answer", "citation")
# Exercise 1's limits. Every non-final action spends a tool, so turn_limit needs
# max_turns <= max_tools and tool_limit max_turns > max_tools: turn_limit gets its own.
LIMITS = {"max_turns": 3, "max_tools": 2}
TURN_LIMITS = {"max_turns": 2, "max_tools": 3}
REACHABLE = ("final", "invalid_decision", "provider_error", "tool_limit", "turn_limit", "unread_citation")
BUDGET_CASE = "deploy-build"  # exercise 3: SmolLM2's base-prompt T=0 episode, replayed
RULE_RUN = TRIALS / "docuctl-smollm2-example-t0.jsonl"  # exercise 4: the example prompt at L1, T=0
# Exercise 2: these cases and RANDOM_CASES more drawn afresh every check, so no list can be memorised.
PASS_HAT_K_CASES = ((5, 5, 5), (0, 5, 1), (3, 5, 1), (3, 5, 2), (4, 5, 4), (2, 5, 3), (9, 10, 5))
RANDOM_CASES = 3


@exercise("02", "run")
def check_run(my_run: Callable[..., Any] | None) -> Check:
    """Build it: the heart of `run` (see the module docstring)."""
    shape = "my_run must be a function (task, decide, tools, max_turns, max_tools)"
    if (refused := not_a_function(my_run, shape)) is not None:
        return refused
    rows, hidden = [], 0
    for case in cases():
        where = f"'{case.name}'" + ("" if case.shown else " (a case the reference table does not show)")
        ran: list[str] = []
        try:
            got = call(my_run, case.task, case.policy, case_tools(ran, case.tools, case.task), **case.limits)
        except Raised as raised:
            hint = (
                "" if isinstance(raised.error, TimedOut) else " — a runtime must turn that into a stop reason"
            )
            return crashed(raised.error, f"on the case {where}{hint}")
        if not isinstance(got, dict) or any(key not in got for key in KEYS):
            return fail(f"my_run returned {shown(got)} on {where}; return a dict with {', '.join(KEYS)}.")
        try:  # plain data, compared as what it shows
            mine = json.loads(json.dumps({key: got[key] for key in KEYS}))
        except (TypeError, ValueError):
            return fail(f"On {where} my_run returned {shown(got)}: return plain str, int and None values.")
        want = run_reference(case)
        if len(ran) != mine["tool_calls"]:
            return fail(
                f"On {where} your run reported {shown(mine['tool_calls'])} tool calls but the tools ran "
                f"{len(ran)} times: count every call, and only calls that ran."
            )
        # The stop first: a wrong stop explains the wrong counts and answer that follow it.
        if wrong := [key for key in KEYS if mine[key] != want[key]]:
            said = ", ".join(f"{key}={shown(mine[key], 60)} (expected {want[key]!r})" for key in wrong[:2])
            return fail(f"On {where}: {said}. The contract: {case.rule}.")
        if case.shown:
            rows.append(
                {"case": case.name, "stop": mine["stop"], "turns": mine["turns"], "tool calls": len(ran)}
            )
        hidden += not case.shown
    return Check(
        True,
        f"your run matches labkit's on all {len(rows)} cases of the reference table and {hidden} it does not "
        "show, and no tool ran that should not.",
        pd.DataFrame(rows).set_index("case"),
    )


def _text_payload(**values: Any) -> dict[str, Any]:
    """What a progress file keeps of a learner's string answers: strings, cut to 100 characters."""
    return {name: shorten(value, 100) if isinstance(value, str) else None for name, value in values.items()}


@exercise("02", "stop_policy", payload=lambda reason, policy: _text_payload(reason=reason))
def check_stop_policy(reason: str, policy: Callable[[Task, list[dict[str, Any]]], Any] | None) -> Check:
    """Exercise 1: a policy that makes `run` stop with `reason`, on the rollback question under
    LIMITS (TURN_LIMITS for turn_limit), within the checkers' time limit."""
    if not isinstance(reason, str) or reason not in STOP_REASONS:
        return fail(f"{shown(reason, 40)} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
    if reason not in REACHABLE:
        return fail(
            f"{reason!r} needs a timer, a budget or a signal from the caller, which a policy alone "
            f"cannot set; try one of {', '.join(REACHABLE)}."
        )
    if (refused := not_a_function(policy, "a policy is a function (task, observations)")) is not None:
        return refused
    limits = TURN_LIMITS if reason == "turn_limit" else LIMITS
    under = ", ".join(f"{k}={v}" for k, v in limits.items())
    try:
        # The runtime calls the policy in this thread; TimedOut (a BaseException) passes its handlers.
        result = call(run, TASK, policy, tools=case_tools([]), **limits)
    except Raised as raised:
        if isinstance(raised.error, LabError):  # the runtime re-raises the lab's own errors
            return fail(
                "your policy raised a LabError, which the runtime re-raises rather than counts: "
                f"{shorten(str(raised.error), 200)}"
            )
        return crashed(raised.error, f"while run asked it for decisions under {under}")
    if result["stop"] == reason:
        detail = f" ({shorten(result['detail'], 120)})" if result["detail"] else ""
        turns, tools = result["turns"], result["tool_calls"]
        return Check(
            True, f"stop={reason} after {turns} turn(s) and {tools} tool call(s) under {under}{detail}."
        )
    return fail(
        f"under {under} your policy ended with stop={result['stop']} "
        f"({shorten(result['detail'] or 'no detail', 120)}); "
        "the table of stop reasons says what each one needs."
    )


def _pass_hat_k_cases() -> list[tuple[int, int, int]]:
    rng = random.Random()  # afresh every check: no fixed list to memorise
    drawn = []
    for _ in range(RANDOM_CASES):
        n = rng.randint(2, 12)
        drawn.append((rng.randint(0, n), n, rng.randint(1, n)))
    return [*PASS_HAT_K_CASES, *drawn]


@exercise("02", "pass_hat_k")
def check_pass_hat_k(fn: Callable[[int, int, int], float] | None) -> Check:
    """Exercise 2: pass^k of one case, c passes of n trials (k <= n), as a number."""
    if (refused := not_a_function(fn, "my_pass_hat_k must be a function (c, n, k)")) is not None:
        return refused
    checked = _pass_hat_k_cases()
    for c, n, k in checked:
        try:
            got = call(fn, c, n, k)
        except Raised as raised:
            return crashed(raised.error, f"on ({c}, {n}, {k})")
        want = pass_hat_k(c, n, k)
        if isinstance(got, bool) or not isinstance(got, int | float):
            return fail(
                f"fn({c}, {n}, {k}) returned {shown(got, 60)} (a {type(got).__name__}), expected the "
                f"number {want:.4f}: return a plain float."
            )
        if not 0 <= got <= 1:  # also keeps a huge int away from float conversion
            return fail(
                f"fn({c}, {n}, {k}) = {shown(got, 40)}, expected {want:.4f}: a chance is between 0 and 1."
            )
        if not math.isclose(got, want, abs_tol=1e-9):
            replaced = math.isclose(got, (c / n) ** k)
            hint = " That is (c/n)**k: the k trials are drawn without replacement." * replaced
            return fail(f"fn({c}, {n}, {k}) = {shown(got, 40)}, expected {want:.4f}.{hint}")
    return Check(
        True, f"all {len(checked)} checks match C(c,k)/C(n,k), {RANDOM_CASES} of them drawn at random."
    )


def _budget_episode(budget: Budget | None) -> dict[str, Any]:
    task = task_from(case_by_id(BUDGET_CASE))
    policy = docuctl_policy("base", backend=ReplayBackend())
    return run(task, policy, tools=docuctl_tools(task), max_turns=3, max_tools=2, budget=budget)


def _budget_payload(tokens: Any) -> dict[str, Any]:
    return {"tokens": tokens if type(tokens) is int and 0 <= tokens <= MAX_NUMBER else None}


@exercise("02", "budget", payload=_budget_payload)
def check_budget(tokens: int | None) -> Check:
    """Exercise 3: the smallest token budget under which SmolLM2's replayed episode on
    `BUDGET_CASE` (base prompt, T=0) is not cut short."""
    if unanswered(tokens):
        return fail("not attempted yet: replace the `...` with a number of tokens and run the cell again")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        return fail(f"give the budget as a positive int of tokens, not {shown(tokens, 40)}.")
    free = _budget_episode(None)
    needed = int(free["usage"]["prompt_tokens"] + free["usage"]["completion_tokens"])
    if tokens > needed:
        return fail("enough, but not the smallest budget that lets this episode finish: add up its tokens.")
    capped = _budget_episode(Budget(tokens=tokens))
    if capped["stop"] == "budget":
        return fail(f"too small: the episode stopped with stop=budget ({capped['detail']}).")
    return Check(
        True, f"{needed} tokens is exactly what the {free['turns']} decisions of this episode spent."
    )


def _rule_payload(stop: Any, finals: Any = None) -> dict[str, Any]:
    plain = type(finals) is int and 0 <= finals <= 10**6
    return _text_payload(stop=stop) | {"finals": finals if plain else None}


@exercise("02", "missing_rule", payload=_rule_payload)
def check_missing_rule(stop: str | None, finals: int | None = None) -> Check:
    """Exercise 4: the stop reason whose rule keeps a stop-only grader from counting failures,
    and `finals`: how many of `RULE_RUN`'s episodes would end `final` without that rule (a
    figure no table in the notebook shows)."""
    if unanswered(stop):
        return fail("not attempted yet: name a stop reason (a string) and run the cell again")
    if not isinstance(stop, str) or stop not in STOP_REASONS:
        return fail(f"{shown(stop, 40)} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
    rows = replay_trials(RULE_RUN)
    by_stop = pd.Series([row["stop"] for row in rows]).value_counts()
    if stop != "unread_citation":
        ended = ", ".join(f"{name} {count}" for name, count in by_stop.items())
        return fail(
            f"with the example prompt at L1 the episodes ended {ended}: removing the {stop} rule changes "
            "few of them, if any. Which rule refused the answers the model did give?"
        )
    refused = [row for row in rows if row["stop"] == "unread_citation"]
    expected = len(refused) + int(by_stop.get("final", 0))
    if unanswered(finals):
        return fail(
            f"unread_citation is the rule. Now the figure: how many of the {len(rows)} episodes would "
            "end `final` without it? Pass it as the second argument."
        )
    if isinstance(finals, bool) or not isinstance(finals, int):
        return fail(f"give the number of episodes as a plain int, not {shown(finals, 40)}.")
    if finals != expected:
        return fail(
            f"not {shown(finals, 20)}: replay the recording (replay_trials(lab02.RULE_RUN)) and count the "
            "episodes that would end `final` — those that already did, and those the rule refused."
        )
    proposed = [row["result"]["trace"][-1]["decision"] for row in refused]
    right = sum(
        outcome(case_by_id(row["case"]), {"stop": "final", "answer": d["answer"], "citation": d["citation"]})
        for row, d in zip(refused, proposed, strict=True)
    )
    passed = sum(row["passed"] for row in rows)
    return Check(
        True,
        f"without it, {expected} of these {len(rows)} episodes end `final` (successes, to a stop-only "
        f"grader); outcome() passes {passed + right}.",
    )
