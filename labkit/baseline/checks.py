"""Lab 01's checkers (`labkit.exercises.lab01`): the two build-it cells and Exercises 1-3. A build-it runs
on hidden questions too, on copies, within the time limit; its first difference from labkit's is one sentence.
(serves: learner — a learner's code is buggy, not hostile)
"""

import functools
import json
import random
from collections.abc import Callable
from typing import Any

import pandas as pd

from labkit.baseline import controllers as ctl
from labkit.baseline import diagnosis
from labkit.baseline.controllers import BASE_TOOL_BUDGET, BudgetSpent, controllers_for, workflow
from labkit.baseline.corpus import DOCUCTL, Corpus, case_problem, docuctl, fixture_schema
from labkit.baseline.documents import Documents
from labkit.baseline.grading import compare, evaluate
from labkit.baseline.task import Task, TaskError, task_from
from labkit.core import check as core
from labkit.core.answers import Recorded, name_in, shown, whole
from labkit.core.check import NOT_ATTEMPTED, NOT_YET, Check, Raised, call, crashed, fail, unanswered
from labkit.core.fixtures import load_json, schema_error
from labkit.core.runtime import run
from labkit.core.stops import Stop
from labkit.core.text import shorten, words
from labkit.core.verdicts import exercise

__all__ = [
    "check_adaptive_case",
    "check_decide",
    "check_failure_stage",
    "check_two_tool_winner",
    "check_workflow",
]


# fixtures/docuctl/exercises/lab01.json: questions the notebook never shows, Exercise 2's starting
# example (running it unchanged is no attempt), per defensible stage its verdict and what to name.
@functools.cache
def _exercise_data() -> dict[str, Any]:
    return load_json(DOCUCTL / "exercises" / "lab01.json", fixture_schema("lab01_exercises"))


_FIXED = "the workflow searches the question as asked, reads the first hit and answers with its command"


def _tasks(corpus: Corpus, *, adaptive: bool = False, drawn: int = 40) -> list[tuple[str, Task]]:
    """(how a verdict names it, task): the base cases, the unseen questions, `drawn` questions drawn the
    same on every machine, then if `adaptive` §7's. A drawn question is 1-4 words of its version's pages
    or, one word in six, a word no page holds: so the first search finds no page, one, or two."""
    tasks = [(f"case {case['id']!r}", task_from(case)) for case in corpus.cases]
    questions = [(unseen["question"], unseen["version"]) for unseen in _exercise_data()["unseen"]]
    rng = random.Random("questions")
    for version in rng.choices(("v1", "v2"), k=drawn):
        pool = sorted(corpus.docs.vocabulary(version))
        said = [rng.choice(pool) if rng.random() < 5 / 6 else "zyzzyva" for _ in range(rng.randint(1, 4))]
        questions.append((" ".join(said), version))
    tasks += [
        (f"the unseen {version} question {question!r}", Task(f"unseen-{number}", "unseen", question, version))
        for number, (question, version) in enumerate(questions, 1)
    ]
    if adaptive:
        tasks += [(f"§7's case {c['id']!r}", task_from(c)) for c in corpus.adaptive_cases]
    return tasks


def _calls(trace: list[dict[str, Any]], question: str) -> str:
    """A trace's tool calls as code, the task's question written as `task.question`."""
    calls = []
    for entry in trace:
        action, *args = entry["decision"].items()
        said = ("task.question" if type(v) is str and v == question else shown(v, 60) for _, v in args)
        calls.append(f"{action[1]}({', '.join(f'{k}={v}' for (k, _), v in zip(args, said, strict=True))})")
    return ", then ".join(calls) or "no tool"


def _answer_of(got: Any, where: str) -> tuple[str | None, str | None] | Check:
    """(answer, citation) from what a learner's workflow returned, or the verdict saying what to return."""
    if got is None:
        return None, None
    keys = isinstance(got, dict) and {"answer", "citation"} <= set(got)
    if keys and isinstance(got["answer"], str | None) and isinstance(got["citation"], str | None):
        return got["answer"], got["citation"]
    what = f"a dict with {sorted(map(str, got))[:4]}" if isinstance(got, dict) and not keys else shown(got)
    return fail(
        f"On {where} your workflow returned {what}; return a dict with 'answer' and 'citation' "
        "(the page's command and id, both str), or None when the search finds nothing."
    )


@exercise("01", "workflow")
def check_workflow(my_workflow: Callable[..., Any] | None) -> Check:
    """Build it: the fixed search → read-first-hit workflow (see the module docstring).
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    refused = core.not_a_function(my_workflow, "my_workflow must be a function (task, tools) -> dict")
    if refused is not None:
        return refused
    corpus = docuctl()
    results = {}
    for where, task in _tasks(corpus, adaptive=True):
        spent: list[str] = []
        tools, trace = ctl.traced_tools(task, corpus.docs, refused=spent)
        try:
            got = call(my_workflow, task, tools)
        except Raised as raised:
            if not isinstance(raised.error, BudgetSpent):
                return crashed(raised.error, f"on {where}")
        if spent:  # raised, or caught by the workflow itself
            return fail(
                f"On {where} your workflow made a tool call past its budget of {BASE_TOOL_BUDGET}: "
                "one search, one read."
            )
        answer = _answer_of(got, where)
        if isinstance(answer, Check):
            return answer
        want = workflow(task, corpus.docs)
        if answer != (want["answer"], want["citation"]) and not (hits := want["trace"][0]["result"]):
            return fail(
                f"On {where} search found nothing and your workflow returned {shown(got, 160)}; "
                "return None when the search finds nothing: an empty answer is still an answer."
            )
        if answer != (want["answer"], want["citation"]):
            said = shown(None if got is None else answer, 160)
            return fail(
                f"On {where} your workflow answered {said}; the first hit was {hits[0]['id']!r}: {_FIXED}."
            )
        if (yours := _calls(trace, task.question)) != (labkits := _calls(want["trace"], task.question)):
            done = {entry["decision"]["action"] for entry in trace}
            skips = {entry["decision"]["action"] for entry in want["trace"]} - done
            return fail(
                f"On {where} your workflow called {yours}; labkit's calls {labkits}"
                + (f": yours skips {' and '.join(sorted(skips))}" if skips else "")
                + ". Take every page through the tools: one search of the question as asked, one read."
            )
        results[task.id] = dict(stop=Stop.FINAL, answer=answer[0], citation=answer[1], tool_calls=len(trace))
    table = compare(
        corpus.cases, {"your workflow": lambda task: results[task.id], "labkit's workflow": workflow}
    )
    passed, _, spent = table.loc["your workflow"]
    return Check(
        True,
        f"your workflow makes labkit's tool calls on all {len(corpus.cases)} base cases, "
        f"{len(results) - len(corpus.cases) - len(corpus.adaptive_cases)} unseen questions "
        f"and §7's {len(corpus.adaptive_cases)} cases: "
        f"{passed} of {len(corpus.cases)} base cases passed with {spent} tool calls.",
        table,
    )


def _decisions(result: dict[str, Any]) -> list[Any]:
    """The decisions an episode's trace holds, turn by turn (the final answer included)."""
    return [entry.get("decision") for entry in result["trace"]]


@exercise("01", "decide")
def check_decide(my_decide: Callable[..., Any] | None) -> Check:
    """Build it: the scripted loop's `decide`, run by the runtime under the workflow's budget.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    refused = core.not_a_function(my_decide, "my_decide must be a function (task, observations) -> dict")
    if refused is not None:
        return refused
    corpus = docuctl()
    scripted_loop = controllers_for(corpus.docs, adaptive=False)["scripted loop"]
    results = {}
    for where, task in _tasks(corpus):
        policy = Recorded(functools.partial(call, my_decide))
        tools = ctl.docuctl_tools(task, corpus.docs)
        got = run(task, policy, tools=tools, max_turns=BASE_TOOL_BUDGET + 1, max_tools=BASE_TOOL_BUDGET)
        if isinstance(policy.error, Raised):
            return crashed(policy.error.error, f"on {where}")
        want = scripted_loop(task)
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
                f"{_FIXED}."
            )
        if got["tool_calls"] != want["tool_calls"]:  # the same answer by more steps is another loop
            return fail(
                f"On {where} your loop made {got['tool_calls']} tool calls and labkit's "
                f"{want['tool_calls']}: {_FIXED}, and no more (an empty search is answered at once)."
            )
        # The same answer by other steps is another loop too: a query with words added finds the same
        # hits on most questions, not on all.
        steps = zip(_decisions(got), _decisions(want), strict=False)
        for turn, (mine, labkits) in enumerate(steps, 1):
            if mine != labkits:
                return fail(f"On {where} your step {turn} proposed {shown(mine, 120)}: {_FIXED}.")
        results[task.id] = got
    table = compare(
        corpus.cases, {"your loop": lambda task: results[task.id], "labkit's scripted loop": scripted_loop}
    )
    passed, _, spent = table.loc["your loop"]
    return Check(
        True,
        f"your loop takes the workflow's steps on all {len(corpus.cases)} cases ({passed} passed, "
        f"{spent} tool calls) and {len(results) - len(corpus.cases)} unseen questions; only the "
        "decider moved — the runtime now asks your policy each turn.",
        table,
    )


@exercise("01", "failure_stage", payload=lambda case_id, stage, step=None, evidence=None: locals())
def check_failure_stage(
    case_id: str, stage: str | None, step: int | None = None, evidence: dict[str, Any] | None = None
) -> Check:
    """Exercise 1: which stage made the workflow fail `case_id`, the step of its trace where it went wrong,
    and what that trace shows, graded exactly against labkit's own reading of the run (no sentence is
    parsed, so no wording passes or fails by its words). `stage` is retrieval (step 1: the search) or
    control (step 2: the read, which takes the first hit); answer is refused (that step copied the page it
    read). `evidence` is {"first_hit": the page id search ranked first, "expected_hit": where the case's
    expected page ranked among the hits, 1-based, or None when search did not return it}.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if unanswered(stage) and unanswered(step):  # the cell as shipped: its evidence dict holds Nones
        return fail(NOT_YET)
    if unanswered(stage):  # the step filled in: the stage is what is missing, not the attempt
        left = "`...`" if stage is Ellipsis else "None"
        return fail(f"`stage` is still {left}: choose one of {', '.join(diagnosis.STAGES)}.")
    if not isinstance(case_id, str):
        return fail(
            f"case_id is a base case's id, a str such as 'rollback-restore', not {type(case_id).__name__}."
        )
    if (stage := name_in(stage, diagnosis.STAGES)) is None:  # "Retrieval", "the control": a stage
        return fail(f"choose one of {', '.join(diagnosis.STAGES)} (a str).")
    corpus = docuctl()
    if (case := next((c for c in corpus.cases if c["id"] == case_id), None)) is None:
        return fail(f"there is no base case {shorten(case_id, 60)!r}.")
    facts = diagnosis.trace_facts(case, corpus)
    if facts["result"]["citation"] == case["expected_doc"]:
        return fail(f"the workflow passes {case_id!r}; pick the case it fails.")
    if stage == "answer":
        return fail("the answer step copied the read page's command exactly: look at what it read, and why.")
    if not whole(step) or step not in (1, 2):
        return fail(
            f"`step` is a step number of §5's trace: 1 (the search) or 2 (the read), not {shown(step)}."
        )
    if step != diagnosis.STEPS[stage]:
        named = "the search" if step == 1 else "the read"
        return fail(
            f"step {step} is {named}: is that where a {stage} failure happens? Compare the two steps."
        )
    if not isinstance(evidence, dict) or set(evidence) != set(facts["evidence"]):
        return fail(
            '`evidence` is a dict {"first_hit": <a page id>, "expected_hit": <a rank from 1, or None>}.'
        )
    wrong = [key for key, value in facts["evidence"].items() if not _same_fact(evidence[key], value)]
    if wrong:
        key, said = wrong[0], evidence[wrong[0]]
        # a value of the wrong form ("2", [2], ('rollback-v2', 2)) is told its form, not that it is wrong
        if not (isinstance(said, str) if key == "first_hit" else said is None or whole(said)):
            form = "a page id, a str" if key == "first_hit" else "a rank, one whole number from 1 (or None)"
            return fail(f"your {key!r} is {shown(said, 40)}, a {type(said).__name__}: it is {form}.")
        return fail(
            f"your {wrong[0]!r} is not what step 1's result shows: read its hits in §5's trace again."
        )
    texts = _exercise_data()["stage_reasons"][stage]
    shows = facts["evidence"]
    where = "nowhere in the hits" if shows["expected_hit"] is None else f"hit {shows['expected_hit']}"
    return Check(True, texts.format(first=shows["first_hit"], expected=case["expected_doc"], where=where))


def _same_fact(said: Any, fact: str | int | None) -> bool:
    """A learner's value states `fact`: the same page id (case and spaces aside), the same whole rank."""
    if isinstance(fact, str):
        return isinstance(said, str) and said.strip().casefold() == fact
    return said is None if fact is None else whole(said) and said == fact


def _invalid(case: dict[str, Any], docs: Documents) -> str | None:
    """What makes `case` no valid adaptive case (its schema, `Task`'s contract, its page), or None."""
    if (error := schema_error(fixture_schema("adaptive_case"), case)) is not None:
        return f"{'.'.join(map(str, error.absolute_path)) or 'case'}: {shorten(error.message, 200)}"
    try:
        task_from(case)
    except TaskError as refused:
        return f"the task contract refuses this case: {refused}"
    return case_problem(case, docs)


def _asks(case: dict[str, Any], docs: Documents) -> tuple[str, set[str]]:
    """A case's question as search sees it: its version, and its words spelt right that pages hold."""
    vocabulary = docs.vocabulary(case["version"])
    return case["version"], words(
        ctl.revise_query(case["question"], vocabulary) or case["question"]
    ) & vocabulary


def _mislabelled(case: dict[str, Any], corpus: Corpus, shipped: list[dict[str, Any]]) -> str:
    """What a case's `observation` or `family` says that its first search or its page does not, or ""."""
    task, docs, page = task_from(case), corpus.docs, case["expected_doc"]
    hits = docs.search(task.question, task.version, expand=True, top_k=ctl.TOP_K)
    first = hits and ctl.conflict(task, docs.read(hits[0]["id"], task.version)) and hits[0]["id"]
    if case["observation"] != ("conflicting_page" if first else "empty_search"):
        seen = f"its first hit, {first!r}, conflicts with the task" if first else "its first search is empty"
        return f"`observation` names what the workflow sees first, and {seen}: not {case['observation']!r}."
    families = {c["family"] for c in corpus.cases + shipped if c["expected_doc"] == page}
    if case["family"] not in (families or {page.rsplit("-", 1)[0]}):
        return (
            f"`family` is the topic of the page the case expects, and {page!r} is not a {case['family']!r} "
            "page: give it the family the lab's cases give that page."
        )
    return ""


@exercise("01", "adaptive_case", payload=lambda case: case)
def check_adaptive_case(case: dict[str, Any] | None) -> Check:
    """Exercise 2: a valid case the fixed workflow fails and the adaptive loop passes; the table is every
    controller's row on it (three tools each); a pass says whether the two-rule workflow passes it too.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if not isinstance(case, dict):
        return fail(f"a case is a dict with the fields of adaptive_cases.json, not {type(case).__name__}.")
    try:
        case = json.loads(json.dumps(case))  # plain data from here on
    except (TypeError, ValueError):
        return fail("not a valid case: every field is a str, as in adaptive_cases.json.")
    corpus = docuctl()
    if problem := _invalid(case, corpus.docs):
        return fail(f"not a valid case: {problem}")
    if case == _exercise_data()["starting_case"]:
        return fail(
            f"{NOT_ATTEMPTED}: this is the example the cell starts with, which the fixed "
            "workflow already solves; change it into a case it fails and run the cell again"
        )
    shipped = corpus.adaptive_cases + corpus.rewrite_cases  # a base case fails as one the workflow solves
    asks = _asks(case, corpus.docs)
    if same := [c["id"] for c in shipped if asks[1] and _asks(c, corpus.docs) == asks]:
        return fail(
            f"this is the lab's own case {same[0]!r} (its version, its words once spelt right): design "
            "a case of your own, a question the lab does not ask."
        )
    rows = {
        name: evaluate([case], controller)[0] for name, controller in controllers_for(corpus.docs).items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index")[["passed", "stop", "tool_calls", "citation"]]
    table["citation"] = table["citation"].fillna("")
    if table.loc["search/read workflow", "passed"]:
        return fail(
            "the fixed workflow already solves this case, so it needs no adaptive control: "
            "make its first search come back empty, or its first hit a page that conflicts.",
            table,
        )
    if not table.loc["adaptive loop", "passed"]:
        stop = table.loc["adaptive loop", "stop"]
        return fail(
            f"the adaptive loop does not pass it either (it ended stop={stop} without the expected answer): "
            "give it an observation it can act on.",
            table,
        )
    if wrong := _mislabelled(case, corpus, shipped):
        return fail(wrong, table)
    calls = int(table.loc["adaptive loop", "tool_calls"])
    same = "passes it too" if table.loc["two-rule workflow", "passed"] else "does not"
    return Check(
        True,
        f"the workflow fails and the adaptive loop passes with {calls} tool calls; the two-rule "
        f"workflow {same}.",
        table,
    )


@exercise("01", "two_tool_winner")
def check_two_tool_winner(name: str | None) -> Check:
    """Exercise 3: with every controller held to two tools, which passes the most adaptive cases?
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    corpus = docuctl()
    table = compare(corpus.adaptive_cases, controllers_for(corpus.docs, max_tools=2))
    if not isinstance(name, str):
        return fail(
            f"answer with one controller's name, a str such as {table.index[0]!r}, not "
            f"{type(name).__name__}: one of {', '.join(table.index)}."
        )
    if (name := name_in(name, table.index)) is None:  # "The Spell-correct-first workflow" names it too
        return fail(f"name one of the controllers: {', '.join(table.index)}.")
    best, got, total = int(table["passed"].max()), int(table.loc[name, "passed"]), len(corpus.adaptive_cases)
    if got < best:
        return fail(
            f"with two tools the {name} passes {got} of {total}; one controller passes "
            f"{best}. Which one spends no extra tool when a question is misspelt?"
        )
    return Check(
        True,
        f"the {name} passes {got} of {total} with two tools: it corrects the spelling "
        "before its one search (a change of query: retrieval, not control). The fallback, the two-rule "
        "workflow and the adaptive loop need a third tool for their second search or second read, and "
        "stop at tool_limit.",
        table,
    )
