"""The cases lab 02's `check_run` holds: a policy, limits, tools and the rule each one checks.

`cases()` builds them afresh on every call, and each policy hands out new copies of its
decisions, so what a learner's `my_run` does to what it is handed cannot reach the next check.
`reference_table` shows the cases a learner sees; `check_run` also holds others (other limits,
another task, a tool that is not a source), so a run fitted to the table fails.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from labkit.baseline.controllers import docuctl_tools, scripted
from labkit.baseline.task import Task
from labkit.core.check import copied
from labkit.core.runtime import Tool, run

TASK = Task("exercise", "rollback", "How do I restore the last release?", "v2")
_OTHER_TASK = Task("exercise-v1", "deploy", "How do I deploy the current build?", "v1")  # unshown cases only
_READ = {"action": "read", "id": "rollback-v2"}
FINAL = {"action": "final", "answer": "docuctl release revert --env staging", "citation": "rollback-v2"}
_SMALL, _ROOMY = {"max_turns": 3, "max_tools": 2}, {"max_turns": 4, "max_tools": 3}


def _searcher(task: Any, observations: list) -> dict[str, Any]:
    return {"action": "search", "query": task.question}


def _raises(error: BaseException) -> Callable[..., Any]:
    def policy(task: Any, observations: list) -> Any:
        if observations:
            raise error
        return _searcher(task, observations)

    return policy


def _says(*decisions: Any) -> Callable[..., Any]:
    """A policy proposing `decisions` in turn (the last one again after that), each a fresh copy."""

    def policy(task: Any, observations: list) -> Any:
        return copied(decisions[min(len(observations), len(decisions) - 1)])

    return policy


def _broken_read(**args: Any) -> Any:
    raise RuntimeError("storage offline")


def _lookup(id: str) -> dict[str, str]:  # noqa: A002 - the tool's argument is named as the model sees it
    """A tool that is not a source: it names a page without returning it."""
    return {"id": id, "status": "indexed"}


def _after_error(task: Any, observations: list) -> dict[str, Any]:
    """Search, read the first hit; if the read failed, say so (whatever the error's wording)."""
    last = observations[-1]["result"] if observations else None
    if isinstance(last, dict) and "error" in last:
        return {"action": "final", "answer": "the page could not be read", "citation": ""}
    return scripted(task, observations)


@dataclass(frozen=True)
class RunCase:
    """One case of `check_run`: its name, the rule it checks, a policy, limits, tools ("docs",
    "broken read", "lookup"), a task, and whether `reference_table` shows it."""

    name: str
    rule: str
    policy: Callable[..., Any]
    limits: Mapping[str, int] = field(default_factory=lambda: dict(_SMALL))
    tools: str = "docs"
    task: Task = TASK
    shown: bool = True


def cases() -> list[RunCase]:
    """Every case `check_run` holds, built afresh (new policies, new decisions) on every call."""
    final = "a valid final answer citing a page read: final"
    unread = "a citation no source tool returned in this run is unread_citation"
    turns = "max_turns decisions without a final is turn_limit"
    return [
        RunCase("scripted search, read, answer", final, scripted),
        RunCase(
            "an unknown action",
            "an action no tool provides is invalid_decision, and nothing runs",
            _says({"action": "delete_page", "id": "x"}),
        ),
        RunCase(
            "a proposal that is not an object",
            "a proposal that is not a dict is invalid_decision",
            _says("search the docs"),
        ),
        RunCase(
            "an extra field",
            "a field the tool does not declare is invalid_decision, and the tool must not run",
            _says({"action": "search", "query": "q", "sudo": True}),
        ),
        RunCase("a missing field", "a missing argument is invalid_decision", _says({"action": "read"})),
        RunCase(
            "a number where a string is due",
            "a wrongly typed argument is invalid_decision",
            _says({"action": "read", "id": 7}),
        ),
        RunCase(
            "decide raises KeyError",
            "any exception from the policy is invalid_decision (turn 2), never a crash",
            _raises(KeyError("result")),
        ),
        RunCase(
            "decide raises ConnectionError",
            "an OSError from the policy is provider_error",
            _raises(ConnectionError("refused")),
        ),
        RunCase(
            "keeps searching, 2 tools",
            "a tool proposed after max_tools calls is tool_limit, and it does not run",
            _searcher,
        ),
        RunCase("keeps searching, 3 tools, 2 turns", turns, _searcher, {"max_turns": 2, "max_tools": 3}),
        RunCase("cites a page it never read", unread, _says(FINAL)),
        RunCase(
            "searches, then cites a hit unread",
            "a search hit is not a page read: citing it without reading it is unread_citation",
            _says({"action": "search", "query": TASK.question}, FINAL),
        ),
        RunCase(
            "reads, then cites it", "a citation of a page read in this run is final", _says(_READ, FINAL)
        ),
        RunCase(
            "a tool that raises",
            "a tool that raises is an observation {'error': ...}; the episode goes on",
            _after_error,
            _ROOMY,
            "broken read",
        ),
        RunCase(
            "final with a blank answer",
            "a blank answer is invalid_decision",
            _says({"action": "final", "answer": " ", "citation": ""}),
        ),
        # Not in the reference table: a run fitted to the cases it shows fails on these.
        RunCase(
            "no tool allowed",
            "with max_tools=0 the first tool proposed is tool_limit, and it does not run",
            _searcher,
            {"max_turns": 2, "max_tools": 0},
            shown=False,
        ),
        RunCase(
            "one turn only",
            f"{turns}, whatever max_turns is",
            scripted,
            {"max_turns": 1, "max_tools": 2},
            shown=False,
        ),
        RunCase(
            "another question, version v1",
            f"{final} (for whatever task it is handed)",
            scripted,
            task=_OTHER_TASK,
            shown=False,
        ),
        RunCase(
            "reads a page that does not exist, then cites it",
            "a read that raised returned no page: citing it is unread_citation",
            _says(
                {"action": "read", "id": "no-such-page"},
                {"action": "final", "answer": "docuctl ship", "citation": "no-such-page"},
            ),
            shown=False,
        ),
        RunCase(
            "a tool that is not a source names a page",
            "only a source tool's result (tool.source) makes a page citable: unread_citation",
            _says({"action": "lookup", "id": "rollback-v2"}, FINAL),
            tools="lookup",
            shown=False,
        ),
        RunCase(
            "final with an undeclared field",
            "a final answer with a field it does not declare is invalid_decision",
            _says({"action": "final", "answer": "docuctl ship", "citation": "", "confidence": "high"}),
            shown=False,
        ),
        RunCase(
            "decide raises TimeoutError",
            "TimeoutError is an OSError: provider_error",
            _raises(TimeoutError("timed out")),
            shown=False,
        ),
        RunCase(
            "reads two pages, cites the first",
            "a citation of any page read earlier in this run is final",
            _says(_READ, {"action": "read", "id": "releases-v2"}, FINAL),
            _ROOMY,
            shown=False,
        ),
    ]


def case_tools(log: list[str], kind: str = "docs", task: Task = TASK) -> dict[str, Tool]:
    """Fresh tools for one case; every call is logged in `log` and hands back a copy of its result."""
    tools = docuctl_tools(task)
    if kind == "broken read":
        tools["read"] = Tool("read", {"id": "str"}, _broken_read, source=True)
    elif kind == "lookup":
        tools["lookup"] = Tool("lookup", {"id": "str"}, _lookup, description="is a page id indexed")

    def counted(tool: Tool) -> Tool:
        def go(**args: Any) -> Any:
            log.append(tool.name)
            return copied(tool.call(**args))

        return Tool(tool.name, tool.params, go, tool.source, tool.description)

    return {name: counted(tool) for name, tool in tools.items()}


def run_reference(case: RunCase) -> dict[str, Any]:
    """labkit's `run` on `case`: what a matching `my_run` returns."""
    return run(case.task, case.policy, tools=case_tools([], case.tools, case.task), **case.limits)


def reference_table() -> pd.DataFrame:
    """labkit's `run` on every case `check_run` shows."""
    rows = [
        {"case": case.name, "stop": got["stop"], "turns": got["turns"], "tool calls": got["tool_calls"]}
        for case in cases()
        if case.shown
        for got in [run_reference(case)]
    ]
    return pd.DataFrame(rows).set_index("case")
