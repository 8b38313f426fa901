"""Lab 01's build-it cells and exercises: each intended solution passes its checker, and plausible
wrong answers (each boundary of the rule, a crash, a hang, None) are refused with a sentence
that says what to fix."""

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hangs import hangs, limited
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verdicts import own_verdict, verdict

from labkit.baseline import checks as lab01
from labkit.baseline.controllers import docuctl_tools, scripted, workflow
from labkit.baseline.corpus import docuctl
from labkit.baseline.task import task_from
from labkit.core.errors import LabError
from labkit.core.runtime import run

# -- build it: the workflow and the loop's decide ----------------------------------------------------


def my_workflow(task, tools):
    hits = tools["search"].call(query=task.question)
    if not hits:
        return None
    page = tools["read"].call(id=hits[0]["id"])
    return {"answer": page["command"], "citation": page["id"]}


def my_decide(task, observations):
    if not observations:
        return {"action": "search", "query": task.question}
    last = observations[-1]
    if last["action"] == "search":
        if not last["result"]:
            return {"action": "final", "answer": "No matching page was found.", "citation": ""}
        return {"action": "read", "id": last["result"][0]["id"]}
    page = last["result"]
    return {"action": "final", "answer": page["command"], "citation": page["id"]}


def test_the_workflow_and_the_decide_solutions_pass_with_labkits_figures():
    for check, mine in (
        (lab01.check_workflow(my_workflow), "your workflow"),
        (lab01.check_decide(my_decide), "your loop"),
    ):
        verdict(
            check, True, "17 passed" if mine == "your loop" else "17 of 18 base cases passed", "36 tool calls"
        )
        assert check.table.loc[mine].tolist() == [17, 18, 36] == check.table.iloc[1].tolist()


def reads_last_hit(task, tools):
    hits = tools["search"].call(query=task.question)
    page = tools["read"].call(id=hits[-1]["id"])
    return {"answer": page["command"], "citation": page["id"]}


def reads_every_hit(task, tools):
    for hit in tools["search"].call(query=task.question):
        page = tools["read"].call(id=hit["id"])
    return {"answer": page["command"], "citation": page["id"]}


def tries_a_second_read(task, tools):  # round 10: the refused third call caught, the first hit answered
    hits = tools["search"].call(query=task.question)
    if not hits:
        return None
    page = tools["read"].call(id=hits[0]["id"])
    try:
        tools["read"].call(id=hits[-1]["id"])
    except Exception:  # noqa: BLE001 - the budget's refusal, swallowed
        pass
    return {"answer": page["command"], "citation": page["id"]}


def positional(task, tools):
    hits = tools["search"].call(query=task.question)
    return tools["read"].call(hits[0]["id"])  # and returns the page, not a dict


def reads_the_corpus(task, tools):  # never calls read: takes the page from the corpus itself
    hits = tools["search"].call(query=task.question)
    page = hits and docuctl().docs.read(hits[0]["id"], task.version)
    return page and {"answer": page["command"], "citation": page["id"]}


def memorised(task, tools, table={}):  # noqa: B006 - the answers to the base cases, filled once
    if not table:
        corpus = docuctl()
        table.update({c["question"]: workflow(task_from(c), corpus.docs) for c in corpus.cases})
    return table.get(task.question) and {k: table[task.question][k] for k in ("answer", "citation")}


@pytest.mark.parametrize(
    "answer, phrases",
    [
        (reads_last_hit, ["case 'deploy-build'", "the first hit was 'deploy-v2'"]),
        (reads_every_hit, ["a tool call past its budget of 2: one search, one read"]),
        (tries_a_second_read, ["a tool call past its budget of 2: one search, one read"]),
        (
            lambda task, tools: my_workflow(task, tools)["answer"],
            ["return a dict with 'answer' and 'citation'"],
        ),
        (lambda task, tools: {"answer": 1, "citation": None}, ["returned {'answer': 1, 'citation': None}"]),
        (positional, ["raised TypeError: call tools with keywords: tools['read'].call(id=...)", "at line"]),
        (lambda task, tools: tools["search"].call(q=task.question), ["tools['search'].call(query=...)"]),
        (lambda task, tools: tools["lookup"], ["raised KeyError"]),
        (memorised, ["case 'deploy-build' your workflow called no tool", "yours skips read and search"]),
        (
            reads_the_corpus,
            ["called search(query=task.question); labkit's", "then read(id='deploy-v2'): yours skips read"],
        ),
        (
            lambda task, tools: my_workflow(task, tools) or {"answer": "", "citation": ""},
            [
                "On the unseen v1 question 'zyzzyva' search found nothing",
                "return None when the search finds nothing",
            ],
        ),
        (lambda task, tools: None, ["answered None", "the first hit was 'deploy-v2'"]),
        (hangs, ["did not return within 0.2 s"]),
        ("my_workflow", ["must be a function", "not str"]),
        (None, ["not attempted yet"]),
    ],
)
def test_a_wrong_workflow_is_told_what_to_fix(answer, phrases, request):
    verdict(lab01.check_workflow(limited(answer, request)), False, *phrases)


def search_again(task):
    return {"action": "search", "query": task.question}


def raises_lab_error(task, observations):
    raise LabError("the learner raised labkit's own error")


@pytest.mark.parametrize(
    "answer, phrases",
    [
        (lambda task, obs: my_decide(task, obs[:1]), ["stopped your policy with tool_limit"]),
        (lambda task, obs: my_decide(task, obs) if len(obs) < 2 else None, ["must be an object"]),
        (  # round 9: a tuple was named a list (the trace's JSON copy), a type the learner never returned
            lambda task, obs: tuple(my_decide(task, obs).items()) if obs else my_decide(task, obs),
            ["must be an object, got tuple"],
        ),
        (lambda task, obs: my_decide(task, obs) | ({"citation": "x"} if obs else {}), ["invalid_decision"]),
        (hangs, ["did not return within 0.2 s", "case 'deploy-build'"]),
        (raises_lab_error, ["raised LabError", "at line"]),
        (lambda task, obs: obs[0]["result"][5] if obs else my_decide(task, obs), ["IndexError", "at line"]),
        (  # an empty search searched again: the same answer by one more step
            lambda task, obs: (
                search_again(task) if len(obs) == 1 and not obs[0]["result"] else my_decide(task, obs)
            ),
            ["your loop made 2 tool calls and labkit's 1", "no more"],
        ),
        (  # words added to the query: the same hits for every case the table holds, not for every question
            lambda task, obs: my_decide(task, obs) | ({} if obs else {"query": task.question + " zzzq"}),
            ["your step 1 proposed {'action': 'search'", "zzzq", "searches the question as asked"],
        ),
        (
            lambda task, obs: my_decide(task, obs) | ({} if obs else {"query": task.question + " staging"}),
            ["your step 1 proposed", "staging'}", "searches the question as asked"],
        ),
        (None, ["not attempted yet"]),
    ],
)
def test_a_wrong_decide_is_told_what_to_fix(answer, phrases, request):
    verdict(lab01.check_decide(limited(answer, request)), False, *phrases)


def test_labkits_version_in_the_notebook_takes_labkits_steps():
    cells = json.loads((Path(__file__).parents[2] / "notebooks" / "01_baseline_comparison.ipynb").read_text())
    (cell,) = [c for c in cells["cells"] if "def labkits_workflow" in "".join(c["source"])]
    names: dict = {}
    exec("".join(cell["source"]), names)  # noqa: S102 - the notebook's own cell
    corpus = docuctl()
    for case in corpus.cases:
        task = task_from(case)
        mine, want = names["labkits_workflow"](task, docuctl_tools(task)), workflow(task)
        assert (mine["answer"], mine["citation"]) == (want["answer"], want["citation"])
        got, want = (
            run(task, decide, tools=docuctl_tools(task), max_turns=3, max_tools=2)
            for decide in (names["labkits_decide"], scripted)
        )
        keys = ("stop", "answer", "citation", "tool_calls")
        assert [got[k] for k in keys] == [want[k] for k in keys]


# -- exercise 1: which stage failed, and the trace's evidence -----------------------------------------


FACTS = {
    "first_hit": "releases-v2",
    "expected_hit": 2,
}  # §5's trace: the search's first hit, rollback-v2's rank


@pytest.mark.parametrize(
    "stage, step, evidence",
    [
        ("retrieval", 1, FACTS),
        ("control", 2, FACTS),
        ("The Control", np.int64(2), {"first_hit": " Releases-V2 ", "expected_hit": np.int64(2)}),
        ("control", 2, FACTS | {"expected_hit": Fraction(2)}),  # an exact rank is a rank
    ],
)
def test_a_diagnosis_stating_the_traces_facts_passes_either_way(stage, step, evidence):
    passed = lab01.check_failure_stage("rollback-restore", stage, step, evidence)
    other = "Retrieval" if "ontrol" in stage else "Control"
    verdict(passed, True, "rollback-v2' was hit 2" if other == "Retrieval" else "'releases-v2' first", other)


PAGES = [None, "releases-v2", "rollback-v2", "restore-v2", ""]
RANKS = [None, 0, 1, 2, 3, True, 2.0, 2.5, float("nan"), "2", Fraction(2), Fraction(5, 2)]


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    stage=st.sampled_from(["retrieval", "control", "answer"]),
    step=st.sampled_from([1, 2, 3, 0, True, "1", None, 2.0, 1.5]),
    first=st.sampled_from(PAGES),
    rank=st.sampled_from(RANKS),
)
def test_a_diagnosis_passes_exactly_when_stage_step_and_facts_are_the_traces(stage, step, first, rank):
    # Generated across every boundary of the rule: each stage, each step, each value of each fact.
    check = lab01.check_failure_stage(
        "rollback-restore", stage, step, {"first_hit": first, "expected_hit": rank}
    )
    # A number with nothing after the point is a whole number (2.0 as pandas gives it); a bool is not.
    right = (stage, step) in (("retrieval", 1), ("control", 2)) and type(step) in (int, float)
    assert check.passed == (
        right and first == "releases-v2" and type(rank) in (int, float, Fraction) and rank == 2
    ), check
    assert "releases-v2" not in check.message or check.passed, check.message  # a refusal never says the fact


@pytest.mark.parametrize(
    "stage, step, evidence, phrases",
    [
        ("answer", 1, FACTS, ["copied the read page's command"]),
        ("control", 1, FACTS, ["step 1 is the search", "a control failure"]),
        ("retrieval", 2, FACTS, ["step 2 is the read", "a retrieval failure"]),
        ("retrieval", "the search", FACTS, ["1 (the search) or 2 (the read)"]),
        ("retrieval", 1, "search ranked releases-v2 first", ["`evidence` is a dict"]),
        ("retrieval", 1, {"first_hit": "releases-v2"}, ["`evidence` is a dict"]),
        ("retrieval", 1, FACTS | {"expected_hit": None}, ["your 'expected_hit' is not what step 1"]),
        (["retrieval"], 1, FACTS, ["choose one of retrieval, control, answer"]),
        (None, None, None, ["not attempted yet"]),
        (None, 1, FACTS, ["`stage` is still None", "choose one of retrieval"]),  # round 9: the rest filled in
        (..., 1, None, ["`stage` is still `...`", "choose one of"]),
        (None, None, {"first_hit": None, "expected_hit": None}, ["not attempted yet"]),  # the cell as shipped
    ],
)
def test_a_diagnosis_the_trace_does_not_bear_out_is_refused(stage, step, evidence, phrases):
    verdict(lab01.check_failure_stage("rollback-restore", stage, step, evidence), False, *phrases)


@pytest.mark.parametrize(
    ("case_id", "phrase"),
    [
        ("deploy-build", "the workflow passes"),
        ("no-such-case", "no base case"),
        (np.array([1]), "case_id is a base case's id"),
    ],
)
def test_a_diagnosis_of_a_case_the_workflow_passes_or_does_not_have_is_refused(case_id, phrase):
    verdict(lab01.check_failure_stage(case_id, "retrieval", 1, FACTS), False, phrase)


# -- exercise 2: a case that needs adaptive control ------------------------------------------------------

START = {
    "id": "my-case",
    "family": "tokens",
    "version": "v2",
    "question": "How do I rotaet tokens?",
    "expected_doc": "tokens-v2",
    "expected_command": "docuctl auth tokens rotate --env staging",
    "observation": "empty_search",
    "why": "a misspelt verb",
}


MINE = START | {"question": "How do I rotaet tokns?"}
SHIPPED = docuctl().adaptive_cases[0]  # typo-rollback, shown in §7's table
PURGE = START | {
    "question": "How do I empty the whole cache?",
    "expected_doc": "invalidate-v2",
    "family": "cache",
}
PURGE |= {
    "expected_command": "docuctl cache invalidate --prefix / --env staging",
    "observation": "conflicting_page",
}


def test_a_case_the_workflow_fails_and_the_loop_passes_is_accepted():
    check = lab01.check_adaptive_case(MINE)
    verdict(check, True, "adaptive loop passes with 3 tool calls", "two-rule workflow passes it too")
    assert check.table.loc["search/read workflow"].tolist() == [False, "final", 1, ""]
    verdict(lab01.check_adaptive_case(PURGE), True, "adaptive loop passes with 3 tool calls")


@pytest.mark.parametrize(
    "case, phrases",
    [
        (START, ["not attempted yet", "the example the cell starts with"]),
        (START | {"id": "mine"}, ["already solves this case"]),
        (START | {"question": "zzzz qqqq"}, ["adaptive loop does not pass it either"]),
        (START | {"version": 2}, ["not a valid case", "version"]),
        (START | {"expected_doc": "tokens-v1"}, ["no page 'tokens-v1' in version v2"]),
        (START | {"expected_command": "x"}, ["expected_command"]),
        (START | {"question": " "}, ["the task contract refuses this case"]),
        (SHIPPED, ["the lab's own case 'typo-rollback'"]),
        (
            SHIPPED | {"id": "my-case", "question": "how do I ROLBACK", "why": "mine"},
            ["own case 'typo-rollback'"],
        ),
        (MINE | {"observation": "conflicting_page"}, ["`observation`", "its first search is empty"]),
        (
            PURGE | {"observation": "empty_search"},
            ["its first hit, 'cache-purge-v2', conflicts with the task"],
        ),
        (PURGE | {"question": "Purge  the CACHE, please"}, ["the lab's own case 'purge-cache'"]),
        (MINE | {"family": "rollback"}, ["`family`", "'tokens-v2' is not a 'rollback' page"]),
        ("a case", ["not str"]),
        (None, ["not attempted yet"]),
    ],
)
def test_a_case_that_needs_no_adaptive_control_or_is_invalid_is_refused(case, phrases):
    verdict(lab01.check_adaptive_case(case), False, *phrases)


# -- exercise 3: the winner at two tools each ------------------------------------------------------------


@pytest.mark.parametrize(
    "name, passed, phrases",
    [
        (
            " Spell-correct-first  WORKFLOW",
            True,
            ["the spell-correct-first workflow passes 3 of 6", "tool_limit"],
        ),
        ("adaptive loop", False, ["passes 0 of 6", "one controller passes 3"]),
        ("the loop", False, ["name one of the controllers"]),
        (["spell-correct-first workflow"], False, ["a str", "not list"]),
        (None, False, ["not attempted yet"]),
    ],
)
def test_the_two_tool_winner_is_the_spell_correct_first_workflow(name, passed, phrases):
    verdict(lab01.check_two_tool_winner(name), passed, *phrases)


def test_every_checker_records_its_verdict_under_lab_01():
    assert {getattr(lab01, name).exercise for name in lab01.__all__} == {
        ("01", name.removeprefix("check_")) for name in lab01.__all__
    }


# -- any answer, of any type, ends in a verdict sentence ---------------------------------------------------

VALUES = st.one_of(
    st.sampled_from([None, ..., 10**4001, np.array([1, 2, 3]), np.str_("retrieval")]),
    st.integers() | st.floats() | st.text(max_size=2000),
    st.lists(st.integers(), max_size=5)
    | st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=4),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    answer=st.one_of(VALUES, st.just(raises_lab_error), VALUES.map(lambda value: lambda *args: value)),
    stage=st.one_of(st.sampled_from(["retrieval", "control", "answer"]), VALUES),
    value=VALUES,
    fields=st.dictionaries(st.sampled_from(sorted(START)), VALUES, max_size=8),
)
def test_any_answer_to_any_checker_is_a_verdict(answer, stage, value, fields):
    for check in (lab01.check_workflow(answer), lab01.check_decide(answer)):
        own_verdict(check)
        assert check.passed is False, check
    for check in (
        lab01.check_failure_stage("rollback-restore", stage, value, value),
        lab01.check_failure_stage(value, stage, 1, FACTS),
        lab01.check_adaptive_case(value),
        lab01.check_adaptive_case(START | fields),
        lab01.check_two_tool_winner(value),
    ):
        own_verdict(check)


@pytest.mark.parametrize(
    ("evidence", "phrase"),
    [
        ({"first_hit": "releases-v2", "expected_hit": "2"}, "is '2', a str: it is a rank, one whole number"),
        # round 9: a list or a pair was told it is "not what step 1's result shows"
        ({"first_hit": "releases-v2", "expected_hit": [2]}, "is [2], a list: it is a rank"),
        ({"first_hit": "releases-v2", "expected_hit": ("rollback-v2", 2)}, "a tuple: it is a rank"),
        (
            {"first_hit": ["releases-v2"], "expected_hit": 2},
            "'first_hit' is ['releases-v2'], a list: it is a page",
        ),
    ],
)
def test_evidence_of_the_wrong_form_is_told_its_form(evidence, phrase):
    verdict(lab01.check_failure_stage("rollback-restore", "retrieval", 1, evidence), False, phrase)
