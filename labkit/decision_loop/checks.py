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

Every answer is untrusted input. A learner's function runs on copies (decisions, tool results
and tasks are built fresh for every case, and the module's own decisions are read-only), within
a time limit per case (`labkit.core.check.call`, or `time_limit` around the runtime when the
runtime calls it), and whatever it returns or raises — a subclass that compares equal to
everything, a numpy value, a huge number, a LabError — ends in a verdict sentence. labkit's own
`run` or `pass_hat_k` handed in (itself, wrapped, a partial, or called from the answer) is
recognised: "that is labkit's version; write your own". `check_run` also holds cases that
`reference_table` does not show (other limits, another task, a tool that is not a source).
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import pandas as pd

from labkit.baseline.controllers import docuctl_tools
from labkit.baseline.grading import outcome
from labkit.baseline.task import Task, task_from
from labkit.core.answers import labkits_version as _labkits_version
from labkit.core.answers import shown as _shown
from labkit.core.check import (
    Check,
    Raised,
    TimedOut,
    call,
    crashed,
    fail,
    not_a_function,
    unanswered,
)
from labkit.core.errors import LabError
from labkit.core.runtime import MAX_NUMBER, STOP_REASONS, Budget, run
from labkit.core.text import shorten
from labkit.core.verdicts import exercise
from labkit.decision_loop.answers import REFERENCES
from labkit.decision_loop.answers import handed_in as _handed_in
from labkit.decision_loop.evaluation import case_by_id, replay_trials
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.run_cases import (
    FINAL,
    READ_DEPLOY,
    TASK,
    case_tools,
    cases,
    reference_table,
    scenarios,
)
from labkit.decision_loop.tables import pass_hat_k
from labkit.model.replay import TRIALS, ReplayBackend

__all__ = [
    "FINAL",
    "READ_DEPLOY",
    "RULE_RUN",
    "TASK",
    "check_budget",
    "check_missing_rule",
    "check_pass_hat_k",
    "check_run",
    "check_stop_policy",
    "reference_table",
    "scenarios",
]

KEYS = ("stop", "turns", "tool_calls", "answer", "citation")
# The exact types a run's result holds under each key: a subclass of str or int (one that
# compares equal to everything, a numpy integer) is refused, not compared.
KEY_TYPES: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {
        "stop": (str,),
        "turns": (int,),
        "tool_calls": (int,),
        "answer": (str, type(None)),
        "citation": (str, type(None)),
    }
)
# The limits exercise 1 runs under. Every non-final action spends a tool, so turn_limit
# needs max_turns <= max_tools and tool_limit needs max_turns > max_tools: no one setting
# reaches both, and turn_limit gets its own. Read-only, like every decision below: a
# learner's function can never change what the next check compares against.
LIMITS: Mapping[str, int] = MappingProxyType({"max_turns": 3, "max_tools": 2})
TURN_LIMITS: Mapping[str, int] = MappingProxyType({"max_turns": 2, "max_tools": 3})
REACHABLE = ("final", "invalid_decision", "provider_error", "tool_limit", "turn_limit", "unread_citation")
BUDGET_CASE = "deploy-build"  # exercise 3: SmolLM2's base-prompt T=0 episode, replayed
# Exercise 4: the example prompt at L1, temperature 0 — the run whose episodes the worked
# example turned from tool_limit into unread_citation.
RULE_RUN = TRIALS / "docuctl-smollm2-example-t0.jsonl"
# Exercise 2's cases: fixed ones, and RANDOM_CASES more drawn afresh on every check, so an
# answer that memorised the fixed ones does not pass.
PASS_HAT_K_CASES = ((5, 5, 5), (0, 5, 1), (3, 5, 1), (3, 5, 2), (4, 5, 4), (2, 5, 3), (9, 10, 5))
RANDOM_CASES = 3


# -- build it ---------------------------------------------------------------------------------


def _result_problem(got: Any, where: str) -> str | None:
    """What is wrong with the shape of a `my_run` result (not a dict, a key missing, a value of
    another type than KEY_TYPES allows), or None. Read with dict's own methods, so a dict
    subclass cannot answer for itself."""
    if not isinstance(got, dict):
        return f"my_run returned {_shown(got)} on {where}; return a dict with {', '.join(KEYS)}."
    missing = [key for key in KEYS if not dict.__contains__(got, key)]
    if missing:
        return (
            f"my_run's result on {where} has no {', '.join(missing)}; return a dict with {', '.join(KEYS)}."
        )
    for key in KEYS:
        value, allowed = dict.__getitem__(got, key), KEY_TYPES[key]
        if type(value) not in allowed:
            kinds = " or ".join(
                "None" if kind is type(None) else f"a plain {kind.__name__}" for kind in allowed
            )
            return (
                f"On {where}: {key} is {_shown(value, 40)} of type {type(value).__name__}, not {kinds}; "
                "return plain values (convert with str() or int()), which compare as what they show."
            )
    return None


@exercise("02", "run")
def check_run(my_run: Callable[..., Any] | None) -> Check:
    """Build it: the heart of `run` (see the module docstring)."""
    if (
        refused := not_a_function(
            my_run, "my_run must be a function (task, decide, tools, max_turns, max_tools)"
        )
    ) is not None:
        return refused
    if (labkits := _handed_in(my_run)) is not None:
        return _labkits_version(labkits, "my_run")
    rows, hidden = [], 0
    for case in cases():
        where = f"'{case.name}'" + ("" if case.shown else " (a case the reference table does not show)")
        mine: list[str] = []
        watch = REFERENCES.watch()
        try:
            tools = case_tools(mine, case.tools, case.task)
            got = call(watch.wrap(my_run), case.task, case.policy, tools, **case.limits)
        except Raised as raised:
            if watch.seen is not None:
                return _labkits_version(watch.seen, "my_run")
            if isinstance(raised.error, TimedOut):
                return crashed(raised.error, f"on the case {where}")
            return crashed(raised.error, f"on the case {where} — a runtime must turn that into a stop reason")
        if watch.seen is not None:
            return _labkits_version(watch.seen, "my_run")
        if (problem := _result_problem(got, where)) is not None:
            return fail(problem)
        mine_result = {key: dict.__getitem__(got, key) for key in KEYS}
        want = run(case.task, case.policy, tools=case_tools([], case.tools, case.task), **case.limits)
        wrong = [key for key in KEYS if mine_result[key] != want[key]]
        if len(mine) != mine_result["tool_calls"]:
            return fail(
                f"On {where} your run reported {mine_result['tool_calls']} tool calls but the tools ran "
                f"{len(mine)} times: count every call, and only calls that ran."
            )
        if wrong:
            # The stop first: a wrong stop explains the wrong counts and answer that follow it.
            shown = ", ".join(
                f"{key}={_shown(mine_result[key], 60)} (expected {want[key]!r})" for key in wrong[:2]
            )
            return fail(f"On {where}: {shown}. The contract: {case.rule}.")
        if case.shown:
            rows.append(
                {
                    "case": case.name,
                    "stop": mine_result["stop"],
                    "turns": mine_result["turns"],
                    "tool calls": mine_result["tool_calls"],
                }
            )
        else:
            hidden += 1
    table = pd.DataFrame(rows).set_index("case")
    return Check(
        True,
        f"your run matches labkit's on all {len(rows)} cases of the reference table and {hidden} it does not "
        "show, and no tool ran that should not.",
        table,
    )


# -- exercises --------------------------------------------------------------------------------


def _text_payload(**values: Any) -> dict[str, Any]:
    """What a progress file keeps of a learner's string answers: plain strings, cut to 100 characters."""
    return {name: shorten(value, 100) if type(value) is str else None for name, value in values.items()}


@exercise("02", "stop_policy", payload=lambda reason, policy: _text_payload(reason=reason))
def check_stop_policy(reason: str, policy: Callable[[Task, list[dict[str, Any]]], Any] | None) -> Check:
    """Exercise 1: a policy that makes `run` stop with `reason`.

    Runs on the rollback question under max_turns 3, max_tools 2 — except turn_limit, under
    max_turns 2, max_tools 3 (TURN_LIMITS: no single setting reaches both limits). The episode
    runs within LIMIT_S seconds: a policy that hangs gets a verdict, not a frozen cell.
    """
    if type(reason) is not str:
        return fail(f'name the stop reason as a plain string such as "turn_limit", not {_shown(reason, 40)}.')
    if reason not in STOP_REASONS:
        return fail(f"{_shown(reason, 40)} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
    if reason not in REACHABLE:
        return fail(
            f"{reason!r} needs a timer, a budget or a signal from the caller, which a policy alone "
            f"cannot set; try one of {', '.join(REACHABLE)}."
        )
    if (refused := not_a_function(policy, "a policy is a function (task, observations)")) is not None:
        return refused
    limits = TURN_LIMITS if reason == "turn_limit" else LIMITS
    shown = ", ".join(f"{k}={v}" for k, v in limits.items())
    try:
        # `call` runs the whole episode within the time limit: the runtime calls the policy in
        # this thread, and TimedOut (a BaseException) passes through the runtime's own handlers.
        result = call(run, TASK, policy, tools=case_tools([]), **limits)
    except Raised as raised:
        if isinstance(raised.error, LabError):  # the runtime re-raises the lab's own errors
            return fail(
                "your policy raised a LabError, which the runtime re-raises rather than counts: "
                f"{shorten(str(raised.error), 200)}"
            )
        return crashed(raised.error, f"while run asked it for decisions under {shown}")
    if result["stop"] == reason:
        detail = f" ({shorten(result['detail'], 120)})" if result["detail"] else ""
        return Check(
            True,
            f"stop={reason} after {result['turns']} turn(s) and {result['tool_calls']} tool call(s) "
            f"under {shown}{detail}.",
        )
    return fail(
        f"under {shown} your policy ended with stop={result['stop']} "
        f"({shorten(result['detail'] or 'no detail', 120)}); "
        "the table of stop reasons says what each one needs."
    )


def _pass_hat_kcases() -> list[tuple[int, int, int]]:
    rng = random.Random()  # afresh every check: no fixed list to memorise
    drawn = []
    for _ in range(RANDOM_CASES):
        n = rng.randint(2, 12)
        drawn.append((rng.randint(0, n), n, rng.randint(1, n)))
    return [*PASS_HAT_K_CASES, *drawn]


@exercise("02", "pass_hat_k")
def check_pass_hat_k(fn: Callable[[int, int, int], float] | None) -> Check:
    """Exercise 2: pass^k for one case, c passes out of n trials (k <= n).

    The answer must return a number: a plain int or a float (a numpy float included); a
    value of any other type, or an int outside 0..1, is answered without being compared.
    """
    if (refused := not_a_function(fn, "my_pass_hat_k must be a function (c, n, k)")) is not None:
        return refused
    if (labkits := _handed_in(fn)) is not None:
        return _labkits_version(labkits, "my_pass_hat_k")
    cases = _pass_hat_kcases()
    for c, n, k in cases:
        watch = REFERENCES.watch()
        try:
            got = call(watch.wrap(fn), c, n, k)
        except Raised as raised:
            if watch.seen is not None:
                return _labkits_version(watch.seen, "my_pass_hat_k")
            return crashed(raised.error, f"on ({c}, {n}, {k})")
        if watch.seen is not None:
            return _labkits_version(watch.seen, "my_pass_hat_k")
        want = pass_hat_k(c, n, k)
        if not (type(got) is int or isinstance(got, float)):
            return fail(
                f"fn({c}, {n}, {k}) returned {_shown(got, 60)} (a {type(got).__name__}), expected the "
                f"number {want:.4f}: return a plain float."
            )
        if type(got) is int and not 0 <= got <= 1:  # also keeps a huge int away from float conversion
            return fail(
                f"fn({c}, {n}, {k}) = {_shown(got, 40)}, expected {want:.4f}: a chance is between 0 and 1."
            )
        if not math.isclose(got, want, abs_tol=1e-9):
            with_replacement = math.isclose(got, (c / n) ** k)
            hint = " That is (c/n)**k: the k trials are drawn without replacement." * with_replacement
            return fail(f"fn({c}, {n}, {k}) = {_shown(got, 40)}, expected {want:.4f}.{hint}")
    return Check(
        True, f"all {len(cases)} checks match C(c,k)/C(n,k), {RANDOM_CASES} of them drawn at random."
    )


def _budget_episode(budget: Budget | None) -> dict[str, Any]:
    case = case_by_id(BUDGET_CASE)
    task = task_from(case)
    policy = docuctl_policy("base", backend=ReplayBackend())
    return run(task, policy, tools=docuctl_tools(task), max_turns=3, max_tools=2, budget=budget)


def _budget_payload(tokens: Any) -> dict[str, Any]:
    return {"tokens": tokens if type(tokens) is int and 0 <= tokens <= MAX_NUMBER else None}


@exercise("02", "budget", payload=_budget_payload)
def check_budget(tokens: int | None) -> Check:
    """Exercise 3: the smallest token budget under which the replayed episode is not cut short.

    The episode is SmolLM2's recorded temperature-0 run on `BUDGET_CASE` with the `base`
    prompt (replayed, so it spends exactly the tokens it spent live). Any positive int is
    answered, however large: one above the episode's spend is "enough, but not the smallest"
    without building a Budget for it.
    """
    if unanswered(tokens):
        return fail("not attempted yet: replace the `...` with a number of tokens and run the cell again")
    if type(tokens) is not int or tokens < 1:
        numpy_int = isinstance(tokens, numbers.Integral) and type(tokens) is not bool
        plain = " (a plain int: int(x))" if numpy_int else ""
        return fail(f"give the budget as a positive int of tokens{plain}, not {_shown(tokens, 40)}.")
    free = _budget_episode(None)
    needed = int(free["usage"]["prompt_tokens"] + free["usage"]["completion_tokens"])
    if tokens > needed:
        return fail("enough, but not the smallest budget that lets this episode finish: add up its tokens.")
    capped = _budget_episode(Budget(tokens=tokens))
    if capped["stop"] == "budget":
        return fail(f"too small: the episode stopped with stop=budget ({capped['detail']}).")
    turns = free["turns"]
    return Check(True, f"{needed} tokens is exactly what the {turns} decisions of this episode spent.")


def _rule_payload(stop: Any, finals: Any = None) -> dict[str, Any]:
    return _text_payload(stop=stop) | {
        "finals": finals if type(finals) is int and 0 <= finals <= 10**6 else None
    }


@exercise("02", "missing_rule", payload=_rule_payload)
def check_missing_rule(stop: str | None, finals: int | None = None) -> Check:
    """Exercise 4: the stop reason whose rule keeps a stop-only grader from counting failures,
    and `finals`: how many of `RULE_RUN`'s episodes (example prompt, L1, T=0) would end `final`
    if that rule were lifted — a figure no table in the notebook shows.

    Answered with what `RULE_RUN` shows when that rule is lifted: how many episodes would then
    have ended `final`, and how many of those answers `labkit.baseline.grading.outcome` passes.
    """
    if unanswered(stop):
        return fail("not attempted yet: name a stop reason (a string) and run the cell again")
    if type(stop) is not str:
        return fail(f'name the stop reason as a plain string such as "final", not {_shown(stop, 40)}.')
    if stop not in STOP_REASONS:
        return fail(f"{_shown(stop, 40)} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
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
    if type(finals) is not int:
        return fail(f"give the number of episodes as a plain int, not {_shown(finals, 40)}.")
    if finals != expected:
        return fail(
            f"not {_shown(finals, 20)}: replay the recording (replay_trials(lab02.RULE_RUN)) and count "
            "the episodes "
            "that would end `final` — those that already did, and those the rule refused."
        )
    proposed = [row["result"]["trace"][-1]["decision"] for row in refused]
    right = sum(
        outcome(case_by_id(row["case"]), {"stop": "final", "answer": d["answer"], "citation": d["citation"]})
        for row, d in zip(refused, proposed, strict=True)
    )
    passed = sum(row["passed"] for row in rows)
    return Check(
        True,
        f"without it, {expected} of these {len(rows)} episodes end `final` "
        "(successes, to a stop-only grader); "
        f"outcome() passes {passed + right}.",
    )
