"""A learner's answer to lab 01's build-it cells, handled as untrusted input.

- `plain`: a value rebuilt from exact builtin types, so a comparison runs the builtins' `==` (an
  always-equal `str` subclass is compared as the plain string it holds); `NotPlain` names where a
  value of another type sits. `shown`: a short repr of any value for a verdict.
- `REFERENCES` (`handed_in`, `watch()`): labkit's own controllers recognised when handed in
  (directly, wrapped, as a `functools.partial` or a bound method) or called while the learner's function runs
  (`sys.setprofile`); `labkits_version` is the verdict (both from `labkit.core.answers`).
- `counting`: the tools a learner's workflow calls, each call logged, results handed as copies, a
  positional or misnamed argument answered with how to call it.
- `tasks`: the base cases and questions the notebook never shows; `answer_of` reads what a workflow
  returned; `decide_run` runs a learner's decide under the runtime within the time limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labkit.baseline import controllers as _controllers
from labkit.baseline.controllers import BASE_TOOL_BUDGET, docuctl_tools, scripted, workflow
from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.task import Task, task_from
from labkit.core.answers import References, Watch, limit_s, shown
from labkit.core.check import Check, _signals_usable, copied, fail, time_limit
from labkit.core.runtime import Tool, run

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


class NotPlain(Exception):
    """A learner's value holds something that is not a plain str/int/float/bool/None/list/dict."""

    def __init__(self, where: str, value: Any) -> None:
        super().__init__(where)
        self.where, self.kind = where, type(value).__name__


def plain(value: Any, where: str = "the answer", depth: int = 0) -> Any:
    """`value` rebuilt from exact builtin types, so a comparison runs the builtins' `==`.

    A `str` subclass becomes the plain string it holds (its own `__eq__` is never asked), as do
    subclasses of int, float and bool; lists, tuples and dicts are rebuilt item by item (a
    dict from its stored items, not its `__getitem__`). Anything else raises NotPlain naming
    where it sits.
    """
    if depth > 20:
        raise NotPlain(where, value)
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
        return [plain(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(list.__iter__(list(value)))]
    if isinstance(value, dict):
        out = {}
        for key, item in dict.items(value):
            if not isinstance(key, str):
                raise NotPlain(f"a key of {where}", key)
            out[str.__str__(key)] = plain(item, f"{where}[{str.__str__(key)!r}]", depth + 1)
        return out
    raise NotPlain(where, value)


# -- labkit's own implementations, handed in or called --------------------------------------------


def _named() -> dict[Callable[..., Any], str]:
    """labkit's lab-01 controllers and their steps, each with the name a verdict gives it."""
    return {
        workflow: "`workflow`",
        scripted: "the `scripted` loop",
        _controllers._fixed: "`workflow`",
        _controllers._read_first: "`workflow`",
        _controllers._search_or_correct: "`fallback_workflow`",
        _controllers.keyword_route: "`keyword_route`",
        _controllers.spell_correct_first_workflow: "`spell_correct_first_workflow`",
        _controllers.fallback_workflow: "`fallback_workflow`",
        _controllers.two_rule_workflow: "`two_rule_workflow`",
        _controllers.adaptive_policy: "the adaptive loop",
        _controllers.adaptive_policy(docuctl().docs): "the adaptive loop",
        _controllers._Steps.search: "`workflow`",
        _controllers._Steps.read: "`workflow`",
    }


REFERENCES = References(_named)
handed_in = REFERENCES.handed_in


# -- the tools a learner's workflow calls -------------------------------------------------------------


def counting(
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



def tasks(corpus: Corpus) -> list[tuple[str, Task, dict[str, Any] | None]]:
    """(how a verdict names it, task, its graded case or None): the base cases, then unseen questions."""
    tasks: list[tuple[str, Task, dict[str, Any] | None]] = [
        (f"case {case['id']!r}", task_from(case), case) for case in corpus.cases
    ]
    for number, (version, question) in enumerate(UNSEEN, 1):
        task = Task(f"unseen-{number}", "unseen", question, version)
        tasks.append((f"the unseen {version} question {question!r}", task, None))
    return tasks


def answer_of(got: Any, where: str) -> tuple[str | None, str | None] | Check:
    """(answer, citation) from what a learner's workflow returned, as exact strs; or the verdict."""
    if got is None:
        return None, None
    if not isinstance(got, dict):
        return fail(
            f"On {where} your workflow returned {shown(got)}; return a dict with 'answer' and "
            "'citation' (or None when the search finds nothing)."
        )
    try:
        fields = plain(got, "your dict")
    except NotPlain as odd:
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


def decide_run(
    my_decide: Callable[..., Any], task: Task, corpus: Corpus, watch: Watch, raised: list[BaseException]
) -> dict[str, Any]:
    """`run` of the learner's decide on `task` (copies handed in; what it raises kept in `raised`).

    Within `limit_s()` seconds: in the main thread the time limit interrupts the decide itself;
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
    step = None if _signals_usable() else limit_s()
    with time_limit():
        return run(task, decide, tools=docuctl_tools(task, corpus.docs), step_timeout=step, **limits)


