"""A policy's decision is adversarial: what is not plain JSON, has unknown or missing fields, wrong
types or values past the limits is refused with `invalid_decision`, and no tool runs for it."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.baseline import Task
from labkit.core import STOP_REASONS, Budget, ProviderError, Tool, run, validate_decision
from labkit.core.display import trace_text
from labkit.core.runtime import MAX_NUMBER

TASK = Task("h1", "deploy", "How do I deploy?", "v2")
HUGE = json.loads("1" + "0" * 400)  # a 401-digit JSON literal parses to exactly 10**400
CYCLE: dict = {"action": "search"}
CYCLE["query"] = CYCLE


def make_tools(log):
    def search(query):
        log.append(("search", type(query), query))
        return [{"id": "a", "title": "A"}]

    def read(id):
        log.append(("read", type(id), id))
        if id not in ("a", "b"):
            raise ValueError("no such page")
        return {"id": id}

    def count(n):
        log.append(("count", type(n), n))
        return n

    return {
        "search": Tool("search", {"query": "str"}, search),
        "read": Tool("read", {"id": "str"}, read, source=True),
        "count": Tool("count", {"n": "number"}, count),
    }


def after_a_search(decision):
    """A policy that searches once, then proposes `decision`."""
    return lambda task, observations: decision if observations else {"action": "search", "query": "x"}


@pytest.mark.parametrize(
    ("decision", "detail"),
    [
        (object(), "decision is not plain JSON data"),
        ({"action": "count", "n": 10**5000}, "decision is not plain JSON data"),
        ({"action": "search", "query": {1, 2}}, "decision is not plain JSON data"),
        (CYCLE, "decision is not plain JSON data"),
        ("search deploy", "decision must be an object, got str"),
        ({"action": "delete", "id": "x"}, "unknown action 'delete'"),
        ({"action": "search"}, "search: missing ['query']"),
        ({"action": "search", "query": "x", "sudo": True}, "search: unexpected ['sudo']"),
        ({"action": "search", "query": "x", 1: 2}, "search: unexpected ['1']"),
        ({"action": "search", "query": 5}, "search: query must be a string"),
        ({"action": "search", "query": "  "}, "search: query must not be blank"),
        ({"action": "read", "id": "x" * 2001}, "read: id must be a string of at most 2000 characters"),
        ({"action": "count", "n": "3"}, "count: n must be a finite number"),
        ({"action": "count", "n": True}, "count: n must be a finite number"),
        ({"action": "count", "n": MAX_NUMBER + 1}, "count: n must be a finite number"),
        ({"action": "count", "n": -HUGE}, "count: n must be a finite number"),
        ({"action": "count", "n": float("nan")}, "count: n must be a finite number"),
        ({"action": "count", "n": float("inf")}, "count: n must be a finite number"),
        ({"action": "final", "answer": "", "citation": ""}, "final: answer must not be blank"),
    ],
)
def test_a_refused_decision_stops_the_episode_and_runs_no_tool(decision, detail):
    log = []
    result = run(TASK, after_a_search(decision), tools=make_tools(log))
    assert (result["stop"], result["turns"], result["tool_calls"]) == ("invalid_decision", 2, 1)
    assert detail in result["detail"] and result["trace"][-1]["error"] == result["detail"]
    assert log == [("search", str, "x")] and "result" not in result["trace"][-1]
    trace_text(result)  # whatever was proposed, the trace renders


def test_the_bound_is_exact_and_the_tool_gets_the_number_it_was_checked_with():
    log, decide = [], after_a_search({"action": "count", "n": MAX_NUMBER})
    result = run(TASK, decide, tools=make_tools(log), max_turns=2)
    assert log[-1] == ("count", int, MAX_NUMBER) and result["stop"] == "turn_limit"


def test_the_tool_and_the_trace_get_plain_json_data_not_the_policys_objects():
    class Agreeable(str):  # equal to everything
        def __eq__(self, other):
            return True

        __hash__ = str.__hash__

    class Shown(dict):
        pass

    mine = Shown(action=Agreeable("read"), id=Agreeable("other-page"))
    log = []
    result = run(TASK, after_a_search(mine), tools=make_tools(log), max_turns=2)
    assert log[-1] == ("read", str, "other-page")
    assert result["trace"][1]["result"] == {"error": "no such page"}
    decision = result["trace"][1]["decision"]
    assert type(decision) is dict and all(type(value) is str for value in decision.values())
    mine["id"] = "rewritten"
    assert decision["id"] == "other-page"  # a copy the policy cannot change afterwards
    cites = after_a_search({"action": "final", "answer": "x", "citation": Agreeable("never-read")})
    assert run(TASK, cites, tools=make_tools([]))["stop"] == "unread_citation"


text = st.text(max_size=30)
junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | text | st.just(HUGE),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
valid = st.one_of(
    st.builds(lambda q: {"action": "search", "query": q}, text),
    st.builds(lambda i: {"action": "read", "id": i}, st.sampled_from(["a", "b", "missing", " "])),
    st.builds(lambda n: {"action": "count", "n": n}, st.integers() | st.floats() | st.booleans()),
    st.builds(
        lambda a, c: {"action": "final", "answer": a, "citation": c}, text, st.sampled_from(["", "a", "b"])
    ),
)
nearly = valid.flatmap(lambda d: st.dictionaries(text, junk, max_size=2).map(lambda extra: d | extra))
errors = st.sampled_from(
    [ValueError("bad"), RuntimeError("boom"), ConnectionError("refused"), ProviderError("500")]
)
# A report is counted as given (a policy that under-reports spends more: the budget is only as good as the
# report, and labkit's ModelPolicy reports the server's checked counts).
usage = st.none() | st.fixed_dictionaries(
    {"prompt_tokens": st.integers(0, 400), "completion_tokens": st.integers(0, 50)}
)


@settings(max_examples=300, deadline=None)
@given(
    plan=st.lists(st.tuples(st.one_of(valid, nearly, junk, errors), usage), min_size=1, max_size=10),
    max_turns=st.integers(1, 8),
    max_tools=st.integers(0, 6),
    budget=st.none() | st.builds(Budget, tokens=st.integers(1, 2000)),
)
def test_any_policy_ends_in_a_named_stop_within_limits_and_tools_run_only_checked_decisions(
    plan, max_turns, max_tools, budget
):
    log = []

    def decide(task, observations):
        item, decide.last_usage = plan[min(len(observations), len(plan) - 1)]
        if isinstance(item, BaseException):
            raise item
        return item

    tools = make_tools(log)
    result = run(TASK, decide, tools=tools, max_turns=max_turns, max_tools=max_tools, budget=budget)
    assert result["stop"] in STOP_REASONS
    assert 0 <= result["turns"] <= max_turns and len(log) == result["tool_calls"] <= max_tools
    executed = [entry for entry in result["trace"] if "result" in entry]
    assert len(executed) == len(log)
    for entry, (name, kind, value) in zip(executed, log, strict=True):  # each ran what was checked
        assert validate_decision(entry["decision"], tools)["action"] == name
        assert entry["decision"][{"search": "query", "read": "id", "count": "n"}[name]] == value
        assert kind in ((int, float) if name == "count" else (str,))
    if result["stop"] != "final":
        assert result["answer"] is None and result["citation"] is None
    spent = result["usage"]["prompt_tokens"] + result["usage"]["completion_tokens"]
    assert spent == sum(entry.get("tokens", 0) for entry in result["trace"])
    if budget is not None and spent > budget.tokens:  # an over-budget decision is never executed
        assert result["stop"] in ("budget", "invalid_decision")
