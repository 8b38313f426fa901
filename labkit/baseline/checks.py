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

Exercises:

- `check_failure_stage(case_id, stage, reason)`: which stage made the workflow fail a case
  (retrieval, control or answer), and the evidence from its trace. More than one stage
  can be defended; the reason has to name the evidence for the one chosen.
- `check_adaptive_case(case)`: design a case the fixed workflow fails and the adaptive
  loop passes; `try_adaptive_case(case)` validates it and shows every controller's row.
- `check_two_tool_winner(name)`: with every controller held to two tools, which one
  passes the most adaptive cases?
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.baseline.controllers import BASE_TOOL_BUDGET, controllers, docuctl_tools, scripted, workflow
from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.grading import compare, evaluate, outcome
from labkit.baseline.task import TaskError, task_from
from labkit.core.check import NOT_YET, Check, Raised, call, crashed, fail, not_a_function, unanswered
from labkit.core.fixtures import ADAPTIVE_CASES, schema_error
from labkit.core.progress import exercise
from labkit.core.runtime import Tool, run

__all__ = [
    "check_adaptive_case",
    "check_decide",
    "check_failure_stage",
    "check_two_tool_winner",
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
# What a reason must point at. Retrieval: the ranking put another page first. Control: the
# expected page was among the hits, and the fixed next step (read the first) picked wrong.
RANKING = ("rank", "first", "order", "score", "tie", "above", "ahead", "before", "top", "higher", "sort",
           "alphabet")
IN_HITS = ("hit", "second", "result", "returned", "found", "both", "list", "other", "among")
STEP = ("read", "pick", "chose", "choose", "select", "check", "only", "always", "next", "blind")


def _diagnosis(case_id: str, stage: str | None, reason: str | None = None) -> dict[str, Any]:
    return {"case_id": case_id, "stage": stage, "reason": reason}


def _mentions(text: str, cues: tuple[str, ...]) -> bool:
    return any(cue in text for cue in cues)


@exercise("01", "failure_stage", payload=_diagnosis)
def check_failure_stage(case_id: str, stage: str | None, reason: str | None = None) -> Check:
    """Exercise: which stage made the workflow fail `case_id`, and why — a diagnosis, not a lookup.

    Retrieval is right when the reason blames the ranking (the expected page was not first).
    Control is right when the reason says the expected page *was* among the hits but the
    fixed next step (read the first hit) was the wrong one: both readings of that trace are
    defensible. Answer never is: the answer step copied the page it read exactly.
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
    ids = [hit["id"] for hit in result["trace"][0]["result"] or []]
    expected = case["expected_doc"]
    if stage == "answer":
        return fail(
            "the answer step copied the command of the page it read, exactly: look at what it read, and why."
        )
    text = str(reason or "").casefold()
    if not text.strip():
        return fail(f"say why in `reason`: what did search rank first, and where was {expected!r}?")
    where = "second" if expected in ids[1:] else "nowhere in the hits"
    if stage == "retrieval" and (_mentions(text, RANKING) or ids[0] in text):
        return Check(
            True,
            f"retrieval: search ranked {ids[0]!r} first and {expected!r} {where}; a better ranking "
            "fixes it for every controller at once. (Control is defensible too, with the right reason.)",
        )
    in_hits = expected in ids[1:] and (_mentions(text, IN_HITS) or expected in text)
    if stage == "control" and in_hits and _mentions(text, STEP):
        return Check(
            True,
            f"control: {expected!r} was among the hits, but the fixed next step reads only the "
            "first one; a controller that checks the page before answering could recover. "
            "(Retrieval is defensible too: the ranking put it second.)",
        )
    return fail(
        f"{stage} may be defensible, but your reason does not show it: name what search returned "
        f"({ids}) and which step went wrong."
    )


def try_adaptive_case(case: dict[str, Any], corpus: Corpus | None = None) -> pd.DataFrame:
    """Validate a proposed adaptive case against the contract, then run every controller on it.

    Raises ValueError naming the problem if the case breaks the schema, asks for something
    `Task` refuses, or expects a page/command the corpus does not have. Returns one row per
    controller (all seven, three tools each): passed, stop, tool calls, what it cited.
    """
    corpus = corpus or docuctl()
    error = schema_error(ADAPTIVE_CASES["items"], case)
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "case"
        raise ValueError(f"{where}: {error.message}")
    try:
        task_from(case)
        page = corpus.docs.read(case["expected_doc"], case["version"])
    except TaskError as refused:
        raise ValueError(f"the task contract refuses this case: {refused}") from None
    except ValueError:
        raise ValueError(f"expected_doc {case['expected_doc']!r} is not a {case['version']} page") from None
    if page["command"] != case["expected_command"]:
        raise ValueError(f"expected_command: page {page['id']!r} says {page['command']!r}")
    rows = {}
    for name, controller in controllers(corpus.docs).items():
        (row,) = evaluate([case], controller)
        rows[name] = {k: row[k] for k in ("passed", "stop", "tool_calls")}
        rows[name]["citation"] = row["citation"] or ""
    return pd.DataFrame.from_dict(rows, orient="index")


def _case_payload(case: Any, corpus: Corpus | None = None) -> Any:
    return case


@exercise("01", "adaptive_case", payload=_case_payload)
def check_adaptive_case(case: dict[str, Any] | None, corpus: Corpus | None = None) -> Check:
    """Exercise: a valid case the fixed workflow fails and the adaptive loop passes.

    The verdict's table is every controller's row on the case; a passing verdict also says
    whether the two-rule workflow (the loop's rules, fixed in advance) passes it too.
    """
    if unanswered(case):
        return fail(NOT_YET)
    if not isinstance(case, dict):
        return fail(f"a case is a dict with the fields of adaptive_cases.json, not {type(case).__name__}.")
    try:
        table = try_adaptive_case(case, corpus)
    except ValueError as problem:
        return fail(f"not a valid case: {problem}")
    if bool(table.loc["search/read workflow", "passed"]):
        return fail(
            "the fixed workflow already solves this case, so it needs no adaptive control: "
            "make its first search come back empty, or its first hit a page that conflicts.",
            table,
        )
    if not bool(table.loc["adaptive loop", "passed"]):
        stop = table.loc["adaptive loop", "stop"]
        return fail(
            f"the adaptive loop fails it too (stop={stop}): give it an observation it can act on.", table
        )
    calls = int(table.loc["adaptive loop", "tool_calls"])
    same = "passes it too" if bool(table.loc["two-rule workflow", "passed"]) else "does not"
    return Check(
        True,
        f"the workflow fails and the adaptive loop passes with {calls} tool calls; the two-rule "
        f"workflow {same}.",
        table,
    )


TWO_TOOLS = 2


@exercise("01", "two_tool_winner")
def check_two_tool_winner(name: str | None) -> Check:
    """Exercise: with every controller held to two tools, which passes the most adaptive cases?"""
    if unanswered(name):
        return fail(NOT_YET)
    corpus = docuctl()
    table = compare(corpus.adaptive_cases, controllers(corpus.docs, max_tools=TWO_TOOLS))
    if name not in table.index:
        return fail(f"name one of the controllers: {', '.join(table.index)}.")
    best = int(table["passed"].max())
    got = int(table.loc[name, "passed"])
    if got < best:
        return fail(
            f"with two tools the {name} passes {got} of {len(corpus.adaptive_cases)}; one controller passes "
            f"{best}. Which one spends no extra tool when a question is misspelt?"
        )
    return Check(
        True,
        f"the {name} passes {got} of {len(corpus.adaptive_cases)} with two tools: it corrects the spelling "
        "before its one search. The fallback, the two-rule workflow and the adaptive loop need a third "
        "tool for their second search or second read, and stop at tool_limit.",
        table,
    )
