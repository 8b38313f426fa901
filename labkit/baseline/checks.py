"""Lab 01's build-it cell and exercises.

Build it: the two controllers that take the *same* steps — search the question, read the
first hit, answer with its command — with a different decider:

- `check_workflow(my_workflow)`: `my_workflow(task, tools) -> {"answer", "citation"}`, the
  developer's fixed sequence; it calls `tools["search"].call(query=...)` and
  `tools["read"].call(id=...)` itself, and returns None when the search finds nothing.
- `check_decide(my_decide)`: `my_decide(task, observations) -> decision`, one step per call,
  run by `labkit.run` under the workflow's budget (two tools, three turns).

Both are run on lab 01's 18 base cases and on questions the notebook never shows (so a table
of memorised answers cannot pass), and compared, case by case, with labkit's `workflow` and
`scripted`; the first difference is reported in a sentence.

A learner's function is untrusted input: it gets copies of what it is handed, runs within
`LIMIT_S` seconds a case, and whatever it returns is rebuilt from exact builtin types before
it is compared (an always-equal `str` subclass is compared as the plain string it holds).
What it raises, LabError included, becomes a verdict naming its line. Handing in labkit's own
`workflow` or `scripted` (directly, wrapped, as a `functools.partial`, or called from inside
the answer) is recognised: "that is labkit's version; write your own".

Exercises:

- `check_failure_stage(case_id, stage, reason)`: which stage made the workflow fail a case
  (retrieval, control or answer), and the evidence from its trace. More than one stage
  can be defended; the reason has to name the trace's facts for the one chosen, and a reason
  that contradicts the trace fails with what the trace shows.
- `check_adaptive_case(case)`: design a case the fixed workflow fails and the adaptive
  loop passes; `try_adaptive_case(case)` validates it and shows every controller's row.
- `check_two_tool_winner(name)`: with every controller held to two tools, which one
  passes the most adaptive cases?
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.baseline.answers import (
    REFERENCES,
    UNSEEN,
    NotPlain,
    answer_of,
    counting,
    decide_run,
    handed_in,
    plain,
    tasks,
)
from labkit.baseline.controllers import BASE_TOOL_BUDGET, controllers, docuctl_tools, scripted, workflow
from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.diagnosis import (
    REASON_LIMIT,
    STAGES,
    contradiction,
    ranking_named,
    step_named,
    trace_facts,
    what_it_shows,
)
from labkit.baseline.grading import compare, evaluate, outcome
from labkit.baseline.task import TaskError, task_from
from labkit.core.answers import labkits_version, limit_s, shown
from labkit.core.check import (
    NOT_ATTEMPTED,
    NOT_YET,
    Check,
    Raised,
    TimedOut,
    call,
    crashed,
    fail,
    learner_line,
    not_a_function,
    unanswered,
)
from labkit.core.errors import LabError
from labkit.core.fixtures import ADAPTIVE_CASES, schema_error
from labkit.core.runtime import run
from labkit.core.text import shorten
from labkit.core.verdicts import exercise

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


def _summary(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows).set_index("controller")

@exercise("01", "workflow")
def check_workflow(my_workflow: Callable[..., Any] | None) -> Check:
    """Build it: the fixed search → read-first-hit workflow (see the module docstring)."""
    if (
        refused := not_a_function(my_workflow, "my_workflow must be a function (task, tools) -> dict")
    ) is not None:
        return refused
    if (name := handed_in(my_workflow)) is not None:
        return labkits_version(name, "workflow")
    corpus = docuctl()
    passed = calls = ref_passed = ref_calls = 0
    for where, task, case in tasks(corpus):
        log: list[tuple[str, dict[str, Any]]] = []
        misuse: list[str] = []
        watch = REFERENCES.watch()
        try:
            tools = counting(docuctl_tools(task, corpus.docs), log, misuse)
            got = call(watch.wrap(my_workflow), task, tools)
        except Raised as raised:
            if watch.seen is not None:
                return labkits_version(watch.seen, "workflow")
            if misuse and not isinstance(raised.error, TimedOut):
                line = learner_line(raised.error)
                return fail(f"On {where} your workflow {misuse[0].format(at=f' at {line}' if line else '')}.")
            return crashed(raised.error, f"on {where}")
        if watch.seen is not None:
            return labkits_version(watch.seen, "workflow")
        if misuse:  # the learner caught the TypeError and went on
            return fail(f"On {where} your workflow {misuse[0].format(at='')}.")
        want = workflow(task, corpus.docs)
        if len(log) > BASE_TOOL_BUDGET:
            return fail(
                f"On {where} your workflow made {len(log)} tool calls; its budget is "
                f"{BASE_TOOL_BUDGET}: one search, one read."
            )
        answer = answer_of(got, where)
        if isinstance(answer, Check):
            return answer
        if answer != (want["answer"], want["citation"]):
            hits = want["trace"][0]["result"]
            first = hits[0]["id"] if hits else None
            said = None if got is None else answer
            return fail(
                f"On {where} your workflow answered {shown(said, 160)}; the first hit was {first!r}: "
                f"{FIXED}."
            )
        if case is None:
            continue
        calls += len(log)
        passed += outcome(case, {"stop": "final", "answer": answer[0], "citation": answer[1]})
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
        f"your workflow takes labkit's steps on all {len(corpus.cases)} base cases and "
        f"{len(UNSEEN)} unseen questions: {passed} passed with {calls} tool calls.",
        table,
    )

@exercise("01", "decide")
def check_decide(my_decide: Callable[..., Any] | None) -> Check:
    """Build it: the scripted loop's `decide`, run by the runtime under the workflow's budget."""
    if (
        refused := not_a_function(my_decide, "my_decide must be a function (task, observations) -> dict")
    ) is not None:
        return refused
    if (name := handed_in(my_decide)) is not None:
        return labkits_version(name, "decide")
    corpus = docuctl()
    limits = {"max_turns": BASE_TOOL_BUDGET + 1, "max_tools": BASE_TOOL_BUDGET}
    passed = calls = ref_passed = ref_calls = 0
    for where, task, case in tasks(corpus):
        watch, raised = REFERENCES.watch(), []
        try:
            got = decide_run(my_decide, task, corpus, watch, raised)
        except (TimedOut, LabError) as error:
            return crashed(error, f"on {where}")
        if watch.seen is not None:
            return labkits_version(watch.seen, "decide")
        if got["stop"] == "step_timeout":
            return crashed(TimedOut(limit_s()), f"on {where}")
        if got["stop"] == "invalid_decision" and raised:
            return crashed(raised[0], f"on {where}")
        want = run(task, scripted, tools=docuctl_tools(task, corpus.docs), **limits)
        if got["stop"] != want["stop"]:
            detail = f" ({shorten(got['detail'], 160)})" if got["detail"] else ""
            return fail(
                f"On {where} the runtime stopped your policy with {got['stop']}{detail}; "
                f"labkit's loop ends with {want['stop']}. Each call returns one step: search, then "
                "read the first hit, then final with its command and id."
            )
        if (got["answer"], got["citation"]) != (want["answer"], want["citation"]):
            return fail(
                f"On {where} your loop answered {shown(got['answer'])} citing {shown(got['citation'])}; "
                f"{FIXED}."
            )
        if case is None:
            continue
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
        f"{calls} tool calls) and {len(UNSEEN)} unseen questions; only the decider moved — the runtime "
        "now asks your policy each turn.",
        table,
    )


# -- exercise 1: which stage failed, and the evidence ------------------------------------------------
def _diagnosis(case_id: Any, stage: Any, reason: Any = None) -> dict[str, Any]:
    return {"case_id": shown(case_id), "stage": shown(stage), "reason": shown(reason, 1000)} if not all(
        value is None or type(value) is str for value in (case_id, stage, reason)
    ) else {"case_id": case_id, "stage": stage, "reason": reason}


@exercise("01", "failure_stage", payload=_diagnosis)
def check_failure_stage(case_id: str, stage: str | None, reason: str | None = None) -> Check:
    """Exercise: which stage made the workflow fail `case_id`, and why — a diagnosis, not a lookup.

    Retrieval is right when the reason names the ranking's facts (which page search put first,
    the tie, or that the expected page ranked second). Control is right when the reason says
    the expected page *was* among the hits but the fixed next step (read the first hit) never
    looked at it: both readings of that trace are defensible. Answer never is: the answer step
    copied the page it read exactly. A reason that claims what the trace contradicts (the page
    was not found, it ranked first, the question is misspelt, ...) fails with what the trace
    shows. An untouched cell (no stage, no reason) is not an attempt and is not recorded.
    """
    if unanswered(stage):
        return fail(NOT_YET)
    if not isinstance(case_id, str):
        return fail(f"case_id is a base case's id, a str such as 'rollback-restore', not "
                    f"{type(case_id).__name__}.")
    if not isinstance(stage, str) or str.__str__(stage) not in STAGES:
        return fail(f"choose one of {', '.join(STAGES)} (a str).")
    stage, case_id = str.__str__(stage), str.__str__(case_id)
    corpus = docuctl()
    case = next((c for c in corpus.cases if c["id"] == case_id), None)
    if case is None:
        return fail(f"there is no base case {shorten(case_id, 60)!r}.")
    facts = trace_facts(case, corpus)
    if facts["result"]["citation"] == case["expected_doc"]:
        return fail(f"the workflow passes {case_id!r}; pick the case it fails.")
    ids, expected = facts["ids"], case["expected_doc"]
    if stage == "answer":
        return fail(
            "the answer step copied the command of the page it read, exactly: look at what it read, and why."
        )
    if reason is not None and not isinstance(reason, str):
        return fail(f"`reason` is a sentence (a str) naming your evidence, not {type(reason).__name__}.")
    text = " ".join(str.__str__(reason or "").casefold().split())
    if not text:
        return fail(f"say why in `reason`: what did search rank first, and where was {expected!r}?")
    if len(text) > REASON_LIMIT:
        return fail(f"keep `reason` to a sentence or two (under {REASON_LIMIT:,} characters): the facts "
                    "of the trace.")
    first = ids[0] if ids else ""
    claim = contradiction(text, first, expected, facts["read"], expected in ids, facts["conflicts"])
    if claim:
        shows = what_it_shows(facts, expected)
        return fail(f"your reason says {claim}, but the trace shows otherwise: {shows}.")
    if stage == "retrieval" and ranking_named(text, ids, expected):
        where = "second" if expected in ids[1:] else "nowhere in the hits"
        return Check(
            True,
            f"retrieval: search ranked {first!r} first and {expected!r} {where}; a better ranking "
            "fixes it for every controller at once. (Control is defensible too, with the right reason.)",
        )
    if stage == "control" and step_named(text, ids, expected):
        return Check(
            True,
            f"control: {expected!r} was among the hits, but the fixed next step reads only the "
            "first one; a controller that checks the page before answering could recover. "
            "(Retrieval is defensible too: the ranking put it second.)",
        )
    wanted = (f"which page search ranked first and where {expected!r} ranked" if stage == "retrieval" else
              f"that {expected!r} was among the hits, and which step never looked at it")
    return fail(
        f"{stage} may be defensible, but your reason does not show it: name the facts of §5's trace, "
        f"{wanted} (search returned {ids})."
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


# The example Exercise 2's cell starts with (the notebook's `my_case`): the shape of a case, and
# one the fixed workflow solves, so running it unchanged is no attempt.
STARTING_CASE = {
    "id": "my-case", "family": "tokens", "version": "v2",
    "question": "How do I rotaet tokens?",
    "expected_doc": "tokens-v2", "expected_command": "docuctl auth tokens rotate --env staging",
    "observation": "empty_search", "why": "a misspelt verb",
}


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
        case = plain(case, "case")
    except NotPlain as odd:
        return fail(f"not a valid case: {odd.where} is a {odd.kind}; every field is a str, as in "
                    "adaptive_cases.json.")
    if case == STARTING_CASE:
        return fail(f"{NOT_ATTEMPTED}: this is the example the cell starts with, which the fixed "
                    "workflow already solves; change it into a case it fails and run the cell again")
    try:
        table = try_adaptive_case(case, corpus)
    except ValueError as problem:
        return fail(f"not a valid case: {shorten(str(problem), 300)}")
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
    if not isinstance(name, str):
        return fail(f"answer with one controller's name, a str such as {table.index[0]!r}, not "
                    f"{type(name).__name__}: one of {', '.join(table.index)}.")
    by_name = {row.casefold(): row for row in table.index}
    name = by_name.get(" ".join(str.__str__(name).casefold().split()), "")
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
        "before its one search (a change of query: retrieval, not control). The fallback, the two-rule "
        "workflow and the adaptive loop need a third "
        "tool for their second search or second read, and stop at tool_limit.",
        table,
    )
