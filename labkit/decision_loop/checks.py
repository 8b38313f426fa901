"""Lab 02's build-it cell and exercises, as `labkit.exercises.lab02`: `check_run(my_run)` beside
labkit's `run` on every case of `run_cases()` (more than `reference_table` shows), with tools that
count their calls; exercises 1-4 on model episodes replayed from `fixtures/trials/`. A learner's
function runs on copies within a time limit (`labkit.core.check.call`).
(serves: learner — a learner's code is buggy, not hostile)"""

import json
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from typing import Any

import pandas as pd

from labkit.baseline.controllers import docuctl_tools, scripted
from labkit.baseline.corpus import DOCUCTL, fixture_schema
from labkit.baseline.grading import outcome
from labkit.baseline.task import Task
from labkit.core.answers import name_in, real, shown, whole
from labkit.core.check import Check, Raised, TimedOut, call, copied, crashed, fail, not_a_function, unanswered
from labkit.core.fixtures import load_json
from labkit.core.runtime import MAX_NUMBER, STOP_REASONS, Tool, run
from labkit.core.stops import Stop
from labkit.core.text import shorten
from labkit.core.verdicts import exercise
from labkit.decision_loop.evaluation import replay_case, replay_trials
from labkit.decision_loop.tables import pass_hat_k
from labkit.decision_loop.trials import ENDED, known_cases
from labkit.model.replay import TRIALS

__all__ = [
    "RULE_RUN",
    "check_budget",
    "check_missing_rule",
    "check_pass_hat_k",
    "check_run",
    "check_stop_policy",
    "reference_table",
    "run_cases",
]

# Exercise 1's limits. Every non-final action spends a tool, so turn_limit needs
# max_turns <= max_tools and tool_limit max_turns > max_tools: turn_limit gets its own.
_LIMITS = {"max_turns": 3, "max_tools": 2}
_TURN_LIMITS = {"max_turns": 2, "max_tools": 3}
_BUDGET_CASE = "deploy-build"  # exercise 3: SmolLM2's base-prompt T=0 episode, replayed
RULE_RUN = TRIALS / "docuctl-smollm2-example-t0.jsonl"  # exercise 4: the example prompt at L1, T=0
# Exercise 2: these cases and _RANDOM_CASES more, drawn by a seeded generator: the same checks for
# everyone, some of them thirds and sevenths, so an answer rounded to a few places fails; and four with
# more trials than 20, whose factorials no int64 holds (numpy's products wrap around past 20!), two of
# them with k large enough that a product of k factors does not fit either (30 * 29 * ... * 16).
PASS_HAT_K_CASES = (
    (5, 5, 5),
    (0, 5, 1),
    (3, 5, 1),
    (3, 5, 2),
    (4, 5, 4),
    (2, 5, 3),
    (9, 10, 5),
    (20, 25, 3),
    (45, 60, 7),
    (20, 30, 15),
    (19, 21, 19),
)
_RANDOM_CASES, _DRAWS = 3, "pass^k"
_CHANGED = "(changed after validation)"  # check_run writes it into a proposal once its tool has run


TASK = Task("exercise", "rollback", "How do I restore the last release?", "v2")
_OTHER_TASK = Task("exercise-v1", "deploy", "How do I deploy the current build?", "v1")  # unshown cases only
_SEARCH, _READ = {"action": "search", "query": TASK.question}, {"action": "read", "id": "rollback-v2"}
_ANSWER = {"action": "final", "answer": "docuctl release revert --env staging", "citation": "rollback-v2"}
_ROOMY = {"max_turns": 4, "max_tools": 3}


def _raises(error: BaseException) -> Callable[..., Any]:
    def policy(task: Any, observations: list) -> Any:
        if observations:
            raise error
        return copied(_SEARCH)

    return policy


def _says(*decisions: Any) -> Callable[..., Any]:
    """A policy proposing `decisions` in turn (the last one again after that), each a fresh copy."""

    def policy(task: Any, observations: list) -> Any:
        return copied(decisions[min(len(observations), len(decisions) - 1)])

    return policy


def _failing_read(error: type[Exception], *message: str) -> Tool:
    """A read (a source) that raises a fresh `error(*message)` on every call."""

    def read(**args: Any) -> Any:
        raise error(*message)

    return Tool("read", {"id": "str"}, read, source=True)


_BROKEN_READ = _failing_read(RuntimeError, "storage offline")
_UNREACHABLE_READ = _failing_read(ConnectionError, "storage unreachable")  # an observation, no provider_error
_BARE_ERROR_READ = _failing_read(RuntimeError)  # no message: its observation is the type alone
# Not a source: it names a page, and a command, without returning the page.
_LOOKUP = Tool(
    "lookup",
    {"id": "str"},
    lambda id: {"id": id, "status": "indexed", "command": "docuctl index"},
    description="is a page indexed",
)


def _noting(task: Any, observations: list) -> dict[str, Any]:
    """The scripted loop, after adding a note of its own to the list it was handed (its copy: a list)."""
    observations.append({"action": "note", "result": len(observations)})
    return scripted(task, observations[:-1])


def _after_error(task: Any, observations: list) -> dict[str, Any]:
    """Search, read the first hit; if the read failed, say so."""
    last = observations[-1]["result"] if observations else None
    if isinstance(last, dict) and "error" in last:
        return {"action": "final", "answer": "the page could not be read", "citation": ""}
    return scripted(task, observations)


# What `run` promises, by the stop a case ends with (a wrong run's verdict quotes it): the stop
# reasons a policy alone can reach, one sentence each, in fixtures/docuctl/exercises/lab02.json.
CONTRACTS = load_json(DOCUCTL / "exercises" / "lab02.json", fixture_schema("lab02_contracts"))


@dataclass(frozen=True)
class RunCase:
    """One case of `check_run`: docuctl's tools for `task`, `tools` added or put in their place."""

    name: str
    policy: Callable[..., Any]
    limits: Mapping[str, int] = field(default_factory=lambda: dict(_LIMITS))
    tools: tuple[Tool, ...] = ()
    task: Task = TASK
    shown: bool = True
    # What a verdict says after the name of a case the table does not show (a drawn one says it in its name).
    unshown: str = " (a case the reference table does not show)"


def run_cases() -> list[RunCase]:
    """Every case `check_run` holds, built afresh (new policies, new decisions) on every call."""
    missing = [{"action": "read", "id": "no-such-page"}, _ANSWER | {"citation": "no-such-page"}]
    lookup, second = _READ | {"action": "lookup"}, _READ | {"id": "releases-v2"}
    shown = [
        RunCase("scripted search, read, answer", scripted),
        RunCase("an unknown action", _says({"action": "delete_page", "id": "x"})),
        RunCase("a proposal that is not an object", _says("search the docs")),
        RunCase("an extra field", _says(_SEARCH | {"sudo": True})),
        RunCase("a missing field", _says({"action": "read"})),
        RunCase("a number where a string is due", _says({"action": "read", "id": 7})),
        RunCase("decide raises KeyError", _raises(KeyError("result"))),
        RunCase("decide raises ConnectionError", _raises(ConnectionError("refused"))),
        RunCase("keeps searching, 2 tools", _says(_SEARCH)),
        RunCase("keeps searching, 3 tools, 2 turns", _says(_SEARCH), _TURN_LIMITS),
        RunCase("cites a page it never read", _says(_ANSWER)),
        RunCase("searches, then cites a hit unread", _says(_SEARCH, _ANSWER)),
        RunCase("reads, then cites it", _says(_READ, _ANSWER)),
        RunCase("a tool that raises", _after_error, _ROOMY, (_BROKEN_READ,)),
        RunCase("final with a blank answer", _says(_ANSWER | {"answer": " ", "citation": ""})),
    ]
    hidden = [  # not in the reference table: a run fitted to the cases it shows fails on these
        RunCase("no tool allowed", _says(_SEARCH), {"max_turns": 2, "max_tools": 0}),
        RunCase("one turn only", scripted, {"max_turns": 1, "max_tools": 2}),
        RunCase("another question, version v1", scripted, task=_OTHER_TASK),
        RunCase("reads a page that does not exist, then cites it", _says(*missing)),
        RunCase("a tool that is not a source names a page", _says(lookup, _ANSWER), tools=(_LOOKUP,)),
        RunCase("final with an undeclared field", _says(_ANSWER | {"confidence": "high"})),
        RunCase("decide raises TimeoutError", _raises(TimeoutError("timed out"))),
        RunCase("decide raises ValueError", _raises(ValueError("Expecting value: line 1 column 1"))),
        RunCase("reads two pages, cites the first", _says(_READ, second, _ANSWER), _ROOMY),
        RunCase("a source tool named open, then cites its page", _says(_OPENED, _ANSWER), tools=(_OPEN,)),
        RunCase(
            "reads a page, then cites it in capitals", _says(_READ, _ANSWER | {"citation": "ROLLBACK-V2"})
        ),
        RunCase(
            "reads a page, then cites a part of its id", _says(_READ, _ANSWER | {"citation": "rollback"})
        ),
        RunCase(
            "reads a page, answers in its own spacing and case", _says(_READ, _ANSWER | {"answer": _SPACED})
        ),
        RunCase(
            "a source that returns a list, then cites its page", _says(_LISTED, _ANSWER), tools=(_LISTING,)
        ),
        RunCase(
            "a source whose id is a number, then cites it", _says(_NUMBERED, _SEVEN), tools=(_NUMBERING,)
        ),
        RunCase(
            "a source page without a command, then cites it", _says(_FAQ_READ, _FAQ_CITED), tools=(_FAQ,)
        ),
        RunCase("a tool that returns nothing", _says(_LOOKED, _ANSWER | {"citation": ""}), tools=(_SILENT,)),
        RunCase("a tool that raises ConnectionError", _after_error, _ROOMY, (_UNREACHABLE_READ,)),
        RunCase("a tool that raises with no message", _after_error, _ROOMY, (_BARE_ERROR_READ,)),
        RunCase("a proposal written as JSON text", _says(json.dumps(_SEARCH))),
        RunCase("a proposal as a list of pairs", _says(list(_SEARCH.items()))),
        RunCase("reads a page, then cites None", _says(_READ, _ANSWER | {"citation": None})),
        RunCase(
            "a source whose id is a list", _says(_LISTED_ID, _ANSWER | {"citation": ""}), tools=(_LIST_ID,)
        ),
        RunCase("a source that returns nothing", _says(_VOIDED, _ANSWER | {"citation": ""}), tools=(_VOID,)),
        RunCase("a policy that adds to its own observations", _noting),
    ]
    return shown + [replace(case, shown=False) for case in hidden] + drawn_run_cases() + planned_run_cases()


_OPENED = {"action": "open", "page": "rollback-v2"}  # a read by another name and argument
# What a drawn case's policy may propose, each on the boundary of a rule: a search, reads of a hit, of
# another page and of none, answers citing the page read, another or none, a blank answer, a lookup
# or an open (which only the lookup and open tools know); and, one proposal in ten, each kind of invalid one.
_VALID = (
    _SEARCH,
    _READ,
    _READ | {"id": "releases-v2"},
    _READ | {"id": "no-such-page"},
    _ANSWER,
    _ANSWER | {"citation": "releases-v2"},
    _ANSWER | {"answer": "docuctl deploy", "citation": ""},
    _ANSWER | {"answer": " "},
    _ANSWER | {"citation": " "},
    _READ | {"action": "lookup"},
    _OPENED,
)
_INVALID = (
    {"action": "delete_page", "id": "x"},
    _SEARCH | {"sudo": True},
    {"action": "read", "id": 7},
    "read",
    None,  # what a decide whose body is still `...` returns
)


def _open(page: str) -> Any:
    return docuctl_tools(TASK)["read"].call(id=page)


# A source by another name, and another argument's: the page it returns is citable, as a read's is.
_OPEN = Tool("open", {"page": "str"}, _open, source=True, description="a page by its id")
# Sources whose result is no page a run may cite: a list of pages, and a dict whose id is a number.
_LISTING = Tool("pages", {"id": "str"}, lambda id: [{"id": id}], source=True, description="pages by id")
_NUMBERING = Tool(
    "page_number", {"id": "str"}, lambda id: {"id": 7}, source=True, description="a page's number"
)
_LISTED = {"action": "pages", "id": "rollback-v2"}
_NUMBERED = {"action": "page_number", "id": "rollback-v2"}
_SEVEN = _ANSWER | {"citation": "7"}
# A source whose page has no command (what makes a page citable is the tool, not the page's fields), and
# a tool that returns None (its observation is None, not an error).
_FAQ = Tool("faq", {"id": "str"}, lambda id: {"id": id, "text": "Ask in #docuctl."}, source=True)
_FAQ_READ, _FAQ_CITED = {"action": "faq", "id": "faq"}, _ANSWER | {"citation": "faq"}
_SILENT = Tool("lookup", {"id": "str"}, lambda id: None, description="is a page indexed")
# Sources whose result has no id a run can keep (a list, which no set holds) or is no dict at all.
_LIST_ID = Tool("shelf", {"id": "str"}, lambda id: {"id": [id]}, source=True, description="a shelf of pages")
_VOID = Tool("archive", {"id": "str"}, lambda id: None, source=True, description="an archived page")
_LISTED_ID, _VOIDED = {"action": "shelf", "id": "rollback-v2"}, {"action": "archive", "id": "rollback-v2"}
_LOOKED = {"action": "lookup", "id": "rollback-v2"}
_SPACED = " Docuctl  release revert --env staging "  # an answer is handed back as the policy wrote it
_DRAWN_TOOLS = (
    ((), ""),
    ((_BROKEN_READ,), ", a read that fails"),
    ((_LOOKUP, _OPEN), ", a lookup tool and a source named open"),
)
# For the planned cases: a tool whose argument is a number (handed on as the policy wrote it, 2.5 too)
# and a source whose page id has spaces around it (cited as it was returned).
_RANK = Tool("rank_of", {"rank": "number"}, lambda rank: {"rank": rank}, description="a hit's rank")
_SPACED_ID = Tool("shelf", {"id": "str"}, lambda id: {"id": f" {id} ", "command": "docuctl"}, source=True)
_PLAN_TOOLS = (_RANK, _SPACED_ID, _OPEN)
# What a planned case reads: pages by read (one that does not exist among them), by open, by the shelf.
_PLAN_READS = (
    (_READ, "rollback-v2"),
    (_READ | {"id": "releases-v2"}, "releases-v2"),
    (_READ | {"id": "no-such-page"}, None),
    (_OPENED, "rollback-v2"),
    ({"action": "shelf", "id": "releases-v2"}, " releases-v2 "),
)
_PLAN_OTHERS = (  # the steps between reads: searches with and without hits, numbers, a broken proposal
    _SEARCH,
    {"action": "search", "query": "zzzq"},
    {"action": "rank_of", "rank": 2},
    {"action": "rank_of", "rank": 2.5},
    None,
)


def _written(proposal: Any) -> str:
    """A proposal as a call: "read(id='rollback-v2')"; one that is not a dict as its repr."""
    if not isinstance(proposal, dict):
        return shown(proposal, 40)
    if proposal == _SEARCH:
        return "search(the question)"
    # Every answer a case proposes is the same command but one (a blank or another): leave it out.
    said = {key: value for key, value in proposal.items() if (key, value) != ("answer", _ANSWER["answer"])}
    arguments = (f"{key}={shown(value, 24)}" for key, value in said.items() if key != "action")
    return f"{proposal['action']}({', '.join(arguments)})"


def drawn_run_cases(count: int = 40, seed: str = "run") -> list[RunCase]:
    """`count` cases, the same on every machine: a policy proposing 1-5 decisions in turn (`_VALID`,
    `_INVALID`), under 1-4 turns and 0-3 tool calls, with docuctl's tools, a read that fails or two more.
    A case's name lists the proposals labkit's run reads (a policy's later ones change nothing)."""
    rng, cases = random.Random(seed), []
    for number in range(1, count + 1):
        proposals = [rng.choice(_VALID if rng.random() < 0.9 else _INVALID) for _ in range(rng.randint(1, 5))]
        limits = {"max_turns": rng.randint(1, 4), "max_tools": rng.randint(0, 3)}
        tools, with_tools = rng.choice(_DRAWN_TOOLS)
        case = RunCase(f"drawn case {number}", _says(*proposals), limits, tools, shown=False, unshown="")
        read = proposals[: _run_reference(case)["turns"]] or proposals[:1]
        said = (
            f"{case.name}: {', '.join(map(_written, read))}{', …' if len(read) < len(proposals) else ''}; "
            f"{limits['max_turns']} turns, {limits['max_tools']} tool calls{with_tools}"
        )
        cases.append(replace(case, name=said))
    return cases


def planned_run_cases(count: int = 40, seed: str = "plan") -> list[RunCase]:
    """`count` cases, the same on every machine, each a plan that crosses the citation rule's boundaries:
    0-2 reads (`_PLAN_READS`) with 0-2 other steps (`_PLAN_OTHERS`) among them, then an answer citing the
    first page read, the last, a page not read or nothing, under the turns and tool calls the plan needs
    (one fewer, one time in four)."""
    rng, cases = random.Random(seed), []
    for number in range(1, count + 1):
        reads = rng.sample(_PLAN_READS, rng.randint(0, 2))
        steps = [proposal for proposal, _ in reads] + rng.sample(_PLAN_OTHERS, rng.randint(0, 2))
        rng.shuffle(steps)
        pages = [page for _, page in reads if page is not None]
        cited = rng.choice([*pages[:1], *pages[-1:], "deploy-v2", ""])
        plan = [*steps, _ANSWER | {"citation": cited}]
        tools_needed = sum(isinstance(step, dict) for step in steps)
        short = int(rng.random() < 0.25)
        limits = {"max_turns": max(len(plan) - short, 1), "max_tools": max(tools_needed - short, 0)}
        said = (  # the answer is the same in every plan: its citation is what the case varies
            f"planned case {number}: {', '.join(map(_written, steps))}{', ' if steps else ''}final citing "
            f"{cited!r}; {limits['max_turns']} turns, {limits['max_tools']} tool calls"
        )
        cases.append(RunCase(said, _says(*plan), limits, _PLAN_TOOLS, shown=False, unshown=""))
    return cases


def _case_tools(
    log: list[str],
    added: tuple[Tool, ...] = (),
    task: Task = TASK,
    made: Any = (),
    errors: list[BaseException] | None = None,
) -> dict[str, Tool]:
    """Fresh tools for one case; every call is logged in `log` (one by position as how to call it,
    refused) and hands back a copy of its result, or its error, kept in `errors`; then the last
    proposal in `made` is changed."""
    tools = docuctl_tools(task) | {tool.name: tool for tool in added}

    def counted(tool: Tool) -> Tool:
        # serves: learner — a run calling a tool by position is told how to call it
        def go(*positional: Any, **args: Any) -> Any:
            if positional or set(args) != set(tool.params):  # as the runtime calls it, or not at all
                how = f"tools[{tool.name!r}].call({', '.join(f'{p}=...' for p in tool.params)})"
                log.append(how)
                raise TypeError(f"call tools with keywords: {how}")
            log.append(tool.name)
            try:
                return copied(tool.call(**args))
            except Exception as error:  # a run that lets it escape is told it is an observation
                if errors is not None:
                    errors.append(error)
                raise
            finally:  # the run validated it before the tool ran: a run that goes on with it reads this
                if made and type(made[-1]) is dict:
                    made[-1]["action"] = _CHANGED

        return Tool(tool.name, tool.params, go, tool.source, tool.description)

    return {name: counted(tool) for name, tool in tools.items()}


def _run_reference(case: RunCase, seen: list[Any] | None = None) -> dict[str, Any]:
    """labkit's `run` on `case`: what a matching `my_run` returns; `seen` gets the observations it hands."""
    decide = _fickle(case.policy, [], [], [] if seen is None else seen)
    return run(case.task, decide, tools=_case_tools([], case.tools, case.task), **case.limits)


def _table(runs: list[tuple[RunCase, dict[str, Any]]]) -> pd.DataFrame:
    rows = {c.name: {"stop": r["stop"], "turns": r["turns"], "tool calls": r["tool_calls"]} for c, r in runs}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("case")


def reference_table() -> pd.DataFrame:
    """labkit's `run` on every case `check_run` shows (it holds more: a run fitted to the table fails)."""
    return _table([(case, _run_reference(case)) for case in run_cases() if case.shown])


def _fickle(
    policy: Callable[..., Any], made: list[Any], handed: list[str], seen: list[Any]
) -> Callable[..., Any]:
    """`policy`, keeping its proposals in `made`; `handed` gets "changed" for an observation naming a
    changed proposal and "shared" for a list an earlier call was handed (the run's own record, which a
    policy could rewrite); `seen`: a copy of the observations of each call."""
    lists: list[Any] = []  # every list handed, kept alive so that `is` cannot meet a reused id

    def decide(task: Any, observations: Any, /) -> Any:  # as labkit's run calls it: by position
        if any(isinstance(o, dict) and o.get("action") == _CHANGED for o in observations):
            handed.append("changed")
        if any(observations is earlier for earlier in lists):
            handed.append("shared")
        lists.append(observations)
        seen.append(copied(observations))
        made.append(policy(task, observations))
        return made[-1]

    return decide


@exercise("02", "run")
def check_run(my_run: Callable[..., Any] | None) -> Check:
    """Build it: the heart of `run` (see the module docstring).
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    shape = "my_run must be a function (task, decide, tools, max_turns, max_tools)"
    if (refused := not_a_function(my_run, shape)) is not None:
        return refused
    passed = []
    for case in run_cases():
        where = f"'{case.name}'" + ("" if case.shown else case.unshown)
        # The tools' calls, the policy's proposals, whether it was handed a changed one, what it saw.
        ran, made, handed, seen, errors = [], [], [], [], []
        tools = _case_tools(ran, case.tools, case.task, made, errors)
        try:
            got = call(my_run, case.task, _fickle(case.policy, made, handed, seen), tools, **case.limits)
        except Raised as raised:
            from_tool = any(raised.error is error for error in errors)  # a tool's error the run let escape
            hint = (
                " — a tool's error is an observation, {'error': ...}, and the episode goes on"
                if from_tool
                else " — a runtime must turn that into a stop reason"
            )
            return crashed(
                raised.error, f"on the case {where}{'' if isinstance(raised.error, TimedOut) else hint}"
            )
        if not isinstance(got, dict) or any(key not in got for key in ENDED):
            return fail(f"my_run returned {shown(got)} on {where}; return a dict with {', '.join(ENDED)}.")
        try:  # plain data, compared as what it shows
            mine = json.loads(json.dumps({key: got[key] for key in ENDED}))
        except (TypeError, ValueError):
            return fail(f"On {where} my_run returned {shown(got)}: return plain str, int and None values.")
        if positional := [entry for entry in ran if entry.startswith("tools[")]:
            return fail(
                f"On {where} your run called a tool otherwise: call tools with keywords, {positional[0]}."
            )
        if "changed" in handed:
            return fail(
                f"On {where} your run went on with the proposal, which the policy changed once "
                "validate_decision had checked it: use the decision validate_decision returns."
            )
        if "shared" in handed:
            return fail(
                f"On {where} your run handed the policy its own list of observations, the same list on "
                "every turn, which a policy could rewrite: hand decide a copy, list(observations)."
            )
        if (
            seen and seen[0]
        ):  # serves: learner — a list kept from an earlier run (a default `observations=[]`)
            return fail(
                f"On {where} your run's first call handed the policy {shown(seen[0], 60)} before any tool "
                "ran: start every run with a new, empty list of observations."
            )
        want_seen: list[Any] = []  # the observations labkit's run hands the policy
        want = _run_reference(case, want_seen)
        if len(ran) != mine["tool_calls"]:
            return fail(
                f"On {where} your run reported {shown(mine['tool_calls'])} tool calls but the tools ran "
                f"{len(ran)} times: count every call, and only calls that ran."
            )
        # The first that differs, the stop first: a wrong stop explains the counts and answer after it.
        if wrong := [key for key in ENDED if mine[key] != want[key]]:
            said = f"{wrong[0]}={shown(mine[wrong[0]], 60)} (expected {want[wrong[0]]!r})"
            return fail(f"On {where}: {said}. The contract: {CONTRACTS[want['stop']]}.")
        if len(seen) != len(want_seen):  # the same answer by asking the policy more often is another run
            return fail(
                f"On {where} your run asked the policy {len(seen)} times in {mine['turns']} turns; labkit's "
                "run asks it once a turn and goes on with that decision."
            )
        yours, labkits = (lists[-1] if lists else [] for lists in (seen, want_seen))
        wrong = (n for n, (mine, its) in enumerate(zip_longest(yours, labkits)) if not _observed(mine, its))
        if (n := next(wrong, None)) is not None:
            return fail(
                f"On {where} your run's observation {n + 1} was {shown(yours[n : n + 1], 90)}; labkit's run "
                f"hands the policy {shown(labkits[n : n + 1], 90)}: append what the tool returned, as it "
                "returned it, or {'error': its message}."
            )
        passed.append((case, mine))
    in_table = [(case, got) for case, got in passed if case.shown]
    return Check(
        True,
        f"your run matches labkit's on all {len(in_table)} cases of the reference table and "
        f"{len(passed) - len(in_table)} it does not show, and no tool ran that should not.",
        _table(in_table),
    )


def _observed(mine: Any, want: Mapping[str, Any] | None) -> bool:
    """Whether `mine` is labkit's observation `want` as the contract words it: the same action and result
    (other keys aside), a tool's error as {"error": text} holding its message (labkit's adds its type)."""
    if want is None or not isinstance(mine, dict) or mine.get("action") != want["action"]:
        return False
    got, result = mine.get("result"), want["result"]
    if isinstance(result, dict) and set(result) == {"error"}:
        message = re.sub(r"^\w+: ", "", result["error"])
        return isinstance(got, dict) and isinstance(got.get("error"), str) and message in got["error"]
    return got == result


def _payload(**answers: Any) -> dict[str, Any]:
    """What a progress file keeps of answers: strings cut to 100 characters, ints to MAX_NUMBER, else None."""
    kept = {name: shorten(value, 100) if isinstance(value, str) else None for name, value in answers.items()}
    ints = {name: int(value) for name, value in answers.items() if whole(value) and 0 <= value <= MAX_NUMBER}
    return kept | ints


@exercise("02", "stop_policy", payload=lambda reason, policy: _payload(reason=reason))
def check_stop_policy(reason: str, policy: Callable[[Task, list[dict[str, Any]]], Any] | None) -> Check:
    """Exercise 1: a policy that makes `run` stop with `reason`, on the rollback question under
    _LIMITS (_TURN_LIMITS for turn_limit), within the checkers' time limit.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if (stop_reason := name_in(reason, STOP_REASONS)) is None:  # " Final ", "the final": final
        return fail(f"{shown(reason, 40)} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
    reason = stop_reason
    if reason not in CONTRACTS:
        return fail(
            f"{reason!r} needs a timer, a budget or a signal from the caller, which a policy alone "
            f"cannot set; try one of {', '.join(CONTRACTS)}."
        )
    if (refused := not_a_function(policy, "a policy is a function (task, observations)")) is not None:
        return refused
    limits = _TURN_LIMITS if reason == Stop.TURN_LIMIT else _LIMITS
    under = ", ".join(f"{k}={v}" for k, v in limits.items())
    # Two episodes: a policy that reaches the stop only the first time it plays (state kept between
    # episodes) does not make run stop so.
    for episode in ("", " in a second episode"):
        try:
            # The runtime calls the policy in this thread; TimedOut (a BaseException) passes its handlers.
            result = call(run, TASK, policy, tools=_case_tools([]), **limits)
        except Raised as raised:  # the runtime counts a policy's errors, but re-raises a LabError
            return crashed(raised.error, f"while run asked it for decisions under {under}{episode}")
        detail = shorten(result["detail"] or _answered(result), 120)
        if result["stop"] != reason:
            said = f"under {under} your policy ended with stop={result['stop']}{episode} ({detail})"
            return fail(f"{said}; the table of stop reasons says what each one needs.")
    done = f"{result['turns']} turn(s) and {result['tool_calls']} tool call(s)"
    return Check(True, f"stop={reason} after {done} under {under} ({detail}).")


def _answered(result: dict[str, Any]) -> str:
    """What a final answer (the stop that has no detail) cited, as a stop policy's verdict says it."""
    cited = result.get("citation")
    return (
        f"its answer cited {shown(cited, 40)}, a page read in this run"
        if cited
        else "its answer cited nothing"
    )


@exercise("02", "pass_hat_k")
def check_pass_hat_k(fn: Callable[[int, int, int], float] | None) -> Check:
    """Exercise 2: pass^k of one case, c passes of n trials, as a number; asked only for 1 <= k <= n, the
    range the exercise states (labkit's `pass_hat_k` refuses k = 0).
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if (refused := not_a_function(fn, "my_pass_hat_k must be a function (c, n, k)")) is not None:
        return refused
    rng = random.Random(_DRAWS)
    sizes = [rng.randint(2, 12) for _ in range(_RANDOM_CASES)]
    checked = [*PASS_HAT_K_CASES, *((rng.randint(0, n), n, rng.randint(1, n)) for n in sizes)]
    for c, n, k in checked:
        try:
            got = call(fn, c, n, k)
        except Raised as raised:
            return crashed(raised.error, f"on ({c}, {n}, {k})")
        want = pass_hat_k(c, n, k)
        said = f"fn({c}, {n}, {k}) = {shown(got, 40)}, expected {want:.4f}"
        if not real(got):
            return fail(f"{said}, got a {type(got).__name__}: return a number, such as a float.")
        if not -1e-9 <= got <= 1 + 1e-9:  # within the comparison's tolerance; keeps a huge int from float()
            return fail(f"{said}: a chance is between 0 and 1.")
        if not math.isclose(got, want, abs_tol=1e-9):
            replaced = math.isclose(got, (c / n) ** k)
            rounded = abs(got - want) < 0.01 and " Return it unrounded: it is compared to 1e-9."
            why = " That is (c/n)**k: the k trials are drawn without replacement." if replaced else rounded
            return fail(f"{said}.{why or ''}")
    drawn = f"{_RANDOM_CASES} of them seeded draws"
    return Check(True, f"all {len(checked)} checks match C(c,k)/C(n,k), {drawn}.")


@exercise("02", "budget", payload=lambda tokens: _payload(tokens=tokens))
def check_budget(tokens: int | None) -> Check:
    """Exercise 3: the smallest token budget under which SmolLM2's replayed episode on
    `_BUDGET_CASE` (base prompt, T=0) is not cut short.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if not whole(tokens) or tokens < 1:
        return fail(f"give the budget as a positive int of tokens, not {shown(tokens, 40)}.")
    tokens = int(tokens)  # numpy's int64 (a pandas sum) is an int too
    free = replay_case(_BUDGET_CASE)
    needed = int(free["usage"]["prompt_tokens"] + free["usage"]["completion_tokens"])
    if tokens > needed:
        return fail(
            f"{shown(tokens, 20)} is more than this episode needs: give the smallest budget that lets it "
            "finish."
        )
    capped = replay_case(_BUDGET_CASE, budget_tokens=tokens)
    if capped["stop"] == Stop.BUDGET:
        return fail(f"too small: the episode ended stop=budget at turn {capped['turns']} of {free['turns']}.")
    spent = f"the {free['turns']} decisions of this episode spent"
    return Check(True, f"{needed} tokens is exactly what {spent}.")


@exercise("02", "missing_rule", payload=lambda stop, finals=None: _payload(stop=stop, finals=finals))
def check_missing_rule(stop: str | None, finals: int | None = None) -> Check:
    """Exercise 4: the stop reason whose rule keeps a stop-only grader from counting failures, and
    `finals`: how many of `RULE_RUN`'s episodes would end `final` without it (no table shows it).
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if (rule := name_in(stop, STOP_REASONS)) is None:
        return fail(f"{shown(stop, 40)} is not a stop reason; choose one of: {', '.join(STOP_REASONS)}.")
    stop = rule
    rows = replay_trials(RULE_RUN)
    by_stop = pd.Series([row["stop"] for row in rows]).value_counts()
    if stop != Stop.UNREAD_CITATION:  # neither the other stops nor their counts: they would give it away
        return fail(
            f"removing the {stop} rule changes few of these episodes, if any: look at how the episodes "
            "with the example prompt at L1 ended. Which rule refused the answers the model did give?"
        )
    refused = [row for row in rows if row["stop"] == Stop.UNREAD_CITATION]
    expected = len(refused) + int(by_stop.get(Stop.FINAL, 0))
    if unanswered(finals):
        return fail(
            f"unread_citation is the rule. Now the figure: how many of the {len(rows)} episodes would "
            "end `final` without it? Pass it as the second argument."
        )
    if not whole(finals):
        return fail(f"give the number of episodes as a whole number (an int), not {shown(finals, 40)}.")
    finals = int(finals)  # numpy's int64 (a pandas sum) is an int too
    if finals != expected:
        return fail(
            f"not {shown(finals, 20)}: replay the recording (replay_trials(lab02.RULE_RUN)) and count the "
            "episodes that would end `final` without that rule."
        )
    # Each refused answer as if it had ended `final`: how many would the grader still pass?
    lifted = [(row["case"], row["result"]["trace"][-1]["decision"] | {"stop": Stop.FINAL}) for row in refused]
    passed = sum(row["passed"] for row in rows) + sum(outcome(known_cases()[c], d) for c, d in lifted)
    return Check(
        True,
        f"without it, {expected} of these {len(rows)} episodes end `final` (successes, to a stop-only "
        f"grader); outcome() passes {passed}.",
    )
