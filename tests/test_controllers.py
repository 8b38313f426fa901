"""Lab 01: the seed's headline table, its named checks, and the adaptive extension."""

import matplotlib
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
from labkit.baseline.controllers import ADAPTIVE_TOOL_BUDGET, spell_correct_first_workflow, two_rule_workflow
from labkit.core.colours import colour


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


SEVEN = [
    "keyword route",
    "search/read workflow",
    "scripted loop",
    "spell-correct-first workflow",
    "fallback workflow",
    "two-rule workflow",
    "adaptive loop",
]


def test_adaptive_cases_table_at_one_budget_of_three_tools(corpus):
    table = compare(corpus.adaptive_cases, controllers(corpus.docs))
    assert list(table.index) == SEVEN
    assert rows(table) == {
        "keyword route": (0, 6, 1),
        "search/read workflow": (0, 6, 9),
        "scripted loop": (0, 6, 9),
        "spell-correct-first workflow": (3, 6, 12),
        "fallback workflow": (3, 6, 15),
        "two-rule workflow": (6, 6, 18),
        "adaptive loop": (6, 6, 18),
    }


def test_the_adaptive_loop_is_matched_step_for_step_by_the_two_rule_workflow(corpus):
    loop = controllers(corpus.docs)["adaptive loop"]
    for case in corpus.cases + corpus.adaptive_cases:
        fixed, adaptive = two_rule_workflow(task_from(case), corpus.docs), loop(task_from(case))
        tools = [e["decision"] for e in adaptive["trace"] if e["decision"]["action"] != "final"]
        assert [e["decision"] for e in fixed["trace"]] == tools, case["id"]
        assert outcome(case, fixed) == outcome(case, adaptive), case["id"]


def test_adaptive_controllers_match_the_fixed_ones_on_the_base_cases(corpus):
    assert rows(compare(corpus.cases, controllers(corpus.docs))) == {
        "keyword route": (9, 18, 9),
        **{name: (17, 18, 36) for name in SEVEN[1:]},
    }


def test_spell_correct_first_searches_once_with_the_corrected_question(corpus):
    case = next(c for c in corpus.adaptive_cases if c["id"] == "typo-health")
    result = spell_correct_first_workflow(task_from(case))
    assert [e["decision"] for e in result["trace"]] == [
        {"action": "search", "query": "health check"},
        {"action": "read", "id": "health-v1"},
    ]
    assert outcome(case, result)
    # It rewrites words that were only unknown, not misspelt; on these cases that costs nothing.
    config = next(c for c in corpus.cases if c["id"] == "config-region")
    result = spell_correct_first_workflow(task_from(config))
    assert result["trace"][0]["decision"]["query"] == "which config keys set the region"
    assert outcome(config, result)


@pytest.mark.parametrize("top_k, rules", [(1, (3, 6, 15)), (2, (6, 6, 18)), (3, (6, 6, 18))])
def test_top_k_knob_changes_what_a_conflicting_page_can_fall_back_to(corpus, top_k, rules):
    table = rows(compare(corpus.adaptive_cases, controllers(corpus.docs, top_k=top_k)))
    assert table["two-rule workflow"] == table["adaptive loop"] == rules
    assert table["spell-correct-first workflow"] == (3, 6, 12)
    # With one hit there is no next hit to read: the conflicting-page cases fail.
    case = next(c for c in corpus.adaptive_cases if c["id"] == "purge-cache")
    result = two_rule_workflow(task_from(case), corpus.docs, top_k=top_k)
    assert outcome(case, result) is (top_k > 1)


def test_two_tools_each_leaves_only_the_rule_that_spends_no_extra_tool(corpus):
    table = rows(compare(corpus.adaptive_cases, controllers(corpus.docs, max_tools=2)))
    assert {name: passed for name, (passed, _, _) in table.items()} == {
        name: 3 if name == "spell-correct-first workflow" else 0 for name in SEVEN
    }


@pytest.mark.parametrize("max_tools", [1, 2, 3, 4])
def test_every_controller_keeps_the_shared_budget(corpus, max_tools):
    for name, controller in controllers(corpus.docs, max_tools=max_tools).items():
        for row in evaluate(corpus.cases + corpus.adaptive_cases, controller):
            assert row["tool_calls"] <= max_tools, (name, row["case"])
            assert row["stop"] in ("final", "needs_review", "tool_limit"), (name, row["case"])


def test_a_fixed_workflow_past_its_budget_stops_with_tool_limit(corpus):
    case = next(c for c in corpus.adaptive_cases if c["id"] == "typo-rollback")
    result = fallback_workflow(task_from(case), corpus.docs, max_tools=2)
    assert (result["stop"], result["tool_calls"], result["detail"]) == ("tool_limit", 2, "2 tool calls spent")
    assert [e["decision"]["action"] for e in result["trace"]] == ["search", "search"]


@pytest.mark.parametrize("bad", [{"top_k": 0}, {"top_k": "2"}, {"max_tools": 0}, {"max_tools": 7}])
def test_controllers_refuse_settings_out_of_range(corpus, bad):
    with pytest.raises(ValueError, match="top_k must be 1, 2 or 3|max_tools must be an int in 1..6"):
        controllers(corpus.docs, **bad)


def test_the_chart_gives_each_controller_its_colour_in_every_panel(corpus):
    matplotlib.use("Agg")
    from labkit.baseline.plots import outcomes_vs_tool_calls

    tables = {
        "base": compare(corpus.cases, controllers(corpus.docs)),
        "adaptive": compare(corpus.adaptive_cases, controllers(corpus.docs)),
    }
    fig = outcomes_vs_tool_calls(tables)
    for ax in fig.axes:
        labels = {text.get_text(): matplotlib.colors.to_hex(text.get_color()) for text in ax.texts}
        assert labels == {name: colour(name) for name in SEVEN}
        # a tie is drawn, not hidden: one marker (or ring) per controller, in its colour
        markers = {matplotlib.colors.to_hex(dot.get_edgecolor()[0]) for dot in ax.collections}
        assert len(ax.collections) == len(SEVEN) and markers == {colour(name) for name in SEVEN}


def test_every_palette_colour_is_dark_enough_to_read_as_text_on_white():
    from labkit.core.colours import CONTROLLERS, OUTCOMES

    for name, hex_colour in {**CONTROLLERS, **OUTCOMES}.items():
        red, green, blue = matplotlib.colors.to_rgb(hex_colour)
        assert 0.2126 * red + 0.7152 * green + 0.0722 * blue <= 0.5, name


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

    result = run(task, liar, tools=docuctl_tools(task), max_turns=3, max_tools=2)
    assert (result["stop"], result["tool_calls"]) == ("unread_citation", 0)


def test_a_loop_reading_another_versions_page_gets_an_error_observation():
    task = Task("t", "rollback", "rollback", version="v2")

    def policy(task, observations):
        if not observations:
            return {"action": "read", "id": "rollback-v1"}
        return {"action": "final", "answer": str(observations[-1]["result"]), "citation": ""}

    result = run(task, policy, tools=docuctl_tools(task), max_turns=3, max_tools=2)
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
    task = task_from(case)
    tools = docuctl_tools(task, corpus.docs)
    result = run(task, adaptive_policy(corpus.docs), tools=tools, max_turns=3, max_tools=2)
    assert (result["stop"], result["tool_calls"]) == ("tool_limit", 2)


def test_scripted_policy_answers_the_read_page():
    task = Task("t", "deploy", "How do I deploy the current build?")
    result = run(task, scripted, tools=docuctl_tools(task), max_turns=3, max_tools=2)
    assert (result["stop"], result["answer"], result["citation"]) == (
        "final",
        "docuctl ship --env staging",
        "deploy-v2",
    )
