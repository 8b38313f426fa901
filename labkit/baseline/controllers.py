"""The lab-01 controllers: who decides the next step, on the same tools and tasks.

Fixed controllers (the developer decides every step in advance):

- `keyword_route`: exactly one known topic word in the question, then one read.
- `workflow`: search the question, read the first hit, answer with its command.
- `spell_correct_first_workflow`: correct the question's spelling, then the workflow.
- `fallback_workflow`: the workflow plus one rule: if the search finds nothing, search
  once more with the question's misspelt words corrected against the vocabulary.
- `two_rule_workflow`: the fallback workflow plus a second rule: if the page read
  conflicts with the task (production only, or deprecated), read the next hit.

Decision loops (a policy decides each step from what it observed; `run` executes it):

- `scripted`: the workflow's steps, one per turn.
- `adaptive_policy(docs)`: the two rules above, taken as decisions: an empty search → a
  revised query; a conflicting page → read the next hit.

Retrieval and budget are held constant: every search uses alias expansion and one `top_k`
(2 unless a caller changes it), every read goes through `Documents.read` (which re-checks
the version), and `controllers()` gives every controller the same tool budget; a fixed
workflow that would pass it stops with `tool_limit`, as the runtime stops a loop.
Measured on the six adaptive cases at three tools each: the two-rule workflow and the
adaptive loop both pass 6/6 with 18 tool calls, so the loop adds nothing a developer
could not list in advance. None of these is a language model; lab 02 puts one behind `run`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

from labkit.baseline.corpus import docuctl
from labkit.baseline.documents import Documents
from labkit.baseline.task import Task
from labkit.core.runtime import Result, Tool, run
from labkit.core.text import words

TOP_K = 2
BASE_TOOL_BUDGET = 2  # the baseline comparison: the workflow and the loop share two tools
ADAPTIVE_TOOL_BUDGET = 3  # one more tool for every controller: a revised search or a second read
NO_MATCH = "No matching page was found."

Controller = Callable[[Task], Result]


def _docs(docs: Documents | None) -> Documents:
    return docuctl().docs if docs is None else docs


def docuctl_tools(task: Task, docs: Documents | None = None, *, top_k: int = TOP_K) -> dict[str, Tool]:
    """`search(query)` and `read(id)` bound to the task's version and lab 01's settings."""
    docs = _docs(docs)
    version = task.version
    return {
        "search": Tool(
            "search",
            {"query": "str"},
            lambda query: docs.search(query, version, expand=True, top_k=top_k),
            description=f"rank this version's pages by shared terms; up to {top_k} {{id, title}} hits",
        ),
        "read": Tool(
            "read",
            {"id": "str"},
            lambda id: docs.read(id, version),
            source=True,
            description="return one page {id, version, title, text, command} of this version",
        ),
    }


def _outcome(
    stop: str, trace: list[dict[str, Any]], page: dict[str, str] | None = None, detail: str = ""
) -> Result:
    """A controller's result in the runtime's shape, so one grader and renderer serve all."""
    tools = sum("result" in entry for entry in trace)
    return Result(
        stop=stop,
        answer=page["command"] if page else None,
        citation=page["id"] if page else None,
        detail=detail,
        trace=trace,
        turns=len(trace),
        tool_calls=tools,
        elapsed=0.0,
        usage={},
    )


class _Spent(Exception):
    """A fixed workflow asked for a tool after its budget was spent."""


class _Steps:
    """A fixed workflow's tool calls: traced as the runtime traces them, none past `max_tools`.

    The budget binds a fixed workflow exactly as `run(max_tools=...)` binds a loop: the
    call that would pass it is not made, and the workflow stops with `tool_limit`.
    """

    def __init__(self, task: Task, docs: Documents, *, top_k: int, max_tools: int) -> None:
        self.task, self.docs, self.top_k, self.max_tools = task, docs, top_k, max_tools
        self.trace: list[dict[str, Any]] = []

    def _call(self, decision: dict[str, str], call: Callable[[], Any]) -> Any:
        if len(self.trace) >= self.max_tools:
            raise _Spent(f"{self.max_tools} tool calls spent")
        try:
            result = call()
        except ValueError as error:
            result = {"error": str(error)}
        self.trace.append({"turn": len(self.trace) + 1, "decision": decision, "result": result})
        return result

    def search(self, query: str) -> list[dict[str, str]]:
        version, top_k = self.task.version, self.top_k
        return self._call(
            {"action": "search", "query": query},
            lambda: self.docs.search(query, version, expand=True, top_k=top_k),
        )

    def read(self, id: str) -> dict[str, str]:
        return self._call({"action": "read", "id": id}, lambda: self.docs.read(id, self.task.version))


def topics(docs: Documents) -> set[str]:
    """Single-word topics of the corpus: page ids of the form `<topic>-<version>`."""
    found = set()
    for page in docs.pages:
        topic, _, suffix = page["id"].rpartition("-")
        if suffix == page["version"] and words(topic) == {topic}:
            found.add(topic)
    return found


def revise_query(question: str, vocabulary: set[str]) -> str | None:
    """The question with each unknown word replaced by its closest vocabulary word.

    Returns None when no word changes (nothing better to search for). Closeness is
    difflib's ratio >= 0.8, which accepts one dropped, doubled or swapped letter in a word
    of five or more letters ("rolback" → "rollback") and little else.
    """
    ordered = sorted(vocabulary)
    revised, changed = [], False
    for word in re.findall(r"[a-z0-9]+", question.casefold()):
        if word not in vocabulary and word in words(word):
            match = difflib.get_close_matches(word, ordered, n=1, cutoff=0.8)
            if match:
                word, changed = match[0], True
        revised.append(word)
    return " ".join(revised) if changed else None


def conflict(task: Task, page: dict[str, str]) -> str | None:
    """Why `page` cannot answer `task`, or None: it is production-only, or deprecated."""
    text = page["text"].casefold()
    if "production only" in text and task.environment == "staging":
        return "page covers production only"
    if "deprecated" in words(text):
        return "page is deprecated"
    return None


# A fixed controller is a body that takes its steps through `_Steps` and returns the page
# to answer from, or a sentence saying why it has none (stop: needs_review).
Body = Callable[[_Steps], "dict[str, str] | str"]


def _fixed(task: Task, docs: Documents | None, body: Body, *, top_k: int, max_tools: int) -> Result:
    steps = _Steps(task, _docs(docs), top_k=top_k, max_tools=max_tools)
    try:
        page = body(steps)
    except _Spent as spent:
        return _outcome("tool_limit", steps.trace, detail=str(spent))
    if isinstance(page, str):
        return _outcome("needs_review", steps.trace, detail=page)
    if "error" in page:
        return _outcome("needs_review", steps.trace, detail=page["error"])
    return _outcome("final", steps.trace, page)


def keyword_route(task: Task, docs: Documents | None = None, *, max_tools: int = BASE_TOOL_BUDGET) -> Result:
    """Read `<topic>-<version>` if the question names exactly one topic; else needs_review.

    An ambiguous question (two topics) is refused with zero tool calls, not routed to
    whichever topic happens to come first.
    """
    docs = _docs(docs)
    named = sorted(topics(docs) & words(task.question))

    def body(steps: _Steps) -> dict[str, str] | str:
        if len(named) != 1:
            return f"{len(named)} topic words in the question" + (f": {', '.join(named)}" if named else "")
        return steps.read(f"{named[0]}-{task.version}")

    return _fixed(task, docs, body, top_k=TOP_K, max_tools=max_tools)


def _search_or_correct(steps: _Steps, question: str) -> list[dict[str, str]]:
    """Rule one: search the question; if nothing is found, search its spelling-corrected form."""
    hits = steps.search(question)
    if not hits:
        revised = revise_query(question, steps.docs.vocabulary(steps.task.version))
        if revised:
            hits = steps.search(revised)
    return hits


def _read_first(steps: _Steps, hits: list[dict[str, str]]) -> dict[str, str] | str:
    """Read the first hit, or say that the search found nothing (stop: needs_review)."""
    return steps.read(hits[0]["id"]) if hits else "search found no page"


def workflow(
    task: Task, docs: Documents | None = None, *, top_k: int = TOP_K, max_tools: int = BASE_TOOL_BUDGET
) -> Result:
    """Search the question, read the first hit, answer with its command."""

    def body(steps: _Steps) -> dict[str, str] | str:
        return _read_first(steps, steps.search(task.question))

    return _fixed(task, docs, body, top_k=top_k, max_tools=max_tools)


def spell_correct_first_workflow(
    task: Task, docs: Documents | None = None, *, top_k: int = TOP_K, max_tools: int = ADAPTIVE_TOOL_BUDGET
) -> Result:
    """Correct the question's spelling before searching (every time), then the workflow's steps.

    Cheaper than the fallback on a misspelt question (no wasted first search), but it also
    rewrites words that were only unknown, not wrong ("key" → "keys", "sets" → "set").
    """

    def body(steps: _Steps) -> dict[str, str] | str:
        query = revise_query(task.question, steps.docs.vocabulary(task.version)) or task.question
        return _read_first(steps, steps.search(query))

    return _fixed(task, docs, body, top_k=top_k, max_tools=max_tools)


def fallback_workflow(
    task: Task, docs: Documents | None = None, *, top_k: int = TOP_K, max_tools: int = ADAPTIVE_TOOL_BUDGET
) -> Result:
    """The workflow, plus: on no hits, search again with the spelling-corrected question."""

    def body(steps: _Steps) -> dict[str, str] | str:
        return _read_first(steps, _search_or_correct(steps, task.question))

    return _fixed(task, docs, body, top_k=top_k, max_tools=max_tools)


def two_rule_workflow(
    task: Task, docs: Documents | None = None, *, top_k: int = TOP_K, max_tools: int = ADAPTIVE_TOOL_BUDGET
) -> Result:
    """The fallback workflow, plus: if the page read conflicts with the task, read the next hit.

    Both of the adaptive loop's rules, written in advance by the developer: no policy is
    asked anything, yet on lab 01's cases it takes the same steps as the adaptive loop.
    """

    def body(steps: _Steps) -> dict[str, str] | str:
        hits = _search_or_correct(steps, task.question)
        for hit in hits:
            page = steps.read(hit["id"])
            if "error" in page or conflict(task, page) is None:
                return page
        return "every hit conflicts with the task" if hits else "search found no page"

    return _fixed(task, docs, body, top_k=top_k, max_tools=max_tools)


def scripted(task: Task, observations: list[dict[str, Any]]) -> dict[str, str]:
    """A transparent offline policy: search the question, read the first hit, answer."""
    if not observations:
        return {"action": "search", "query": task.question}
    last = observations[-1]
    if last["action"] == "search":
        hits = last["result"]
        if not hits:
            return {"action": "final", "answer": NO_MATCH, "citation": ""}
        return {"action": "read", "id": hits[0]["id"]}
    page = last["result"]
    if "error" in page:
        return {"action": "final", "answer": page["error"], "citation": ""}
    return {"action": "final", "answer": page["command"], "citation": page["id"]}


def adaptive_policy(docs: Documents | None = None) -> Callable[[Task, list[dict[str, Any]]], dict[str, str]]:
    """A policy that chooses its next action from its observations (see module docstring)."""
    docs = _docs(docs)

    def adaptive(task: Task, observations: list[dict[str, Any]]) -> dict[str, str]:
        if not observations:
            return {"action": "search", "query": task.question}
        searches = [o["result"] for o in observations if o["action"] == "search"]
        read = {o["result"].get("id") for o in observations if o["action"] == "read"}
        last = observations[-1]
        if last["action"] == "search" and not last["result"]:
            revised = revise_query(task.question, docs.vocabulary(task.version))
            if revised and len(searches) == 1:
                return {"action": "search", "query": revised}
            return {"action": "final", "answer": NO_MATCH, "citation": ""}
        if last["action"] == "read":
            page = last["result"]
            if "error" in page:
                return {"action": "final", "answer": page["error"], "citation": ""}
            if conflict(task, page) is None:
                return {"action": "final", "answer": page["command"], "citation": page["id"]}
        unread = [hit["id"] for hit in searches[-1] if hit["id"] not in read]
        if unread:
            return {"action": "read", "id": unread[0]}
        return {"action": "final", "answer": NO_MATCH, "citation": ""}

    return adaptive


def controllers(
    docs: Documents | None = None, *, adaptive: bool = True, top_k: int = TOP_K, max_tools: int | None = None
) -> dict[str, Controller]:
    """The compared controllers, by name, all on `docs` (default: the docuctl corpus).

    Every controller gets the same search setting (`top_k`, 1..3) and the same tool budget
    (`max_tools`, 1..6; a loop gets one turn more, for its final answer). By default the
    budget is two tools for the baseline's three controllers (adaptive=False) and three
    tools for all seven when the adaptive ones join (one more: a corrected search or a
    second read). The baseline's three never use a third tool, so their rows do not
    change with it. Raises ValueError for a top_k or max_tools outside its range.
    """
    docs = _docs(docs)
    budget = (ADAPTIVE_TOOL_BUDGET if adaptive else BASE_TOOL_BUDGET) if max_tools is None else max_tools
    if type(top_k) is not int or top_k not in (1, 2, 3):
        raise ValueError(f"top_k must be 1, 2 or 3, not {top_k!r}")
    if type(budget) is not int or not 1 <= budget <= 6:
        raise ValueError(f"max_tools must be an int in 1..6, not {budget!r}")
    limits = {"top_k": top_k, "max_tools": budget}

    def loop(policy: Callable[[Task, list[dict[str, Any]]], dict[str, str]]) -> Controller:
        return lambda task: run(
            task, policy, tools=docuctl_tools(task, docs, top_k=top_k), max_turns=budget + 1, max_tools=budget
        )

    def fixed(controller: Callable[..., Result]) -> Controller:
        return lambda task: controller(task, docs, **limits)

    table: dict[str, Controller] = {
        "keyword route": lambda task: keyword_route(task, docs, max_tools=budget),
        "search/read workflow": fixed(workflow),
        "scripted loop": loop(scripted),
    }
    if adaptive:
        table |= {
            "spell-correct-first workflow": fixed(spell_correct_first_workflow),
            "fallback workflow": fixed(fallback_workflow),
            "two-rule workflow": fixed(two_rule_workflow),
            "adaptive loop": loop(adaptive_policy(docs)),
        }
    return table
