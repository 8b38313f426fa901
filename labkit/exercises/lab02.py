"""Lab 02's build-it cell and exercises.

Build it: `check_run(my_run)`, the heart of the runtime. `my_run(task, decide, tools,
max_turns, max_tools)` returns ``{"stop", "turns", "tool_calls", "answer", "citation"}``:
each turn it asks `decide(task, observations)` for one proposal, validates it
(`labkit.runtime.validate_decision` raises ValueError for a malformed one), and either stops
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

Exercises: `check_stop_policy`, `check_pass_hat_k`, `check_budget` (re-exported).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.controllers import docuctl_tools, scripted
from labkit.errors import LabError
from labkit.exercises.check import Check, Raised, call, crashed, fail, not_a_function
from labkit.exercises.progress import exercise
from labkit.exercises_02 import EXERCISE_TASK, check_budget, check_pass_hat_k, check_stop_policy
from labkit.runtime import Tool, run

__all__ = ["check_budget", "check_pass_hat_k", "check_run", "check_stop_policy", "scenarios"]

TASK = EXERCISE_TASK
KEYS = ("stop", "turns", "tool_calls", "answer", "citation")


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
