"""Lab 01: the seed's headline table, its named checks, and the adaptive extension."""

import pytest

from labkit import (
    Task,
    adaptive_policy,
    compare,
    controllers,
    docuctl,
    docuctl_tools,
    evaluate,
    fallback_workflow,
    keyword_route,
    outcome,
    revise_query,
    run,
    scripted,
    task_from,
    workflow,
)
from labkit.controllers import ADAPTIVE_TOOL_BUDGET


@pytest.fixture(scope="module")
def corpus():
    return docuctl()


def rows(table):
    return {name: tuple(int(v) for v in row) for name, row in table.iterrows()}


def test_the_seeds_table_is_reproduced_exactly(corpus):
    table = compare(corpus.cases, controllers(corpus.docs, adaptive=False))
    assert list(table.columns) == ["passed", "total", "tool_calls"]
    assert rows(table) == {
        "keyword route": (9, 18, 9),
        "search/read workflow": (17, 18, 36),
        "scripted loop": (17, 18, 36),
    }


def test_workflow_and_loop_share_retrieval_and_tool_budget(corpus):
    table = compare(corpus.cases, controllers(corpus.docs, adaptive=False))
    assert table.loc["search/read workflow"].to_dict() == table.loc["scripted loop"].to_dict()
    # Not only the sums: the same case passes or fails, with the same citation, in both.
    flow = evaluate(corpus.cases, controllers(corpus.docs)["search/read workflow"])
    loop = evaluate(corpus.cases, controllers(corpus.docs)["scripted loop"])
    assert [(r["passed"], r["citation"], r["tool_calls"]) for r in flow] == [
        (r["passed"], r["citation"], r["tool_calls"]) for r in loop
    ]


def test_adaptive_cases_table(corpus):
    assert rows(compare(corpus.adaptive_cases, controllers(corpus.docs))) == {
        "keyword route": (0, 6, 1),
        "search/read workflow": (0, 6, 9),
        "scripted loop": (0, 6, 9),
        "fallback workflow": (3, 6, 15),
        "adaptive loop": (6, 6, 18),
    }


def test_adaptive_controllers_match_the_fixed_ones_on_the_base_cases(corpus):
    assert rows(compare(corpus.cases, controllers(corpus.docs)))["adaptive loop"] == (17, 18, 36)
    assert rows(compare(corpus.cases, controllers(corpus.docs)))["fallback workflow"] == (17, 18, 36)


def test_ambiguous_keyword_question_stops_with_zero_tool_calls():
    result = keyword_route(Task("amb", "deploy", "deploy and rollback staging"))
    assert result["stop"] == "needs_review"
    assert result["tool_calls"] == 0
    assert result["detail"] == "2 topic words in the question: deploy, rollback"


def test_the_one_base_failure_is_a_retrieval_tie_broken_by_page_id(corpus):
    failures = [
        r for r in evaluate(corpus.cases, controllers(corpus.docs)["search/read workflow"]) if not r["passed"]
    ]
    assert [r["case"] for r in failures] == ["rollback-restore"]
    search = failures[0]["result"]["trace"][0]
    assert [hit["id"] for hit in search["result"]] == ["releases-v2", "rollback-v2"]
    docs = corpus.docs
    terms = {"restore", "last", "release", "rollback"}
    from labkit import words

    score = {
        id: len(terms & words(docs.read(id, "v2")["title"] + " " + docs.read(id, "v2")["text"]))
        for id in ("releases-v2", "rollback-v2")
    }
    assert score == {"releases-v2": 2, "rollback-v2": 2}


def test_outcome_needs_final_stop_exact_command_and_citation(corpus):
    case = corpus.cases[0]
    good = {"stop": "final", "answer": case["expected_command"], "citation": case["expected_doc"]}
    assert outcome(case, good)
    assert not outcome(case, good | {"stop": "turn_limit"})
    assert not outcome(case, good | {"answer": "Done."})
    assert not outcome(case, good | {"citation": "deploy-v1"})


def test_a_loop_cannot_cite_a_page_it_did_not_read():
    task = Task("t", "deploy", "How do I deploy?")

    def liar(task, observations):
        return {"action": "final", "answer": "docuctl ship --env staging", "citation": "deploy-v2"}

    result = run(task, liar, max_turns=3, max_tools=2)
    assert (result["stop"], result["tool_calls"]) == ("unread_citation", 0)


def test_a_loop_reading_another_versions_page_gets_an_error_observation():
    task = Task("t", "rollback", "rollback", version="v2")

    def policy(task, observations):
        if not observations:
            return {"action": "read", "id": "rollback-v1"}
        return {"action": "final", "answer": str(observations[-1]["result"]), "citation": ""}

    result = run(task, policy, max_turns=3, max_tools=2)
    assert result["trace"][0]["result"] == {"error": "page does not exist in the requested version"}
    assert result["tool_calls"] == 1


def test_revise_query_corrects_only_unknown_words(corpus):
    vocabulary = corpus.docs.vocabulary("v1")
    assert revise_query("How do I rolback?", vocabulary) == "how do i rollback"
    assert revise_query("helth chek", vocabulary) == "health check"
    assert revise_query("How do I deploy?", vocabulary) is None
    assert revise_query("xyzzy", vocabulary) is None


def test_fallback_searches_twice_only_when_the_first_search_is_empty(corpus):
    case = next(c for c in corpus.adaptive_cases if c["id"] == "typo-rollback")
    result = fallback_workflow(task_from(case))
    assert [e["decision"]["action"] for e in result["trace"]] == ["search", "search", "read"]
    assert outcome(case, result)
    assert workflow(task_from(case))["stop"] == "needs_review"


@pytest.mark.parametrize("observation", ["empty_search", "conflicting_page"])
def test_adaptive_loop_changes_its_next_action_on_the_named_observation(corpus, observation):
    policy = adaptive_policy(corpus.docs)
    for case in [c for c in corpus.adaptive_cases if c["observation"] == observation]:
        task = task_from(case)
        result = run(
            task,
            policy,
            tools=docuctl_tools(task, corpus.docs),
            max_turns=ADAPTIVE_TOOL_BUDGET + 1,
            max_tools=ADAPTIVE_TOOL_BUDGET,
        )
        actions = [e["decision"]["action"] for e in result["trace"]]
        expected = (
            ["search", "search", "read", "final"]
            if observation == "empty_search"
            else ["search", "read", "read", "final"]
        )
        assert actions == expected, case["id"]
        assert outcome(case, result) and result["tool_calls"] == ADAPTIVE_TOOL_BUDGET


def test_scripted_loop_with_two_tools_cannot_take_the_adaptive_route(corpus):
    case = next(c for c in corpus.adaptive_cases if c["id"] == "purge-cache")
    result = run(task_from(case), adaptive_policy(corpus.docs), max_turns=3, max_tools=2)
    assert (result["stop"], result["tool_calls"]) == ("tool_limit", 2)


def test_scripted_policy_answers_the_read_page():
    task = Task("t", "deploy", "How do I deploy the current build?")
    result = run(task, scripted, max_turns=3, max_tools=2)
    assert (result["stop"], result["answer"], result["citation"]) == (
        "final",
        "docuctl ship --env staging",
        "deploy-v2",
    )
