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

import functools
import re
import sys
from collections.abc import Callable
from types import CodeType
from typing import Any

import pandas as pd

from labkit.baseline import controllers as _controllers
from labkit.baseline.controllers import BASE_TOOL_BUDGET, controllers, docuctl_tools, scripted, workflow
from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.documents import query_terms
from labkit.baseline.grading import compare, evaluate, outcome
from labkit.baseline.task import Task, TaskError, task_from
from labkit.core.check import (
    LIMIT_S,
    NOT_YET,
    Check,
    Raised,
    TimedOut,
    _signals_usable,
    call,
    copied,
    crashed,
    fail,
    learner_line,
    not_a_function,
    time_limit,
    unanswered,
)
from labkit.core.errors import LabError
from labkit.core.fixtures import ADAPTIVE_CASES, schema_error
from labkit.core.progress import exercise
from labkit.core.runtime import Tool, run
from labkit.core.text import shorten, words

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
# Questions the notebook never shows, beside the 18 base cases: every one finds pages, so
# the workflow's steps are the same as on the base cases; only a memorised table fails them.
UNSEEN = (
    ("v1", "How do I scale the workers?"),
    ("v2", "How do I promote a build?"),
    ("v2", "How do I purge the cache?"),
    ("v1", "How do I run the migrations?"),
    ("v2", "Where are the service logs?"),
    ("v2", "How do I invalidate cache entries?"),
)


def _shown(value: Any, limit: int = 80) -> str:
    """A short repr of a learner's value for a verdict (a repr that raises or is huge included)."""
    try:
        return shorten(repr(value), limit)
    except Exception:  # noqa: BLE001 - an unprintable answer is named by its type
        return f"a value of type {type(value).__name__}"


class _NotPlain(Exception):
    """A learner's value holds something that is not a plain str/int/float/bool/None/list/dict."""

    def __init__(self, where: str, value: Any) -> None:
        super().__init__(where)
        self.where, self.kind = where, type(value).__name__


def _plain(value: Any, where: str = "the answer", depth: int = 0) -> Any:
    """`value` rebuilt from exact builtin types, so a comparison runs the builtins' `==`.

    A `str` subclass becomes the plain string it holds (its own `__eq__` is never asked), as do
    subclasses of int, float and bool; lists, tuples and dicts are rebuilt item by item (a
    dict from its stored items, not its `__getitem__`). Anything else raises _NotPlain naming
    where it sits.
    """
    if depth > 20:
        raise _NotPlain(where, value)
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(int.__int__(value))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, list | tuple):
        return [_plain(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(list.__iter__(list(value)))]
    if isinstance(value, dict):
        out = {}
        for key, item in dict.items(value):
            if not isinstance(key, str):
                raise _NotPlain(f"a key of {where}", key)
            out[str.__str__(key)] = _plain(item, f"{where}[{str.__str__(key)!r}]", depth + 1)
        return out
    raise _NotPlain(where, value)


# -- labkit's own implementations, handed in or called --------------------------------------------


def _reference_codes() -> dict[CodeType, str]:
    """The code objects of labkit's lab-01 controllers, each with the name a verdict gives it."""
    named: dict[Callable[..., Any], str] = {
        workflow: "labkit's `workflow`",
        scripted: "labkit's `scripted` loop",
        _controllers._fixed: "labkit's `workflow`",
        _controllers._read_first: "labkit's `workflow`",
        _controllers._search_or_correct: "labkit's `fallback_workflow`",
        _controllers.keyword_route: "labkit's `keyword_route`",
        _controllers.spell_correct_first_workflow: "labkit's `spell_correct_first_workflow`",
        _controllers.fallback_workflow: "labkit's `fallback_workflow`",
        _controllers.two_rule_workflow: "labkit's `two_rule_workflow`",
        _controllers.adaptive_policy: "labkit's adaptive loop",
        _controllers._Steps.search: "labkit's `workflow`",
        _controllers._Steps.read: "labkit's `workflow`",
    }
    codes = {fn.__code__: name for fn, name in named.items()}
    codes[_controllers.adaptive_policy(docuctl().docs).__code__] = "labkit's adaptive loop"
    return codes


@functools.cache
def _codes() -> dict[CodeType, str]:
    return _reference_codes()


def _handed_in(answer: Any) -> str | None:
    """Which labkit implementation `answer` is (itself, wrapped, a partial or a bound method), or None."""
    codes, seen = _codes(), set()
    fn = answer
    while fn is not None and id(fn) not in seen:
        seen.add(id(fn))
        try:
            code = getattr(fn, "__code__", None)
            if isinstance(code, CodeType) and code in codes:
                return codes[code]
            if isinstance(fn, functools.partial):
                fn = fn.func
                continue
            fn = getattr(fn, "__wrapped__", None) or getattr(fn, "__func__", None)
        except Exception:  # noqa: BLE001 - a hostile attribute is no delegation
            return None
    return None


class _Watch:
    """Notes whether a learner's function runs one of labkit's reference controllers.

    `wrap(fn)` returns a function that, while `fn` runs, has `sys.setprofile` note every
    Python call; a call into one of `_codes()` sets `seen` to its name. Installed inside the
    wrapper, so it holds in whichever thread the function runs, and the previous profile
    function is put back afterwards.
    """

    def __init__(self) -> None:
        self.seen: str | None = None
        self.codes = _codes()

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            previous = sys.getprofile()

            def note(frame: Any, event: str, arg: Any) -> None:
                if event == "call" and self.seen is None:
                    self.seen = self.codes.get(frame.f_code)

            sys.setprofile(note)
            try:
                return fn(*args, **kwargs)
            finally:
                sys.setprofile(previous)

        return watched


def _labkits_version(name: str, yours: str) -> Check:
    return fail(
        f"that is labkit's version ({name}), handed in or called from your function; write your own "
        f"{yours}: the steps are yours to write here, labkit's is for comparing after."
    )


# -- the tools a learner's workflow calls -------------------------------------------------------------


def _counting(
    tools: dict[str, Tool], log: list[tuple[str, dict[str, Any]]], misuse: list[str]
) -> dict[str, Tool]:
    """The tools, each call logged as (name, arguments) before it runs; results handed as copies.

    A call with a positional argument, or with another argument name than the tool's, is
    noted in `misuse` (the sentence a verdict gives) and raises TypeError saying the same.
    """

    def wrap(tool: Tool) -> Tool:
        keywords = ", ".join(f"{param}=..." for param in tool.params)
        how = f"call tools with keywords: tools[{tool.name!r}].call({keywords})"

        def call_logged(*positional: Any, **args: Any) -> Any:
            if positional:
                misuse.append(f"called tools[{tool.name!r}].call with a positional argument{{at}}; {how}")
                raise TypeError(how)
            if set(args) != set(tool.params):
                named = ", ".join(f"{name}=" for name in args) or "no argument"
                misuse.append(f"called tools[{tool.name!r}].call with {named}{{at}}; {how}")
                raise TypeError(how)
            log.append((tool.name, args))
            return copied(tool.call(**args))

        return Tool(tool.name, tool.params, call_logged, tool.source, tool.description)

    return {name: wrap(tool) for name, tool in tools.items()}


def _summary(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows).set_index("controller")


def _tasks(corpus: Corpus) -> list[tuple[str, Task, dict[str, Any] | None]]:
    """(how a verdict names it, task, its graded case or None): the base cases, then unseen questions."""
    tasks: list[tuple[str, Task, dict[str, Any] | None]] = [
        (f"case {case['id']!r}", task_from(case), case) for case in corpus.cases
    ]
    for number, (version, question) in enumerate(UNSEEN, 1):
        task = Task(f"unseen-{number}", "unseen", question, version)
        tasks.append((f"the unseen {version} question {question!r}", task, None))
    return tasks


def _answer_of(got: Any, where: str) -> tuple[str | None, str | None] | Check:
    """(answer, citation) from what a learner's workflow returned, as exact strs; or the verdict."""
    if got is None:
        return None, None
    if not isinstance(got, dict):
        return fail(
            f"On {where} your workflow returned {_shown(got)}; return a dict with 'answer' and "
            "'citation' (or None when the search finds nothing)."
        )
    try:
        fields = _plain(got, "your dict")
    except _NotPlain as odd:
        return fail(
            f"On {where} {odd.where} is a {odd.kind}; return the page's command and id as they are: "
            "{'answer': page['command'], 'citation': page['id']}."
        )
    if not {"answer", "citation"} <= set(fields):
        return fail(
            f"On {where} your workflow returned a dict with {sorted(fields)[:4]}; return one with "
            "'answer' and 'citation' (or None when the search finds nothing)."
        )
    answer, citation = fields["answer"], fields["citation"]
    for name, value in (("answer", answer), ("citation", citation)):
        if value is not None and type(value) is not str:
            return fail(
                f"On {where} your {name!r} is a {type(value).__name__}; it is the page's "
                f"{'command' if name == 'answer' else 'id'}, a str."
            )
    return answer, citation


@exercise("01", "workflow")
def check_workflow(my_workflow: Callable[..., Any] | None) -> Check:
    """Build it: the fixed search → read-first-hit workflow (see the module docstring)."""
    if (
        refused := not_a_function(my_workflow, "my_workflow must be a function (task, tools) -> dict")
    ) is not None:
        return refused
    if (name := _handed_in(my_workflow)) is not None:
        return _labkits_version(name, "workflow")
    corpus = docuctl()
    passed = calls = ref_passed = ref_calls = 0
    for where, task, case in _tasks(corpus):
        log: list[tuple[str, dict[str, Any]]] = []
        misuse: list[str] = []
        watch = _Watch()
        try:
            tools = _counting(docuctl_tools(task, corpus.docs), log, misuse)
            got = call(watch.wrap(my_workflow), task, tools)
        except Raised as raised:
            if watch.seen is not None:
                return _labkits_version(watch.seen, "workflow")
            if misuse and not isinstance(raised.error, TimedOut):
                line = learner_line(raised.error)
                return fail(f"On {where} your workflow {misuse[0].format(at=f' at {line}' if line else '')}.")
            return crashed(raised.error, f"on {where}")
        if watch.seen is not None:
            return _labkits_version(watch.seen, "workflow")
        if misuse:  # the learner caught the TypeError and went on
            return fail(f"On {where} your workflow {misuse[0].format(at='')}.")
        want = workflow(task, corpus.docs)
        if len(log) > BASE_TOOL_BUDGET:
            return fail(
                f"On {where} your workflow made {len(log)} tool calls; its budget is "
                f"{BASE_TOOL_BUDGET}: one search, one read."
            )
        answer = _answer_of(got, where)
        if isinstance(answer, Check):
            return answer
        if answer != (want["answer"], want["citation"]):
            hits = want["trace"][0]["result"]
            first = hits[0]["id"] if hits else None
            shown = None if got is None else answer
            return fail(
                f"On {where} your workflow answered {_shown(shown, 160)}; the first hit was {first!r}: "
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


def _decide_run(
    my_decide: Callable[..., Any], task: Task, corpus: Corpus, watch: _Watch, raised: list[BaseException]
) -> dict[str, Any]:
    """`run` of the learner's decide on `task` (copies handed in; what it raises kept in `raised`).

    Within LIMIT_S seconds: in the main thread the time limit interrupts the decide itself;
    elsewhere the runtime's own step timeout bounds each decision.
    """
    watched = watch.wrap(my_decide)

    def decide(task: Any, observations: Any) -> Any:
        try:
            return watched(copied(task), copied(observations))
        except Exception as error:
            raised.append(error)
            raise

    limits = {"max_turns": BASE_TOOL_BUDGET + 1, "max_tools": BASE_TOOL_BUDGET}
    step = None if _signals_usable() else LIMIT_S
    with time_limit(LIMIT_S):
        return run(task, decide, tools=docuctl_tools(task, corpus.docs), step_timeout=step, **limits)


@exercise("01", "decide")
def check_decide(my_decide: Callable[..., Any] | None) -> Check:
    """Build it: the scripted loop's `decide`, run by the runtime under the workflow's budget."""
    if (
        refused := not_a_function(my_decide, "my_decide must be a function (task, observations) -> dict")
    ) is not None:
        return refused
    if (name := _handed_in(my_decide)) is not None:
        return _labkits_version(name, "decide")
    corpus = docuctl()
    limits = {"max_turns": BASE_TOOL_BUDGET + 1, "max_tools": BASE_TOOL_BUDGET}
    passed = calls = ref_passed = ref_calls = 0
    for where, task, case in _tasks(corpus):
        watch, raised = _Watch(), []
        try:
            got = _decide_run(my_decide, task, corpus, watch, raised)
        except (TimedOut, LabError) as error:
            return crashed(error, f"on {where}")
        if watch.seen is not None:
            return _labkits_version(watch.seen, "decide")
        if got["stop"] == "step_timeout":
            return crashed(TimedOut(LIMIT_S), f"on {where}")
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
                f"On {where} your loop answered {_shown(got['answer'])} citing {_shown(got['citation'])}; "
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

STAGES = ("retrieval", "control", "answer")
REASON_LIMIT = 1000  # characters: a reason is a sentence or two
# A retrieval reason names how the ranking went: which page came first, the tie, or where the
# expected page ranked. A control reason names that the expected page was among the hits and
# that the fixed next step (read the first) never looked at it.
RANKING = r"rank|first|order|score|tie|above|ahead|before|top|higher|sort|alphabet|beat|won|win"
TIE = (r"\btie|\btied|same score|equal score|scored? the same|both score|score (of )?2|smaller id|"
       r"alphabet|by id")
LOWER = r"second|2nd|hit 2|#2|number 2|position 2|below|lower|behind|not first|\blost|after"
IN_HITS = (r"second|2nd|hit 2|#2|returned|found|among|in the (hits|results|list)|retrieved|listed|"
           r"a hit|the hits")
STEP = r"read|pick|chose|choose|select|check|only|always|next|blind|look|open"
RIGHT_PAGE = r"(right|correct|expected|relevant|proper|needed|wanted) (page|doc|document|hit|one|result)"
NEGATION = r"(not|never|n't|no|without|instead of|rather than|failed to|unable to)\W+(\w+\W+){0,3}$"


def _diagnosis(case_id: Any, stage: Any, reason: Any = None) -> dict[str, Any]:
    return {"case_id": _shown(case_id), "stage": _shown(stage), "reason": _shown(reason, 1000)} if not all(
        value is None or type(value) is str for value in (case_id, stage, reason)
    ) else {"case_id": case_id, "stage": stage, "reason": reason}


def _said(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


def _names(page_id: str) -> str:
    """A pattern for a page named by its id ("rollback-v2") or its topic ("rollback")."""
    topic = page_id.rsplit("-", 1)[0]
    return rf"\b({re.escape(page_id)}|{re.escape(topic)})\b"


def _affirmed(pattern: str, text: str) -> bool:
    """`pattern` occurs in `text` at least once without a negation just before it."""
    return any(not re.search(NEGATION, text[: match.start()][-40:]) for match in re.finditer(pattern, text))


def _contradiction(
    text: str, first: str, expected: str, read: str | None, found: bool, conflicts: bool
) -> str:
    """What `text` claims that the trace contradicts (a phrase for the verdict), or ""."""
    page = rf"({_names(expected)}|{RIGHT_PAGE}|it\b)"
    clauses = re.split(r"[.;,:!?]|\bbut\b|\bwhile\b|\bthough\b", text)
    if found:
        negated_find = (r"(not|never|n't|failed to|unable to)\W+(\w+\W+){0,2}"
                        r"(find|found|return|retrieve|surface|include|list|show|get|hit)")
        for clause in clauses:
            if _said(negated_find, clause) and not _said(r"first|top|highest|above|ahead|\bread\b", clause):
                return f"that search did not find {expected!r}"
        nothing = r"no (hits|results)|found nothing|returned nothing|empty (search|result|list)|nothing came"
        missing = (rf"{page}\W+(\w+\W+){{0,3}}(missing|absent)|"
                   r"(not|never) (in|among) (the )?(hits|results|list)")
        if _said(nothing, text) or _said(missing, text):
            return f"that search did not find {expected!r}"
    ranked = r"\W+(was |is |came |got |ranked |scored )?(ranked )?"
    if _affirmed(rf"{_names(expected)}{ranked}(first|top|1st|hit 1)\b", text):
        return f"that {expected!r} ranked first"
    if _affirmed(rf"{_names(first)}{ranked}(second|2nd|last|lower)\b", text):
        return f"that {first!r} ranked below {expected!r}"
    if read != expected and _affirmed(rf"\bread (the )?({_names(expected)}|{RIGHT_PAGE})", text):
        return f"that the workflow read {expected!r}"
    if _said(r"misspel|typo|spelling|spelt", text):
        return "that the question is misspelt"
    if _said(r"\bv1\b|wrong version|other version|older version", text):
        return "that a page of another version was involved"
    if not conflicts and _affirmed(r"production|deprecated|conflict", text):
        return f"that {read!r} conflicts with the task"
    return ""


def _trace_facts(case: dict[str, Any], corpus: Corpus) -> dict[str, Any]:
    """The facts of the workflow's trace on `case` that a diagnosis can name."""
    task = task_from(case)
    result = workflow(task, corpus.docs)
    ids = [hit["id"] for hit in result["trace"][0]["result"] or []]
    read = result["trace"][1]["decision"]["id"] if len(result["trace"]) > 1 else None
    terms = query_terms(case["question"], corpus.docs.aliases, expand=True)
    scores = {}
    for page_id in ids:
        page = corpus.docs.read(page_id, task.version)
        scores[page_id] = len(terms & words(page["title"] + " " + page["text"]))
    page = corpus.docs.read(read, task.version) if read else None
    return {"result": result, "ids": ids, "read": read, "scores": scores,
            "conflicts": page is not None and _controllers.conflict(task, page) is not None}


def _what_it_shows(facts: dict[str, Any], expected: str) -> str:
    ids, scores = facts["ids"], facts["scores"]
    where = f"{expected!r} hit {ids.index(expected) + 1}" if expected in ids else f"no {expected!r}"
    scored = " and ".join(f"{page} {score}" for page, score in scores.items())
    return (f"search returned {ids} ({where}; scores {scored}), and the workflow read {facts['read']!r} "
            "and answered with its command")


def _untouched_diagnosis(stage: Any, reason: Any) -> bool:
    return unanswered(stage) and (unanswered(reason) or (type(reason) is str and not reason.strip()))


@exercise("01", "failure_stage", payload=_diagnosis)
def _check_failure_stage(case_id: str, stage: str | None, reason: str | None = None) -> Check:
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
    facts = _trace_facts(case, corpus)
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
    claim = _contradiction(text, first, expected, facts["read"], expected in ids, facts["conflicts"])
    if claim:
        shows = _what_it_shows(facts, expected)
        return fail(f"your reason says {claim}, but the trace shows otherwise: {shows}.")
    named_first = bool(first) and _said(_names(first), text) and _said(RANKING, text)
    named_lower = expected in ids[1:] and _said(_names(expected), text) and _said(LOWER, text)
    if stage == "retrieval" and (named_first or named_lower or _said(TIE, text)):
        where = "second" if expected in ids[1:] else "nowhere in the hits"
        return Check(
            True,
            f"retrieval: search ranked {first!r} first and {expected!r} {where}; a better ranking "
            "fixes it for every controller at once. (Control is defensible too, with the right reason.)",
        )
    in_hits = expected in ids[1:] and (_said(_names(expected), text) or _said(RIGHT_PAGE, text)) and _said(
        IN_HITS, text)
    if stage == "control" and in_hits and _said(STEP, text):
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


@functools.wraps(_check_failure_stage)
def check_failure_stage(case_id: str, stage: str | None, reason: str | None = None) -> Check:
    if _untouched_diagnosis(stage, reason):
        return Check(False, NOT_YET)
    return _check_failure_stage(case_id, stage, reason)


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
        case = _plain(case, "case")
    except _NotPlain as odd:
        return fail(f"not a valid case: {odd.where} is a {odd.kind}; every field is a str, as in "
                    "adaptive_cases.json.")
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
