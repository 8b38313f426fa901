"""Lab 01's build-it cell and exercises.

Build it: the two controllers that take the *same* steps — search the question, read the
first hit, answer with its command — with a different decider:

- `check_workflow(my_workflow)`: `my_workflow(task, tools) -> {"answer", "citation"}`, the
  developer's fixed sequence; it calls `tools["search"].call(query=...)` and
  `tools["read"].call(id=...)` itself, and returns None when the search finds nothing.
- `check_decide(my_decide)`: `my_decide(task, observations) -> decision`, one step per call,
  run by `labkit.run` under the workflow's budget (two tools, three turns).

Both are run on lab 01's 18 base cases and compared, case by case, with labkit's
`workflow` and `scripted`; the first difference is reported in a sentence.

Exercises: `check_failure_stage` (which stage made a case fail, with your reason) and
`check_adaptive_case` (design a case that needs adaptive control), re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.checkers import check_adaptive_case, try_adaptive_case
from labkit.controllers import BASE_TOOL_BUDGET, docuctl_tools, scripted, workflow
from labkit.corpus import docuctl
from labkit.exercises.check import NOT_YET, Check, Raised, call, crashed, fail, not_a_function, unanswered
from labkit.exercises.progress import exercise
from labkit.grading import outcome
from labkit.runtime import Tool, run
from labkit.task import task_from

__all__ = [
    "check_adaptive_case",
    "check_decide",
    "check_failure_stage",
    "check_workflow",
    "try_adaptive_case",
]

FIXED = (
    "the workflow searches the question as asked, reads the first hit and answers with that page's command"
)


def _counting(tools: dict[str, Tool], log: list[tuple[str, dict[str, Any]]]) -> dict[str, Tool]:
    """The tools, each call logged as (name, arguments) before it runs."""

    def wrap(tool: Tool) -> Tool:
        def call_logged(**args: Any) -> Any:
            log.append((tool.name, args))
            return tool.call(**args)

        return Tool(tool.name, tool.params, call_logged, tool.source, tool.description)

    return {name: wrap(tool) for name, tool in tools.items()}


def _summary(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows).set_index("controller")


@exercise("01", "workflow")
def check_workflow(my_workflow: Callable[..., Any] | None) -> Check:
    """Build it: the fixed search → read-first-hit workflow (see the module docstring)."""
    if (
        refused := not_a_function(my_workflow, "my_workflow must be a function (task, tools) -> dict")
    ) is not None:
        return refused
    corpus = docuctl()
    passed = calls = ref_passed = ref_calls = 0
    for case in corpus.cases:
        task = task_from(case)
        log: list[tuple[str, dict[str, Any]]] = []
        try:
            got = call(my_workflow, task, _counting(docuctl_tools(task, corpus.docs), log))
        except Raised as raised:
            return crashed(raised.error, f"on case {case['id']!r}")
        want = workflow(task, corpus.docs)
        if len(log) > BASE_TOOL_BUDGET:
            return fail(
                f"On {case['id']!r} your workflow made {len(log)} tool calls; its budget is "
                f"{BASE_TOOL_BUDGET}: one search, one read."
            )
        if got is not None and not (isinstance(got, dict) and {"answer", "citation"} <= set(got)):
            return fail(
                f"On {case['id']!r} your workflow returned {got!r}; return a dict with "
                "'answer' and 'citation' (or None when the search finds nothing)."
            )
        answer = None if got is None else (got["answer"], got["citation"])
        if answer != (want["answer"], want["citation"]):
            first = want["trace"][0]["result"][0]["id"] if want["trace"][0]["result"] else None
            return fail(
                f"On {case['id']!r} your workflow answered {answer!r}; the first hit was {first!r}: {FIXED}."
            )
        calls += len(log)
        passed += outcome(
            case, {"stop": "final", "answer": answer and answer[0], "citation": answer and answer[1]}
        )
        ref_calls += want["tool_calls"]
        ref_passed += outcome(case, want)
    table = _summary(
        [
            {
                "controller": "your workflow",
                "passed": passed,
                "total": len(corpus.cases),
                "tool_calls": calls,
            },
            {
                "controller": "labkit's workflow",
                "passed": ref_passed,
                "total": len(corpus.cases),
                "tool_calls": ref_calls,
            },
        ]
    )
    return Check(
        True,
        f"your workflow takes labkit's steps on all {len(corpus.cases)} base cases: "
        f"{passed} passed with {calls} tool calls.",
        table,
    )


@exercise("01", "decide")
def check_decide(my_decide: Callable[..., Any] | None) -> Check:
    """Build it: the scripted loop's `decide`, run by the runtime under the workflow's budget."""
    if (
        refused := not_a_function(my_decide, "my_decide must be a function (task, observations) -> dict")
    ) is not None:
        return refused
    corpus = docuctl()
    limits = {"max_turns": BASE_TOOL_BUDGET + 1, "max_tools": BASE_TOOL_BUDGET}
    passed = calls = ref_passed = ref_calls = 0
    for case in corpus.cases:
        task = task_from(case)
        got = run(task, my_decide, tools=docuctl_tools(task, corpus.docs), **limits)
        want = run(task, scripted, tools=docuctl_tools(task, corpus.docs), **limits)
        if got["stop"] != want["stop"]:
            detail = f" ({got['detail']})" if got["detail"] else ""
            return fail(
                f"On {case['id']!r} the runtime stopped your policy with {got['stop']}{detail}; "
                f"labkit's loop ends with {want['stop']}. Each call returns one step: search, then "
                "read the first hit, then final with its command and id."
            )
        if (got["answer"], got["citation"]) != (want["answer"], want["citation"]):
            return fail(
                f"On {case['id']!r} your loop answered {got['answer']!r} citing {got['citation']!r}; {FIXED}."
            )
        calls += got["tool_calls"]
        passed += outcome(case, got)
        ref_calls += want["tool_calls"]
        ref_passed += outcome(case, want)
    table = _summary(
        [
            {"controller": "your loop", "passed": passed, "total": len(corpus.cases), "tool_calls": calls},
            {
                "controller": "labkit's scripted loop",
                "passed": ref_passed,
                "total": len(corpus.cases),
                "tool_calls": ref_calls,
            },
        ]
    )
    return Check(
        True,
        f"your loop takes the workflow's steps on all {len(corpus.cases)} cases ({passed} passed, "
        f"{calls} tool calls); only the decider moved — the runtime now asks your policy each turn.",
        table,
    )


STAGES = ("retrieval", "control", "answer")


def _diagnosis(case_id: str, stage: str | None, reason: str | None = None) -> dict[str, Any]:
    return {"case_id": case_id, "stage": stage, "reason": reason}


@exercise("01", "failure_stage", payload=_diagnosis)
def check_failure_stage(case_id: str, stage: str | None, reason: str | None = None) -> Check:
    """Exercise: which stage made the workflow fail `case_id`, and why — a diagnosis, not a lookup.

    Retrieval is right when the reason blames the ranking (the expected page was not first).
    Control is accepted too when the reason says the source *was* in the hits but the next
    action (reading the first hit only) was wrong: both readings of that trace are defensible.
    """
    if unanswered(stage):
        return fail(NOT_YET)
    if stage not in STAGES:
        return fail(f"choose one of {', '.join(STAGES)}.")
    corpus = docuctl()
    case = next((c for c in corpus.cases if c["id"] == case_id), None)
    if case is None:
        return fail(f"there is no base case {case_id!r}.")
    result = workflow(task_from(case), corpus.docs)
    if result["citation"] == case["expected_doc"]:
        return fail(f"the workflow passes {case_id!r}; pick the case it fails.")
    hits = result["trace"][0]["result"] or []
    ids = [hit["id"] for hit in hits]
    expected = case["expected_doc"]
    if stage == "answer":
        return fail(
            "the answer step copied the command of the page it read, exactly: look at what it read, and why."
        )
    text = (reason or "").casefold()
    if not text.strip():
        return fail(f"say why in `reason`: what did search rank first, and where was {expected!r}?")
    mentions_rank = any(word in text for word in ("rank", "first", "order", "score", "tie", "second"))
    if stage == "retrieval" and mentions_rank:
        return Check(
            True,
            f"retrieval: search ranked {ids[0]!r} first and {expected!r} "
            f"{'second' if expected in ids[1:] else 'nowhere'}; a better ranking fixes it.",
        )
    in_hits = expected in ids and any(word in text for word in ("hit", "second", "other", "both", "read"))
    if stage == "control" and in_hits:
        return Check(
            True,
            f"control: {expected!r} was among the hits, but the fixed next step reads only the "
            "first one; a controller that checks the page could recover (section 8).",
        )
    return fail(
        f"{stage} may be defensible, but your reason does not show it: name what search returned "
        f"({ids}) and which step went wrong."
    )
