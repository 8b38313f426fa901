"""Lab 02's build-it cell and exercises.

Build it: `check_run(my_run)`, the heart of the runtime. `my_run(task, decide, tools,
max_turns, max_tools)` returns ``{"stop", "turns", "tool_calls", "answer", "citation"}``:
each turn it asks `decide(task, observations)` for one proposal, validates it
(`labkit.core.runtime.validate_decision` raises ValueError for a malformed one), and either stops
or runs exactly one tool — with the stop reasons of the contract:

- ``provider_error``   decide raised an OSError (a model server that is down);
- ``invalid_decision`` decide raised anything else, or the proposal does not validate;
- ``unread_citation``  a final answer cites an id no source tool returned in this run;
- ``final``            a valid final answer;
- ``tool_limit``       a tool proposed after `max_tools` tool calls;
- ``turn_limit``       `max_turns` decisions without a final answer.

A tool that raises is an observation ``{"error": ...}``, not a stop. The checker runs your
`my_run` and labkit's `run` on the same scripted and hostile policies, with tools that count
their calls, and reports the first case where the stop, the counts, the answer, or a tool
that ran when it must not, differ.

Exercises:

1. `check_stop_policy(reason, policy)`: a policy that makes `run` stop with `reason`;
2. `check_pass_hat_k(fn)`: pass^k of one case, by hand;
3. `check_budget(tokens)`: the smallest token budget a replayed model episode fits in;
4. `check_missing_rule(stop)`: which rule keeps a stop-only grader from being fooled.

Model episodes are always replayed from `fixtures/trials/` (never `LABKIT_MODEL`), so a
checker answers the same offline and in a live session.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.baseline.controllers import docuctl_tools, scripted
from labkit.baseline.grading import outcome
from labkit.baseline.task import Task, task_from
from labkit.core.check import Check, Raised, call, crashed, fail, not_a_function, unanswered
from labkit.core.errors import LabError
from labkit.core.progress import exercise
from labkit.core.runtime import STOP_REASONS, Budget, Tool, run
from labkit.decision_loop.evaluation import case_by_id, replay_trials
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.tables import pass_hat_k
from labkit.model.replay import TRIALS, ReplayBackend

__all__ = [
    "check_budget",
    "check_missing_rule",
    "check_pass_hat_k",
    "check_run",
    "check_stop_policy",
    "reference_table",
    "scenarios",
]

TASK = Task("exercise", "rollback", "How do I restore the last release?", "v2")
KEYS = ("stop", "turns", "tool_calls", "answer", "citation")
# The limits exercise 1 runs under. Every non-final action spends a tool, so turn_limit
# needs max_turns <= max_tools and tool_limit needs max_turns > max_tools: no one setting
# reaches both, and turn_limit gets its own.
LIMITS = {"max_turns": 3, "max_tools": 2}
TURN_LIMITS = {"max_turns": 2, "max_tools": 3}
REACHABLE = ("final", "invalid_decision", "provider_error", "tool_limit", "turn_limit", "unread_citation")
BUDGET_CASE = "deploy-build"  # exercise 3: SmolLM2's base-prompt T=0 episode, replayed
# Exercise 4: the example prompt at L1, temperature 0 — the run whose episodes the worked
# example turned from tool_limit into unread_citation.
RULE_RUN = TRIALS / "docuctl-smollm2-example-t0.jsonl"


def _searcher(task: Any, observations: list) -> dict[str, Any]:
    return {"action": "search", "query": task.question}


def _raises(error: BaseException) -> Callable[..., Any]:
    def policy(task: Any, observations: list) -> Any:
        if observations:
            raise error
        return _searcher(task, observations)

    return policy


def _says(*decisions: Any) -> Callable[..., Any]:
    def policy(task: Any, observations: list) -> Any:
        return decisions[min(len(observations), len(decisions) - 1)]

    return policy


def _broken_read(**args: Any) -> Any:
    raise RuntimeError("storage offline")


def _after_error(task: Any, observations: list) -> dict[str, Any]:
    """Search, read the first hit; if the read failed, say so (whatever the error's wording)."""
    if (
        observations
        and isinstance(observations[-1]["result"], dict)
        and "error" in observations[-1]["result"]
    ):
        return {"action": "final", "answer": "the page could not be read", "citation": ""}
    return scripted(task, observations)


READ_DEPLOY = {"action": "read", "id": "rollback-v2"}
FINAL = {"action": "final", "answer": "docuctl release revert --env staging", "citation": "rollback-v2"}


def scenarios() -> list[tuple[str, Callable[..., Any], dict[str, int], bool, str]]:
    """(name, policy, limits, broken read tool?, what the contract says) for every checked case."""
    small, roomy = {"max_turns": 3, "max_tools": 2}, {"max_turns": 4, "max_tools": 3}
    return [
        (
            "scripted search, read, answer",
            scripted,
            small,
            False,
            "a valid final answer citing a page read: final",
        ),
        (
            "an unknown action",
            _says({"action": "delete_page", "id": "x"}),
            small,
            False,
            "an action no tool provides is invalid_decision, and nothing runs",
        ),
        (
            "a proposal that is not an object",
            _says("search the docs"),
            small,
            False,
            "a proposal that is not a dict is invalid_decision",
        ),
        (
            "an extra field",
            _says({"action": "search", "query": "q", "sudo": True}),
            small,
            False,
            "a field the tool does not declare is invalid_decision, and the tool must not run",
        ),
        (
            "a missing field",
            _says({"action": "read"}),
            small,
            False,
            "a missing argument is invalid_decision",
        ),
        (
            "a number where a string is due",
            _says({"action": "read", "id": 7}),
            small,
            False,
            "a wrongly typed argument is invalid_decision",
        ),
        (
            "decide raises KeyError",
            _raises(KeyError("result")),
            small,
            False,
            "any exception from the policy is invalid_decision (turn 2), never a crash",
        ),
        (
            "decide raises ConnectionError",
            _raises(ConnectionError("refused")),
            small,
            False,
            "an OSError from the policy is provider_error",
        ),
        (
            "keeps searching, 2 tools",
            _searcher,
            small,
            False,
            "a tool proposed after max_tools calls is tool_limit, and it does not run",
        ),
        (
            "keeps searching, 3 tools, 2 turns",
            _searcher,
            {"max_turns": 2, "max_tools": 3},
            False,
            "max_turns decisions without a final is turn_limit",
        ),
        (
            "cites a page it never read",
            _says(FINAL),
            small,
            False,
            "a citation no source tool returned in this run is unread_citation",
        ),
        (
            "searches, then cites a hit unread",
            _says({"action": "search", "query": TASK.question}, FINAL),
            small,
            False,
            "a search hit is not a page read: citing it without reading it is unread_citation",
        ),
        (
            "reads, then cites it",
            _says(READ_DEPLOY, FINAL),
            small,
            False,
            "a citation of a page read in this run is final",
        ),
        (
            "a tool that raises",
            _after_error,
            roomy,
            True,
            "a tool that raises is an observation {'error': ...}; the episode goes on",
        ),
        (
            "final with a blank answer",
            _says({"action": "final", "answer": " ", "citation": ""}),
            small,
            False,
            "a blank answer is invalid_decision",
        ),
    ]


def _tools(log: list[str], broken: bool) -> dict[str, Tool]:
    tools = docuctl_tools(TASK)
    if broken:
        tools["read"] = Tool("read", {"id": "str"}, _broken_read, source=True)

    def counted(tool: Tool) -> Tool:
        def go(**args: Any) -> Any:
            log.append(tool.name)
            return tool.call(**args)

        return Tool(tool.name, tool.params, go, tool.source, tool.description)

    return {name: counted(tool) for name, tool in tools.items()}


def reference_table() -> pd.DataFrame:
    """labkit's `run` on every case `check_run` holds: what a matching `my_run` returns."""
    rows = []
    for name, policy, limits, broken, _ in scenarios():
        got = run(TASK, policy, tools=_tools([], broken), **limits)
        rows.append(
            {"case": name, "stop": got["stop"], "turns": got["turns"], "tool calls": got["tool_calls"]}
        )
    return pd.DataFrame(rows).set_index("case")


@exercise("02", "run")
def check_run(my_run: Callable[..., Any] | None) -> Check:
    """Build it: the heart of `run` (see the module docstring)."""
    if (
        refused := not_a_function(
            my_run, "my_run must be a function (task, decide, tools, max_turns, max_tools)"
        )
    ) is not None:
        return refused
    rows = []
    for name, policy, limits, broken, rule in scenarios():
        mine: list[str] = []
        try:
            got = call(my_run, TASK, policy, _tools(mine, broken), **limits)
        except Raised as raised:
            if isinstance(raised.error, LabError):
                raise raised.error from None
            return crashed(
                raised.error, f"on the case '{name}' — a runtime must turn that into a stop reason"
            )
        want = run(TASK, policy, tools=_tools([], broken), **limits)
        if not isinstance(got, dict) or not set(KEYS) <= set(got):
            return fail(f"my_run returned {got!r} on '{name}'; return a dict with {', '.join(KEYS)}.")
        wrong = [key for key in KEYS if got[key] != want[key]]
        if len(mine) != got["tool_calls"]:
            return fail(
                f"On '{name}' your run reported {got['tool_calls']} tool calls but the tools ran "
                f"{len(mine)} times: count every call, and only calls that ran."
            )
        if wrong:
            # The stop first: a wrong stop explains the wrong counts and answer that follow it.
            shown = ", ".join(f"{key}={got[key]!r} (expected {want[key]!r})" for key in wrong[:2])
            return fail(f"On '{name}': {shown}. The contract: {rule}.")
        rows.append(
            {"case": name, "stop": got["stop"], "turns": got["turns"], "tool calls": got["tool_calls"]}
        )
    table = pd.DataFrame(rows).set_index("case")
    return Check(
        True, f"your run matches labkit's on all {len(rows)} cases, and no tool ran that should not.", table
    )


@exercise("02", "stop_policy", payload=lambda reason, policy: {"reason": str(reason)})
def check_stop_policy(reason: str, policy: Callable[[Task, list[dict[str, Any]]], Any] | None) -> Check:
    """Exercise 1: a policy that makes `run` stop with `reason`.

    Runs on the rollback question under max_turns 3, max_tools 2 — except turn_limit, under
    max_turns 2, max_tools 3 (TURN_LIMITS: no single setting reaches both limits).
    """
    if reason not in STOP_REASONS:
        return fail(f"{reason!r} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
    if reason not in REACHABLE:
        return fail(
            f"{reason!r} needs a timer, a budget or a signal from the caller, which a policy alone "
            f"cannot set; try one of {', '.join(REACHABLE)}."
        )
    if (refused := not_a_function(policy, "a policy is a function (task, observations)")) is not None:
        return refused
    limits = TURN_LIMITS if reason == "turn_limit" else LIMITS
    try:
        result = run(TASK, policy, tools=docuctl_tools(TASK), **limits)
    except LabError as error:  # the runtime re-raises the lab's own errors, a policy's included
        return fail(f"your policy raised a LabError, which the runtime re-raises rather than counts: {error}")
    shown = ", ".join(f"{k}={v}" for k, v in limits.items())
    if result["stop"] == reason:
        detail = f" ({result['detail']})" if result["detail"] else ""
        return Check(
            True,
            f"stop={reason} after {result['turns']} turn(s) and {result['tool_calls']} tool call(s) "
            f"under {shown}{detail}.",
        )
    return fail(
        f"under {shown} your policy ended with stop={result['stop']} "
        f"({result['detail'] or 'no detail'}); the table of stop reasons says what each one needs."
    )


@exercise("02", "pass_hat_k")
def check_pass_hat_k(fn: Callable[[int, int, int], float] | None) -> Check:
    """Exercise 2: pass^k for one case, c passes out of n trials (k <= n)."""
    if (refused := not_a_function(fn, "my_pass_hat_k must be a function (c, n, k)")) is not None:
        return refused
    cases = [(5, 5, 5), (0, 5, 1), (3, 5, 1), (3, 5, 2), (4, 5, 4), (2, 5, 3), (9, 10, 5)]
    for c, n, k in cases:
        try:
            got = call(fn, c, n, k)
        except Raised as raised:
            return crashed(raised.error, f"on ({c}, {n}, {k})")
        want = pass_hat_k(c, n, k)
        if not isinstance(got, int | float) or not math.isclose(got, want, abs_tol=1e-9):
            with_replacement = isinstance(got, int | float) and math.isclose(got, (c / n) ** k)
            hint = " That is (c/n)**k: the k trials are drawn without replacement." * with_replacement
            return fail(f"fn({c}, {n}, {k}) = {got!r}, expected {want:.4f}.{hint}")
    return Check(True, f"all {len(cases)} checks match C(c,k)/C(n,k).")


def _budget_episode(budget: Budget | None) -> dict[str, Any]:
    case = case_by_id(BUDGET_CASE)
    task = task_from(case)
    policy = docuctl_policy("base", backend=ReplayBackend())
    return run(task, policy, tools=docuctl_tools(task), max_turns=3, max_tools=2, budget=budget)


@exercise("02", "budget", payload=lambda tokens: {"tokens": tokens if type(tokens) is int else None})
def check_budget(tokens: int | None) -> Check:
    """Exercise 3: the smallest token budget under which the replayed episode is not cut short.

    The episode is SmolLM2's recorded temperature-0 run on `BUDGET_CASE` with the `base`
    prompt (replayed, so it spends exactly the tokens it spent live).
    """
    if unanswered(tokens):
        return fail("not attempted yet: replace the `...` with a number of tokens and run the cell again")
    if type(tokens) is not int or tokens < 1:
        return fail(f"give the budget as a positive int of tokens, not {tokens!r}.")
    free = _budget_episode(None)
    needed = int(free["usage"]["prompt_tokens"] + free["usage"]["completion_tokens"])
    capped = _budget_episode(Budget(tokens=tokens))
    if capped["stop"] == "budget":
        return fail(f"too small: the episode stopped with stop=budget ({capped['detail']}).")
    if tokens > needed:
        return fail("enough, but not the smallest budget that lets this episode finish: add up its tokens.")
    turns = free["turns"]
    return Check(True, f"{needed} tokens is exactly what the {turns} decisions of this episode spent.")


@exercise("02", "missing_rule", payload=lambda stop: {"stop": str(stop)})
def check_missing_rule(stop: str | None) -> Check:
    """Exercise 4: the stop reason whose rule keeps a stop-only grader from counting failures.

    Answered with what `RULE_RUN` (example prompt, L1, T=0) shows when that rule is lifted:
    how many episodes would then have ended `final`, and how many of those answers
    `labkit.baseline.grading.outcome` passes.
    """
    if unanswered(stop):
        return fail("not attempted yet: name a stop reason (a string) and run the cell again")
    if stop not in STOP_REASONS:
        return fail(f"{stop!r} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
    rows = replay_trials(RULE_RUN)
    by_stop = pd.Series([row["stop"] for row in rows]).value_counts()
    if stop != "unread_citation":
        ended = ", ".join(f"{name} {count}" for name, count in by_stop.items())
        return fail(
            f"with the example prompt at L1 the episodes ended {ended}: removing the {stop} rule changes "
            "few of them, if any. Which rule refused the answers the model did give?"
        )
    refused = [row for row in rows if row["stop"] == "unread_citation"]
    proposed = [row["result"]["trace"][-1]["decision"] for row in refused]
    right = sum(
        outcome(case_by_id(row["case"]), {"stop": "final", "answer": d["answer"], "citation": d["citation"]})
        for row, d in zip(refused, proposed, strict=True)
    )
    finals = len(refused) + int(by_stop.get("final", 0))
    passed = sum(row["passed"] for row in rows)
    return Check(
        True,
        f"without it, {finals} of these {len(rows)} episodes end `final` (successes, to a stop-only grader); "
        f"outcome() passes {passed + right}.",
    )
