"""Lab 01's controllers: fixed workflows call the tools themselves, decision loops (`scripted`,
`adaptive_policy`) decide one step at a time for `run`; `controllers_for()` gives all of them one search
and one budget."""

import difflib
import re
from collections.abc import Callable
from typing import Any

from labkit.baseline.corpus import docuctl
from labkit.baseline.documents import Documents, Page
from labkit.baseline.task import Task
from labkit.core.runtime import Result, Tool, run
from labkit.core.stops import Stop
from labkit.core.text import words

TOP_K = 2
BASE_TOOL_BUDGET = 2  # the baseline comparison: the workflow and the loop share two tools
ADAPTIVE_TOOL_BUDGET = 3  # one more for every controller: a revised search or a second read
_NO_MATCH = "No matching page was found."
_PAGE = "return one page {id, version, title, text, command} of this version"

_Policy = Callable[[Task, list[dict[str, Any]]], dict[str, str]]
_Steps = Callable[[Task, dict[str, Tool], Documents], "Page | str"]


def _docs(docs: Documents | None) -> Documents:
    return docuctl().docs if docs is None else docs


def docuctl_tools(task: Task, docs: Documents | None = None, *, top_k: int = TOP_K) -> dict[str, Tool]:
    """`search(query)` and `read(id)` bound to the task's version and lab 01's settings."""
    docs, version = _docs(docs), task.version

    def search(query: str) -> list[Page]:
        return docs.search(query, version, expand=True, top_k=top_k)

    ranks = f"rank this version's pages by shared terms; up to {top_k} {{id, title}} hits"
    return {
        "search": Tool("search", {"query": "str"}, search, description=ranks),
        "read": Tool(
            "read", {"id": "str"}, lambda id: docs.read(id, version), source=True, description=_PAGE
        ),
    }


class BudgetSpent(Exception):
    """A fixed workflow asked for a tool after its budget was spent."""


def traced_tools(
    task: Task,
    docs: Documents | None = None,
    *,
    top_k: int = TOP_K,
    max_tools: int = BASE_TOOL_BUDGET,
    refused: list[str] | None = None,
) -> tuple[dict[str, Tool], list[dict[str, Any]]]:
    """`docuctl_tools` for a fixed workflow, and the trace they fill as the runtime would: a call past
    `max_tools` raises BudgetSpent (and adds the tool's name to `refused`, if given: a workflow that
    catches the error is still seen to have asked), one with other arguments than the tool's keywords
    TypeError saying how to call it; a tool's ValueError becomes an `{"error"}` result, as in `run`.
    (serves: learner — a learner's workflow calls these, buggy, not hostile)"""
    trace: list[dict[str, Any]] = []

    def traced(tool: Tool) -> Tool:
        keywords = ", ".join(f"{param}=..." for param in tool.params)

        def call(*positional: Any, **args: Any) -> Any:
            if positional or set(args) != set(tool.params):
                raise TypeError(f"call tools with keywords: tools[{tool.name!r}].call({keywords})")
            if len(trace) >= max_tools:
                if refused is not None:
                    refused.append(tool.name)
                raise BudgetSpent(f"{max_tools} tool calls spent")
            try:
                result = tool.call(**args)
            except ValueError as error:
                result = {"error": str(error)}
            trace.append(
                {"turn": len(trace) + 1, "decision": {"action": tool.name, **args}, "result": result}
            )
            return result

        return Tool(tool.name, tool.params, call)

    return {name: traced(tool) for name, tool in docuctl_tools(task, docs, top_k=top_k).items()}, trace


def _fixed(steps: _Steps, task: Task, docs: Documents | None, *, top_k: int, max_tools: int) -> Result:
    """`steps` run on `traced_tools`: the outcome as the runtime's Result, its stop one of STOP_REASONS:
    tool_limit when the budget is spent, else final; a workflow that finds no page to answer from
    declines (answer and citation None) and its detail says why."""
    docs = _docs(docs)
    tools, trace = traced_tools(task, docs, top_k=top_k, max_tools=max_tools)
    stop, detail = Stop.FINAL, ""
    try:
        page: Page | str | None = steps(task, tools, docs)
    except BudgetSpent as spent:
        page, stop, detail = None, Stop.TOOL_LIMIT, str(spent)
    if isinstance(page, str) or (page and "error" in page):
        page, detail = None, page if isinstance(page, str) else page["error"]
    answer, citation = (page["command"], page["id"]) if page else (None, None)
    outcome = {"stop": stop, "answer": answer, "citation": citation, "detail": detail, "trace": trace}
    return Result(outcome, turns=len(trace), tool_calls=len(trace), elapsed=0.0, usage={})


def revise_query(question: str, vocabulary: set[str]) -> str | None:
    """The question with each unknown word replaced by its closest vocabulary word (difflib's ratio >= 0.8:
    "rolback" → "rollback"), or None if none changes."""
    ordered = sorted(vocabulary)
    revised, changed = [], False
    for word in re.findall(r"[a-z0-9]+", question.casefold()):
        if (
            word not in vocabulary
            and word in words(word)
            and (match := difflib.get_close_matches(word, ordered, n=1, cutoff=0.8))
        ):
            word, changed = match[0], True
        revised.append(word)
    return " ".join(revised) if changed else None


def conflict(task: Task, page: Page) -> str | None:
    """Why `page` cannot answer `task`, or None: it is production-only, or deprecated."""
    text = page["text"].casefold()
    if "production only" in text and task.environment == "staging":
        return "page covers production only"
    if "deprecated" in words(text):
        return "page is deprecated"
    return None


def _read_first(tools: dict[str, Tool], hits: list[Page]) -> Page | str:
    return tools["read"].call(id=hits[0]["id"]) if hits else "search found no page"


def _search_or_correct(task: Task, tools: dict[str, Tool], docs: Documents) -> list[Page]:
    """Rule one: search the question; if nothing is found, search its spelling-corrected form."""
    hits = tools["search"].call(query=task.question)
    if not hits and (revised := revise_query(task.question, docs.vocabulary(task.version))):
        hits = tools["search"].call(query=revised)
    return hits


# The fixed workflows' steps: each calls the tools as a learner's `my_workflow(task, tools)` does
# and returns the page to answer from, or a sentence saying why there is none (then the workflow
# declines: a final stop with no answer).
def _keyword_route(task: Task, tools: dict[str, Tool], docs: Documents) -> Page | str:
    """Read `<topic>-<version>` if the question names exactly one single-word topic; else no guess."""
    topics = {p["id"].rpartition("-")[0] for p in docs.pages if p["id"].endswith("-" + p["version"])}
    named = sorted({topic for topic in topics if words(topic) == {topic}} & words(task.question))
    if len(named) != 1:
        return f"{len(named)} topic words in the question" + (f": {', '.join(named)}" if named else "")
    return tools["read"].call(id=f"{named[0]}-{task.version}")


def _search_read(task: Task, tools: dict[str, Tool], docs: Documents) -> Page | str:
    return _read_first(tools, tools["search"].call(query=task.question))


def _spell_correct_first(task: Task, tools: dict[str, Tool], docs: Documents) -> Page | str:
    """Correct the spelling before the one search; it also rewrites words only unknown ("key" → "keys")."""
    query = revise_query(task.question, docs.vocabulary(task.version)) or task.question
    return _read_first(tools, tools["search"].call(query=query))


def _fallback(task: Task, tools: dict[str, Tool], docs: Documents) -> Page | str:
    return _read_first(tools, _search_or_correct(task, tools, docs))


def _two_rules(task: Task, tools: dict[str, Tool], docs: Documents) -> Page | str:
    """Rule one, plus: if the page read conflicts with the task, read the next hit."""
    hits = _search_or_correct(task, tools, docs)
    for hit in hits:
        page = tools["read"].call(id=hit["id"])
        if "error" in page or conflict(task, page) is None:
            return page
    return "every hit conflicts with the task" if hits else "search found no page"


def workflow(
    task: Task, docs: Documents | None = None, *, top_k: int = TOP_K, max_tools: int = BASE_TOOL_BUDGET
) -> Result:
    """Search the question, read the first hit, answer with its command."""
    return _fixed(_search_read, task, docs, top_k=top_k, max_tools=max_tools)


def two_rule_workflow(
    task: Task, docs: Documents | None = None, *, top_k: int = TOP_K, max_tools: int = ADAPTIVE_TOOL_BUDGET
) -> Result:
    """The workflow with the adaptive loop's two rules written in advance: on lab 01's cases, its steps."""
    return _fixed(_two_rules, task, docs, top_k=top_k, max_tools=max_tools)


def scripted(task: Task, observations: list[dict[str, Any]]) -> dict[str, str]:
    """A transparent offline policy: search the question, read the first hit, answer."""
    if not observations:
        return {"action": "search", "query": task.question}
    last = observations[-1]
    if last["action"] == "search":
        if not last["result"]:
            return {"action": "final", "answer": _NO_MATCH, "citation": ""}
        return {"action": "read", "id": last["result"][0]["id"]}
    page = last["result"]
    if "error" in page:
        return {"action": "final", "answer": page["error"], "citation": ""}
    return {"action": "final", "answer": page["command"], "citation": page["id"]}


def adaptive_policy(docs: Documents | None = None) -> _Policy:
    """The two rules as decisions: an empty first search → a revised query; a conflict → the next hit."""
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
            return {"action": "final", "answer": _NO_MATCH, "citation": ""}
        if last["action"] == "read":
            page = last["result"]
            if "error" in page:
                return {"action": "final", "answer": page["error"], "citation": ""}
            if conflict(task, page) is None:
                return {"action": "final", "answer": page["command"], "citation": page["id"]}
        unread = [hit["id"] for hit in searches[-1] if hit["id"] not in read]
        if unread:
            return {"action": "read", "id": unread[0]}
        return {"action": "final", "answer": _NO_MATCH, "citation": ""}

    return adaptive


def controllers_for(
    docs: Documents | None = None, *, adaptive: bool = True, top_k: int = TOP_K, max_tools: int | None = None
) -> dict[str, Callable[[Task], Result]]:
    """The compared controllers by name on `docs` (default docuctl), one `top_k` and one tool budget (a loop
    gets a turn more, for its final): by default two for the baseline's three (adaptive=False), else three."""
    docs = _docs(docs)
    budget = (ADAPTIVE_TOOL_BUDGET if adaptive else BASE_TOOL_BUDGET) if max_tools is None else max_tools

    def loop(policy: _Policy) -> Callable[[Task], Result]:
        return lambda task: run(
            task, policy, tools=docuctl_tools(task, docs, top_k=top_k), max_turns=budget + 1, max_tools=budget
        )

    def fixed(steps: _Steps) -> Callable[[Task], Result]:
        return lambda task: _fixed(steps, task, docs, top_k=top_k, max_tools=budget)

    table = {
        "keyword route": fixed(_keyword_route),
        "search/read workflow": fixed(_search_read),
        "scripted loop": loop(scripted),
    }
    if adaptive:
        table |= {
            "spell-correct-first workflow": fixed(_spell_correct_first),
            "fallback workflow": fixed(_fallback),
            "two-rule workflow": fixed(_two_rules),
            "adaptive loop": loop(adaptive_policy(docs)),
        }
    return table
