"""The cases lab 02's `check_run` holds: a policy, limits, tools and the rule each one checks.

`cases()` builds them fresh on every call (new policies, new decisions), so nothing a learner's
`my_run` does to what it is handed can reach the next check; the module's own decisions are
read-only (`MappingProxyType`) and every policy hands out a new copy of them. `reference_table`
runs labkit's `run` on the cases a learner is shown; `check_run` also holds the others
(`Case.shown` False: other limits, another task, a tool that is not a source).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from labkit.baseline.controllers import docuctl_tools, scripted
from labkit.baseline.task import Task
from labkit.core.check import copied
from labkit.core.runtime import Tool, run

TASK = Task("exercise", "rollback", "How do I restore the last release?", "v2")
# A second question, in the other version: only the unshown cases ask it.
OTHER_TASK = Task("exercise-v1", "deploy", "How do I deploy the current build?", "v1")


def _fresh(decision: Any) -> Any:
    """A new copy of one of this module's decisions, as a plain dict, for a learner to keep or change."""
    if isinstance(decision, Mapping):
        return {key: copied(value) for key, value in decision.items()}
    return copied(decision)


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
    kept = tuple(decisions)

    def policy(task: Any, observations: list) -> Any:
        return _fresh(kept[min(len(observations), len(kept) - 1)])

    return policy


def _broken_read(**args: Any) -> Any:
    raise RuntimeError("storage offline")


def _lookup(id: str) -> dict[str, str]:  # noqa: A002 - the tool's argument is named as the model sees it
    """A tool that is not a source: it names a page without returning it."""
    return {"id": id, "status": "indexed"}


def _after_error(task: Any, observations: list) -> dict[str, Any]:
    """Search, read the first hit; if the read failed, say so (whatever the error's wording)."""
    if (
        observations
        and isinstance(observations[-1]["result"], dict)
        and "error" in observations[-1]["result"]
    ):
        return {"action": "final", "answer": "the page could not be read", "citation": ""}
    return scripted(task, observations)


READ_DEPLOY: Mapping[str, str] = MappingProxyType({"action": "read", "id": "rollback-v2"})
FINAL: Mapping[str, str] = MappingProxyType(
    {"action": "final", "answer": "docuctl release revert --env staging", "citation": "rollback-v2"}
)


@dataclass(frozen=True)
class Case:
    """One case of `check_run`: a policy, its limits, its tools ("docs", "broken read",
    "lookup"), the rule it checks, its task, and whether `reference_table` shows it."""

    name: str
    policy: Callable[..., Any]
    limits: Mapping[str, int]
    tools: str
    rule: str
    task: Task = TASK
    shown: bool = True


def cases() -> list[Case]:
    """Every case `check_run` holds, built fresh (new policies, new decisions) on every call."""
    small = MappingProxyType({"max_turns": 3, "max_tools": 2})
    roomy = MappingProxyType({"max_turns": 4, "max_tools": 3})
    shown = [
        Case("scripted search, read, answer", scripted, small, "docs",
              "a valid final answer citing a page read: final"),
        Case("an unknown action", _says({"action": "delete_page", "id": "x"}), small, "docs",
              "an action no tool provides is invalid_decision, and nothing runs"),
        Case("a proposal that is not an object", _says("search the docs"), small, "docs",
              "a proposal that is not a dict is invalid_decision"),
        Case("an extra field", _says({"action": "search", "query": "q", "sudo": True}), small, "docs",
              "a field the tool does not declare is invalid_decision, and the tool must not run"),
        Case("a missing field", _says({"action": "read"}), small, "docs",
              "a missing argument is invalid_decision"),
        Case("a number where a string is due", _says({"action": "read", "id": 7}), small, "docs",
              "a wrongly typed argument is invalid_decision"),
        Case("decide raises KeyError", _raises(KeyError("result")), small, "docs",
              "any exception from the policy is invalid_decision (turn 2), never a crash"),
        Case("decide raises ConnectionError", _raises(ConnectionError("refused")), small, "docs",
              "an OSError from the policy is provider_error"),
        Case("keeps searching, 2 tools", _searcher, small, "docs",
              "a tool proposed after max_tools calls is tool_limit, and it does not run"),
        Case("keeps searching, 3 tools, 2 turns", _searcher,
              MappingProxyType({"max_turns": 2, "max_tools": 3}), "docs",
              "max_turns decisions without a final is turn_limit"),
        Case("cites a page it never read", _says(FINAL), small, "docs",
              "a citation no source tool returned in this run is unread_citation"),
        Case("searches, then cites a hit unread", _says({"action": "search", "query": TASK.question}, FINAL),
              small, "docs",
              "a search hit is not a page read: citing it without reading it is unread_citation"),
        Case("reads, then cites it", _says(READ_DEPLOY, FINAL), small, "docs",
              "a citation of a page read in this run is final"),
        Case("a tool that raises", _after_error, roomy, "broken read",
              "a tool that raises is an observation {'error': ...}; the episode goes on"),
        Case("final with a blank answer", _says({"action": "final", "answer": " ", "citation": ""}), small,
              "docs", "a blank answer is invalid_decision"),
    ]
    unshown = [
        Case("no tool allowed", _searcher, MappingProxyType({"max_turns": 2, "max_tools": 0}), "docs",
              "with max_tools=0 the first tool proposed is tool_limit, and it does not run", shown=False),
        Case("one turn only", scripted, MappingProxyType({"max_turns": 1, "max_tools": 2}), "docs",
              "max_turns decisions without a final is turn_limit, whatever max_turns is", shown=False),
        Case("another question, version v1", scripted, small, "docs",
              "a valid final answer citing a page read: final (for whatever task it is handed)",
              task=OTHER_TASK, shown=False),
        Case("reads a page that does not exist, then cites it",
              _says({"action": "read", "id": "no-such-page"},
                    {"action": "final", "answer": "docuctl ship", "citation": "no-such-page"}),
              small, "docs", "a read that raised returned no page: citing it is unread_citation",
              shown=False),
        Case("a tool that is not a source names a page",
              _says({"action": "lookup", "id": "rollback-v2"}, FINAL), small, "lookup",
              "only a source tool's result (tool.source) makes a page citable: unread_citation", shown=False),
        Case("final with an undeclared field",
              _says({"action": "final", "answer": "docuctl ship", "citation": "", "confidence": "high"}),
              small, "docs", "a final answer with a field it does not declare is invalid_decision",
              shown=False),
        Case("decide raises TimeoutError", _raises(TimeoutError("timed out")), small, "docs",
              "TimeoutError is an OSError: provider_error", shown=False),
        Case("reads two pages, cites the first",
              _says(READ_DEPLOY, {"action": "read", "id": "releases-v2"}, FINAL), roomy, "docs",
              "a citation of any page read earlier in this run is final", shown=False),
    ]
    return shown + unshown


def scenarios() -> list[tuple[str, Callable[..., Any], dict[str, int], bool, str]]:
    """(name, policy, limits, broken read tool?, what the contract says) for every case `reference_table`
    shows; `check_run` holds these and a few more it does not show."""
    return [
        (case.name, case.policy, dict(case.limits), case.tools == "broken read", case.rule)
        for case in cases()
        if case.shown
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


def reference_table() -> pd.DataFrame:
    """labkit's `run` on every case `check_run` shows: what a matching `my_run` returns."""
    rows = []
    for case in cases():
        if case.shown:
            got = run(case.task, case.policy, tools=case_tools([], case.tools, case.task), **case.limits)
            rows.append({"case": case.name, "stop": got["stop"], "turns": got["turns"],
                         "tool calls": got["tool_calls"]})
    return pd.DataFrame(rows).set_index("case")
