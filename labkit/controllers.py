"""The lab-01 controllers: who decides the next step, on the same tools and tasks.

- `keyword_route`: a fixed route — exactly one known topic word, then one read.
- `workflow`: a fixed search → read-first-hit sequence.
- `fallback_workflow`: the workflow plus one developer-written rule (seed 003): if the
  search finds nothing, search once more with the question's misspelt words corrected
  against the documentation's vocabulary.
- `scripted`: a decision-loop policy that takes the workflow's steps through `run`.
- `adaptive_policy(docs)`: a decision-loop policy whose next action depends on what it
  observed: an empty search → a revised query; a page that conflicts with the task (says
  it is production-only or deprecated) → read the next hit.

Retrieval is held constant: every search here uses alias expansion and top_k=2, and
every controller reads through `Documents.read`, which re-checks the version.
None of these is a language model; lab 02 puts a model behind the same runtime.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

from labkit.corpus import docuctl
from labkit.documents import Documents
from labkit.runtime import Result, Tool, run
from labkit.task import Task
from labkit.text import words

TOP_K = 2
BASE_TOOL_BUDGET = 2  # seed 000: the workflow and the loop share a two-tool budget
ADAPTIVE_TOOL_BUDGET = 3  # one more tool: a revised search or a second read
NO_MATCH = "No matching page was found."

Controller = Callable[[Task], Result]


def _docs(docs: Documents | None) -> Documents:
    return docuctl().docs if docs is None else docs


def docuctl_tools(task: Task, docs: Documents | None = None) -> dict[str, Tool]:
    """`search(query)` and `read(id)` bound to the task's version and lab 01's settings."""
    docs = _docs(docs)
    version = task.version
    return {
        "search": Tool(
            "search",
            {"query": "str"},
            lambda query: docs.search(query, version, expand=True, top_k=TOP_K),
            description="rank this version's pages by shared terms; up to 2 {id, title} hits",
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


def _step(trace: list[dict[str, Any]], decision: dict[str, str], call: Callable[[], Any]) -> Any:
    try:
        result = call()
    except ValueError as error:
        result = {"error": str(error)}
    trace.append({"turn": len(trace) + 1, "decision": decision, "result": result})
    return result


def topics(docs: Documents) -> set[str]:
    """Single-word topics of the corpus: page ids of the form `<topic>-<version>`."""
    found = set()
    for page in docs.pages:
        topic, _, suffix = page["id"].rpartition("-")
        if suffix == page["version"] and words(topic) == {topic}:
            found.add(topic)
    return found


def keyword_route(task: Task, docs: Documents | None = None) -> Result:
    """Read `<topic>-<version>` if the question names exactly one topic; else needs_review.

    An ambiguous question (two topics) is refused with zero tool calls, not routed to
    whichever topic happens to come first.
    """
    docs = _docs(docs)
    named = sorted(topics(docs) & words(task.question))
    if len(named) != 1:
        detail = f"{len(named)} topic words in the question" + (f": {', '.join(named)}" if named else "")
        return _outcome("needs_review", [], detail=detail)
    trace: list[dict[str, Any]] = []
    id = f"{named[0]}-{task.version}"
    page = _step(trace, {"action": "read", "id": id}, lambda: docs.read(id, task.version))
    if "error" in page:
        return _outcome("needs_review", trace, detail=page["error"])
    return _outcome("final", trace, page)


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


def _search_and_read(task: Task, docs: Documents, *, fallback: bool) -> Result:
    trace: list[dict[str, Any]] = []
    query = task.question
    hits = _step(
        trace,
        {"action": "search", "query": query},
        lambda: docs.search(query, task.version, expand=True, top_k=TOP_K),
    )
    if not hits and fallback:
        revised = revise_query(query, docs.vocabulary(task.version))
        if revised:
            hits = _step(
                trace,
                {"action": "search", "query": revised},
                lambda: docs.search(revised, task.version, expand=True, top_k=TOP_K),
            )
    if not hits:
        return _outcome("needs_review", trace, detail="search found no page")
    id = hits[0]["id"]
    page = _step(trace, {"action": "read", "id": id}, lambda: docs.read(id, task.version))
    return _outcome("final", trace, page)


def workflow(task: Task, docs: Documents | None = None) -> Result:
    """Search the question, read the first hit, answer with its command."""
    return _search_and_read(task, _docs(docs), fallback=False)


def fallback_workflow(task: Task, docs: Documents | None = None) -> Result:
    """The workflow, plus: on no hits, search again with the spelling-corrected question."""
    return _search_and_read(task, _docs(docs), fallback=True)


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


def conflict(task: Task, page: dict[str, str]) -> str | None:
    """Why `page` cannot answer `task`, or None: it is production-only, or deprecated."""
    text = page["text"].casefold()
    if "production only" in text and task.environment == "staging":
        return "page covers production only"
    if "deprecated" in words(text):
        return "page is deprecated"
    return None


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


def controllers(docs: Documents | None = None, *, adaptive: bool = True) -> dict[str, Controller]:
    """The compared controllers, by name, all on `docs` (default: the docuctl corpus).

    The workflow and the scripted loop share a two-tool budget; the fallback workflow and
    the adaptive loop get one stated budget of three tools.
    """
    docs = _docs(docs)

    def loop(policy: Callable, budget: int) -> Controller:
        return lambda task: run(
            task, policy, tools=docuctl_tools(task, docs), max_turns=budget + 1, max_tools=budget
        )

    table: dict[str, Controller] = {
        "keyword route": lambda task: keyword_route(task, docs),
        "search/read workflow": lambda task: workflow(task, docs),
        "scripted loop": loop(scripted, BASE_TOOL_BUDGET),
    }
    if adaptive:
        table["fallback workflow"] = lambda task: fallback_workflow(task, docs)
        table["adaptive loop"] = loop(adaptive_policy(docs), ADAPTIVE_TOOL_BUDGET)
    return table
