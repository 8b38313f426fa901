"""Lab 01's build-it cells and exercises: each intended solution passes its checker, and
plausible wrong answers fail with a sentence that says what to fix (never a traceback)."""

import pytest
from verdicts import verdict

from labkit.baseline import checks as lab01

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
    verdict(lab01.check_adaptive_case(START), False, "already solves this case")
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
