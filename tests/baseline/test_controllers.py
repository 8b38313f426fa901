"""Lab 01's controllers and grader: the baseline table, the adaptive extension, the budget."""

import matplotlib
import pytest

from labkit.baseline import Task, compare, controllers_for, docuctl, evaluate, outcome, task_from, workflow
from labkit.baseline.controllers import two_rule_workflow
from labkit.core.colours import colour

# the adaptive cases at three tools each: (passed, total, tool calls), in the controllers' order
ADAPTIVE = {
    "keyword route": (0, 6, 1),
    "search/read workflow": (0, 6, 9),
    "scripted loop": (0, 6, 9),
    "spell-correct-first workflow": (3, 6, 12),
    "fallback workflow": (3, 6, 15),
    "two-rule workflow": (6, 6, 18),
    "adaptive loop": (6, 6, 18),
}
SEVEN = list(ADAPTIVE)


@pytest.fixture(scope="module")
def corpus():
    return docuctl()


def rows(table):
    return {name: tuple(int(v) for v in row) for name, row in table.iterrows()}


def adaptive_case(corpus, case_id):
    return next(c for c in corpus.adaptive_cases if c["id"] == case_id)


def actions(result):
    return [entry["decision"]["action"] for entry in result["trace"]]


def test_the_baseline_table_is_9_17_17_of_18(corpus):
    table = compare(corpus.cases, controllers_for(corpus.docs, adaptive=False))
    assert list(table.columns) == ["passed", "total", "tool_calls"]
    assert rows(table) == {"keyword route": (9, 18, 9)} | dict.fromkeys(SEVEN[1:3], (17, 18, 36))
    # not only the sums: the same case passes, with the same citation and calls, in both
    flow, loop = (evaluate(corpus.cases, controllers_for(corpus.docs)[name]) for name in SEVEN[1:3])
    assert [(r["passed"], r["citation"], r["tool_calls"]) for r in flow] == [
        (r["passed"], r["citation"], r["tool_calls"]) for r in loop
    ]


def test_the_adaptive_cases_at_three_tools_each(corpus):
    table = compare(corpus.adaptive_cases, controllers_for(corpus.docs))
    assert list(table.index) == SEVEN and rows(table) == ADAPTIVE
    # the adaptive controllers change nothing on the base cases
    base = rows(compare(corpus.cases, controllers_for(corpus.docs)))
    assert base == {"keyword route": (9, 18, 9)} | dict.fromkeys(SEVEN[1:], (17, 18, 36))


def test_the_adaptive_loop_acts_on_the_observation_and_the_two_rule_workflow_takes_its_steps(corpus):
    loop = controllers_for(corpus.docs)["adaptive loop"]
    revised, next_hit = ["search", "search", "read", "final"], ["search", "read", "read", "final"]
    for case in corpus.cases + corpus.adaptive_cases:
        fixed, adaptive = two_rule_workflow(task_from(case), corpus.docs), loop(task_from(case))
        tools = [e["decision"] for e in adaptive["trace"] if e["decision"]["action"] != "final"]
        assert [e["decision"] for e in fixed["trace"]] == tools, case["id"]
        assert outcome(case, fixed) == outcome(case, adaptive), case["id"]
        if "observation" in case:
            assert actions(adaptive) == (revised if case["observation"] == "empty_search" else next_hit)
            assert outcome(case, adaptive) and adaptive["tool_calls"] == 3


def test_spell_correct_first_searches_once_with_the_corrected_question(corpus):
    spell_correct_first_workflow = controllers_for(corpus.docs)["spell-correct-first workflow"]
    case = adaptive_case(corpus, "typo-health")
    result = spell_correct_first_workflow(task_from(case))
    assert [e["decision"] for e in result["trace"]] == [
        {"action": "search", "query": "health check"},
        {"action": "read", "id": "health-v1"},
    ]
    assert outcome(case, result)
    # it also rewrites words only unknown, not misspelt ("keys"): on these cases that costs nothing
    config = next(c for c in corpus.cases if c["id"] == "config-region")
    result = spell_correct_first_workflow(task_from(config))
    assert result["trace"][0]["decision"]["query"] == "which config keys set the region"
    assert outcome(config, result)


def test_fallback_searches_again_only_when_the_first_search_is_empty(corpus):
    fallback_workflow = controllers_for(corpus.docs)["fallback workflow"]
    case = adaptive_case(corpus, "typo-rollback")
    result = fallback_workflow(task_from(case))
    assert actions(result) == ["search", "search", "read"] and outcome(case, result)
    declined = workflow(task_from(case))  # a final stop with no answer, saying why
    assert [declined[key] for key in ("stop", "answer", "detail")] == ["final", None, "search found no page"]
    assert actions(fallback_workflow(task_from(corpus.cases[0]))) == ["search", "read"]


@pytest.mark.parametrize("top_k, rules", [(1, (3, 6, 15)), (2, (6, 6, 18)), (3, (6, 6, 18))])
def test_top_k_decides_whether_a_conflicting_page_has_a_next_hit(corpus, top_k, rules):
    table = rows(compare(corpus.adaptive_cases, controllers_for(corpus.docs, top_k=top_k)))
    assert table["two-rule workflow"] == table["adaptive loop"] == rules
    assert table["spell-correct-first workflow"] == (3, 6, 12)
    case = adaptive_case(corpus, "purge-cache")
    assert outcome(case, two_rule_workflow(task_from(case), corpus.docs, top_k=top_k)) is (top_k > 1)


@pytest.mark.parametrize("max_tools", [1, 2, 3])
def test_every_controller_keeps_the_shared_budget(corpus, max_tools):
    for name, controller in controllers_for(corpus.docs, max_tools=max_tools).items():
        for row in evaluate(corpus.cases + corpus.adaptive_cases, controller):
            assert row["tool_calls"] <= max_tools, (name, row["case"])
            assert row["stop"] in ("final", "tool_limit"), (name, row["case"])


def test_a_fixed_workflow_past_its_budget_stops_with_tool_limit(corpus):
    fallback_workflow = controllers_for(corpus.docs, max_tools=2)["fallback workflow"]
    result = fallback_workflow(task_from(adaptive_case(corpus, "typo-rollback")))
    assert (result["stop"], result["tool_calls"], result["detail"]) == ("tool_limit", 2, "2 tool calls spent")
    assert actions(result) == ["search", "search"]


def test_an_ambiguous_keyword_question_stops_with_zero_tool_calls():
    result = controllers_for()["keyword route"](Task("amb", "deploy", "deploy and rollback staging"))
    assert (result["stop"], result["answer"], result["tool_calls"]) == ("final", None, 0)
    assert result["detail"] == "2 topic words in the question: deploy, rollback"


def test_outcome_needs_a_final_stop_the_exact_command_and_the_expected_page(corpus):
    case = corpus.cases[0]
    good = {"stop": "final", "answer": case["expected_command"], "citation": case["expected_doc"]}
    assert outcome(case, good)
    assert not outcome(case, good | {"stop": "turn_limit"})
    assert not outcome(case, good | {"answer": "Done."})
    assert not outcome(case, good | {"citation": "deploy-v1"})


def test_the_chart_gives_each_controller_its_readable_colour_in_every_panel(corpus):
    matplotlib.use("Agg")
    from labkit.baseline.plots import outcomes_vs_tool_calls

    tables = {
        name: compare(cases, controllers_for(corpus.docs))
        for name, cases in (("base", corpus.cases), ("adaptive", corpus.adaptive_cases))
    }
    fig = outcomes_vs_tool_calls(tables)
    renderer = fig.canvas.get_renderer()
    for ax, table in zip(fig.axes, tables.values(), strict=True):
        labels = {text.get_text(): matplotlib.colors.to_hex(text.get_color()) for text in ax.texts}
        assert labels == {name: colour(name) for name in SEVEN}
        # one marker per point, a tie in dark grey; every name readable: inside the axes, over no other
        assert len(ax.collections) == len(table.groupby(["tool_calls", "passed"]))
        boxes = [text.get_window_extent(renderer) for text in ax.texts]
        frame = ax.get_window_extent(renderer)
        assert all(frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1) for box in boxes)
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    assert [len(ax.collections) for ax in fig.axes] == [2, 5]  # six controllers tie on the base cases
    for name in SEVEN:  # dark enough to read as text on white
        red, green, blue = matplotlib.colors.to_rgb(colour(name))
        assert 0.2126 * red + 0.7152 * green + 0.0722 * blue <= 0.5, name
