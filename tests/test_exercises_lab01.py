"""Lab 01's build-it cells and exercises: each intended solution passes its checker, and
plausible wrong answers fail with a sentence that says what to fix (never a traceback)."""

import functools
import json
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verdicts import own_verdict, verdict

from labkit.baseline import checks as lab01
from labkit.baseline.controllers import docuctl_tools, scripted, workflow
from labkit.baseline.corpus import docuctl
from labkit.baseline.task import task_from
from labkit.core import check as core_check
from labkit.core.errors import LabError
from labkit.core.runtime import run

# -- build it: the workflow and the loop's decide ----------------------------------------------


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


def test_workflow_and_decide_solutions_pass_with_the_seeds_figures():
    verdict(lab01.check_workflow(my_workflow), True, "17 passed with 36 tool calls")
    verdict(lab01.check_decide(my_decide), True, "17 passed, 36 tool calls")


def test_wrong_workflows_and_decides_say_what_to_fix():
    def reads_last_hit(task, tools):
        hits = tools["search"].call(query=task.question)
        page = tools["read"].call(id=hits[-1]["id"])
        return {"answer": page["command"], "citation": page["id"]}

    def reads_both(task, tools):
        hits = tools["search"].call(query=task.question)
        for hit in hits:
            page = tools["read"].call(id=hit["id"])
        return {"answer": page["command"], "citation": page["id"]}

    verdict(lab01.check_workflow(reads_last_hit), False, "'deploy-build'", "first hit was 'deploy-v2'")
    verdict(lab01.check_workflow(reads_both), False, "3 tool calls", "budget is 2")
    verdict(lab01.check_workflow(lambda task, tools: tools["lookup"]), False, "raised KeyError")
    verdict(lab01.check_workflow(None), False, "not attempted yet")
    verdict(
        lab01.check_decide(lambda task, obs: {"action": "search", "query": task.question}),
        False,
        "tool_limit",
    )


# -- exercise 1: which stage failed, and why -------------------------------------------------------


@pytest.mark.parametrize(
    "stage, reason",
    [
        ("retrieval", "search ranked releases-v2 first"),
        ("retrieval", "both pages score 2 and the tie goes to the smaller id"),
        ("retrieval", "search put releases-v2 above rollback-v2"),
        ("control", "rollback-v2 was the second hit, but the workflow only reads the first"),
        ("control", "the right page was returned by search; the workflow never checked it before answering"),
    ],
)
def test_failure_stage_accepts_a_reasoned_diagnosis_either_way(stage, reason):
    other = "Control" if stage == "retrieval" else "Retrieval"
    check = lab01.check_failure_stage("rollback-restore", stage, reason)
    verdict(check, True, f"{stage}: ", f"{other} is defensible too")


@pytest.mark.parametrize(
    "stage, reason, phrase",
    [
        ("control", "just because", "your reason does not show it"),
        ("retrieval", "", "say why in `reason`"),
        ("answer", "the command was wrong", "copied the command"),
        ("routing", "x", "choose one of retrieval, control, answer"),
        (None, None, "not attempted yet"),
    ],
)
def test_failure_stage_refuses_an_answer_without_evidence(stage, reason, phrase):
    verdict(lab01.check_failure_stage("rollback-restore", stage, reason), False, phrase)


def test_failure_stage_refuses_a_case_the_workflow_passes_or_does_not_have():
    verdict(lab01.check_failure_stage("deploy-build", "retrieval", "rank"), False, "passes")
    verdict(lab01.check_failure_stage("no-such-case", "retrieval", "rank"), False, "no base case")


# -- exercise 2: a case that needs adaptive control ------------------------------------------------

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


def test_adaptive_case_solution_passes_and_names_the_two_rule_workflow():
    solved = START | {"question": "How do I rotaet tokns?", "why": "both content words misspelt"}
    check = lab01.check_adaptive_case(solved)
    verdict(check, True, "adaptive loop passes with 3 tool calls", "two-rule workflow passes it too")
    assert bool(check.table.loc["search/read workflow", "passed"]) is False
    assert check.table.loc["search/read workflow", "stop"] == "needs_review"


def test_adaptive_case_wrong_attempts_say_what_to_fix():
    verdict(lab01.check_adaptive_case(START), False, "not attempted yet", "the example the cell starts with")
    verdict(lab01.check_adaptive_case(START | {"id": "mine"}), False, "already solves this case")
    verdict(lab01.check_adaptive_case(START | {"question": "zzzz qqqq"}), False, "adaptive loop fails it too")
    verdict(lab01.check_adaptive_case(START | {"version": "v3"}), False, "not a valid case")
    verdict(lab01.check_adaptive_case(START | {"expected_doc": "tokens-v1"}), False, "not a v2 page")
    verdict(lab01.check_adaptive_case(START | {"expected_command": "x"}), False, "expected_command")
    verdict(lab01.check_adaptive_case("a case"), False, "not str")
    verdict(lab01.check_adaptive_case(None), False, "not attempted yet")


# -- exercise 3: the winner at two tools each ------------------------------------------------------


def test_two_tool_winner_is_the_spell_correct_first_workflow():
    check = lab01.check_two_tool_winner("spell-correct-first workflow")
    verdict(check, True, "passes 3 of 6 with two tools", "tool_limit")
    assert check.table["passed"].to_dict() == {
        "keyword route": 0,
        "search/read workflow": 0,
        "scripted loop": 0,
        "spell-correct-first workflow": 3,
        "fallback workflow": 0,
        "two-rule workflow": 0,
        "adaptive loop": 0,
    }


def test_two_tool_winner_wrong_answers_get_a_hint():
    verdict(lab01.check_two_tool_winner("adaptive loop"), False, "passes 0 of 6", "one controller passes 3")
    verdict(lab01.check_two_tool_winner("the loop"), False, "name one of the controllers")
    verdict(lab01.check_two_tool_winner(None), False, "not attempted yet")


def test_every_public_check_records_its_verdict():
    checks = [name for name in lab01.__all__ if name.startswith("check_")]
    assert checks == sorted(checks) and len(checks) == 5
    assert {getattr(lab01, name).exercise for name in checks} == {
        ("01", name.removeprefix("check_")) for name in checks
    }


# -- issue 20: exercise 1 checks evidence, not keywords ------------------------------------------


@pytest.mark.parametrize(
    "stage, reason, phrase",
    [
        ("retrieval", "top", "name the facts of §5's trace"),
        ("retrieval", "search did not find rollback-v2 at all", "that search did not find 'rollback-v2'"),
        ("control", "rollback-v2 was never returned, the workflow read only the first hit",
         "did not find 'rollback-v2'"),
        ("retrieval", "search returned no hits", "did not find"),
        ("retrieval", "rollback-v2 was ranked first but the workflow ignored it",
         "that 'rollback-v2' ranked first"),
        ("control", "the workflow read rollback-v2, the second hit, and answered wrong",
         "that the workflow read 'rollback-v2'"),
        ("retrieval", "the question is misspelt so search ranked releases-v2 first", "misspelt"),
    ],
)
def test_failure_stage_refuses_a_keyword_or_a_claim_the_trace_contradicts(stage, reason, phrase):
    check = lab01.check_failure_stage("rollback-restore", stage, reason)
    verdict(check, False, phrase)
    if "trace shows otherwise" in check.message:  # it says what the trace does show
        verdict(check, False, "['releases-v2', 'rollback-v2']", "'rollback-v2' hit 2", "read 'releases-v2'")


@pytest.mark.parametrize(
    "stage, reason",
    [
        ("retrieval", "rollback-v2 was not ranked first: releases-v2 was"),
        ("control", "the workflow did not read rollback-v2, which search found second"),
        ("control", "rollback-v2 was hit 2 and the workflow only reads hit 1"),
    ],
)
def test_failure_stage_accepts_negated_facts_that_hold(stage, reason):
    verdict(lab01.check_failure_stage("rollback-restore", stage, reason), True, f"{stage}: ")


def test_an_untouched_diagnosis_cell_is_not_an_attempt():
    from labkit.core.verdicts import load_progress

    for reason in (None, "", "   "):
        verdict(lab01.check_failure_stage("rollback-restore", None, reason), False, "not attempted yet")
    assert "failure_stage" not in load_progress("01")["exercises"]


# -- issue 20: a positional tool call gets the fix, not call_logged()'s TypeError ----------------


def test_a_positional_tool_call_is_told_to_use_keywords():
    def positional(task, tools):
        hits = tools["search"].call(query=task.question)
        page = tools["read"].call(hits[0]["id"])
        return {"answer": page["command"], "citation": page["id"]}

    def wrong_name(task, tools):
        hits = tools["search"].call(q=task.question)
        return hits

    check = lab01.check_workflow(positional)
    verdict(check, False, "call tools with keywords: tools['read'].call(id=...)", "positional", "at line")
    assert "call_logged" not in check.message
    verdict(lab01.check_workflow(wrong_name), False, "with q=", "tools['search'].call(query=...)")


# -- issue 21: answers that pass without doing the work ------------------------------------------


class AlwaysEqual(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


def test_an_always_equal_str_does_not_pass_the_workflow():
    def cheat(task, tools):
        tools["search"].call(query=task.question)
        return {"answer": AlwaysEqual("x"), "citation": AlwaysEqual("y")}

    verdict(lab01.check_workflow(cheat), False, "answered ('x', 'y')")


def test_an_honest_str_subclass_is_compared_as_the_str_it_holds():
    def numpy_strings(task, tools):
        answer = my_workflow(task, tools)
        return answer and {key: np.str_(value) for key, value in answer.items()}

    verdict(lab01.check_workflow(numpy_strings), True, "17 passed")


def test_a_memorised_table_of_the_base_cases_fails_on_an_unseen_question():
    corpus = docuctl()
    table = {}
    for case in corpus.cases:
        result = workflow(task_from(case), corpus.docs)
        table[case["question"]] = {"answer": result["answer"], "citation": result["citation"]}

    def memorised(task, tools):
        return table.get(task.question)

    verdict(lab01.check_workflow(memorised), False, "unseen")


def labkits_workflow_called(task, tools):
    return workflow(task)


def labkits_scripted_called(task, observations):
    return scripted(task, observations)


@pytest.mark.parametrize(
    "checker, answer",
    [
        ("check_decide", scripted),
        ("check_decide", functools.partial(scripted)),
        ("check_decide", functools.wraps(scripted)(lambda task, observations: None)),
        ("check_decide", labkits_scripted_called),
        ("check_workflow", functools.partial(lambda task, tools, docs=None: None)),  # not labkit's: runs
        ("check_workflow", labkits_workflow_called),
    ],
)
def test_labkits_own_version_is_recognised(checker, answer):
    check = getattr(lab01, checker)(answer)
    if answer.__class__ is functools.partial and answer.func is not scripted:
        assert "labkit's version" not in check.message
    else:
        verdict(check, False, "that is labkit's version", "write your own")


def test_a_hanging_or_raising_decide_gets_a_verdict_naming_its_line(monkeypatch):
    monkeypatch.setattr(core_check, "LIMIT_S", 0.3)  # the checkers' 3 s, shortened for the suite

    def hangs(task, observations):
        while True:
            pass

    def raises_lab_error(task, observations):
        raise LabError("the learner raised labkit's own error")

    def index_error(task, observations):
        return {"action": "read", "id": observations[0]["result"][5]["id"]} if observations else my_decide(
            task, observations)

    verdict(lab01.check_decide(hangs), False, "did not return within 0.3 s", "case 'deploy-build'")
    verdict(lab01.check_decide(raises_lab_error), False, "raised LabError", "at line")
    verdict(lab01.check_decide(index_error), False, "raised IndexError", "at line")
    verdict(lab01.check_workflow(lambda task, tools: time.sleep(60)), False, "did not return within 0.3 s")


def test_two_tool_winner_of_any_type_gets_a_sentence():
    verdict(lab01.check_two_tool_winner(["spell-correct-first workflow"]), False, "a str", "not list")
    verdict(lab01.check_two_tool_winner({"a": 1}), False, "not dict")
    verdict(lab01.check_two_tool_winner(np.str_("Spell-correct-first  workflow")), True, "passes 3 of 6")
    verdict(lab01.check_two_tool_winner(AlwaysEqual("nobody")), False, "name one of the controllers")


def test_stage_and_case_of_any_type_get_a_sentence():
    verdict(lab01.check_failure_stage("rollback-restore", ["retrieval"], "x"), False, "choose one of")
    verdict(lab01.check_failure_stage(np.array([1]), "retrieval", "x"), False, "case_id")
    diagnose = functools.partial(lab01.check_failure_stage, "rollback-restore", "retrieval")
    verdict(diagnose(10**5000), False, "`reason` is a sentence")
    verdict(diagnose("x " * 5000), False, "a sentence or two")


# -- hypothesis: any learner answer ends in a verdict sentence ---------------------------------------


def _raises(*args, **kwargs):
    raise RuntimeError("learner bug")


def _raises_lab_error(*args, **kwargs):
    raise LabError("learner's LabError")


def _returns(value):
    return lambda *args, **kwargs: value


VALUES = st.one_of(
    st.none(), st.just(...), st.booleans(), st.integers(),
    st.integers(min_value=10**4000, max_value=10**4001),
    st.floats(), st.text(max_size=2000), st.binary(max_size=50), st.lists(st.integers(), max_size=5),
    st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=4),
    st.just(np.array([1, 2, 3])), st.just(np.float64("nan")), st.just(np.str_("retrieval")),
    st.just(AlwaysEqual("x")), st.just({"answer": AlwaysEqual("x"), "citation": np.str_("y")}),
    st.just({"action": "final", "answer": AlwaysEqual("x"), "citation": ""}),
)
FUNCTIONS = st.one_of(
    st.just(_raises), st.just(_raises_lab_error), VALUES.map(_returns),
    st.just(lambda *args, **kwargs: time.sleep(0.01)),
)
ANSWERS = st.one_of(VALUES, FUNCTIONS)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(answer=ANSWERS)
def test_any_answer_to_a_build_it_checker_is_a_verdict(answer):
    for check in (lab01.check_workflow(answer), lab01.check_decide(answer)):
        own_verdict(check)
        assert check.passed is False, check


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case_id=st.one_of(st.just("rollback-restore"), VALUES), stage=st.one_of(st.sampled_from(
    ["retrieval", "control", "answer"]), VALUES), reason=st.one_of(st.text(max_size=300), VALUES))
def test_any_diagnosis_is_a_verdict(case_id, stage, reason):
    own_verdict(lab01.check_failure_stage(case_id, stage, reason))


FIELDS = st.dictionaries(st.sampled_from(sorted(START)), VALUES, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(answer=st.one_of(VALUES, FIELDS.map(lambda fields: START | fields)), name=VALUES)
def test_any_case_or_controller_name_is_a_verdict(answer, name):
    for check in (lab01.check_adaptive_case(answer), lab01.check_two_tool_winner(name)):
        own_verdict(check)


# -- issue 20: the notebook shows no answer, draws the two deciders, asks for predictions -----------

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "01_baseline_comparison.ipynb"


def _cells():
    return json.loads(NOTEBOOK.read_text())["cells"]


def _text(cell):
    return "".join(cell["source"])


def test_labkits_version_sits_in_a_collapsed_cell_with_no_output_and_takes_labkits_steps():
    cells = _cells()
    hidden = [c for c in cells if c["cell_type"] == "code"
              and c["metadata"].get("jupyter", {}).get("source_hidden")]
    assert len(hidden) == 1 and hidden[0]["outputs"] == []
    before = _text(cells[cells.index(hidden[0]) - 1])
    assert "Show labkit's version" in before and "after both of" in before
    for cell in cells:  # no cell prints labkit's source, and no output shows the answer
        assert "getsource" not in _text(cell)
        for output in cell.get("outputs", []):
            assert "def scripted" not in json.dumps(output) and '"read", "id"' not in json.dumps(output)
    names: dict = {}
    exec(_text(hidden[0]), names)  # noqa: S102 - the notebook's own cell
    corpus = docuctl()
    for case in corpus.cases:
        task = task_from(case)
        mine = names["labkits_workflow"](task, docuctl_tools(task, corpus.docs))
        want = workflow(task, corpus.docs)
        assert (mine["answer"], mine["citation"]) == (want["answer"], want["citation"])
        got, want = (run(task, decide, tools=docuctl_tools(task, corpus.docs), max_turns=3, max_tools=2)
                     for decide in (names["labkits_decide"], scripted))
        assert [got[k] for k in ("stop", "answer", "citation", "tool_calls")] == [
            want[k] for k in ("stop", "answer", "citation", "tool_calls")]


def test_the_workflow_and_the_loop_are_drawn_in_a_mermaid_diagram():
    diagrams = [_text(c) for c in _cells() if c["cell_type"] == "markdown" and "```mermaid" in _text(c)]
    assert len(diagrams) == 1
    assert "flowchart" in diagrams[0] and "decide" in diagrams[0] and "tool_limit" in diagrams[0]


def test_a_prediction_cell_comes_before_the_headline_table_and_the_try_it():
    sources = [_text(c) for c in _cells()]
    headline = next(i for i, s in enumerate(sources) if s.startswith("base = compare("))
    try_it = next(i for i, s in enumerate(sources) if s.startswith("top_k = 2\nequal_budget"))
    for at, name in ((headline, "my_prediction_passes"), (try_it, "my_prediction_top_k")):
        assert any(s.startswith(f"{name} = None") for s in sources[at - 2:at]), sources[at - 1]
        assert 'predict("01"' in sources[at + 1] and name in sources[at + 1]


def test_takeaway_two_calls_spell_correct_first_a_retrieval_change():
    takeaways = next(_text(c) for c in _cells() if _text(c).startswith("## Takeaways"))
    second = takeaways.split("\n2. ")[1].split("\n3. ")[0]
    assert "changes the query" in second and "retrieval" in second
    assert "A rule you can list belongs in the workflow" not in takeaways
