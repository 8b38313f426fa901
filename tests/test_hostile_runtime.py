"""Lab 02: decisions written by an attacker — numbers too big to represent, types that lie.

Whatever a policy returns, `run` ends in a named stop, and a tool only ever receives plain
values of exact types (str, int, float) that are the values validation checked.
"""

import json
import math
import threading
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from labkit import STOP_REASONS, Budget, Task, Tool, run, validate_decision
from labkit.core.display import result_html, trace_text
from labkit.core.runtime import MAX_NUMBER

TASK = Task("h1", "deploy", "How do I deploy?", "v2")
HUGE = json.loads("1" + "0" * 400)  # a 401-digit JSON literal parses to exactly 10**400


def make_tools(log):
    def search(query):
        log.append(("search", type(query), query))
        return [{"id": "deploy-v2", "title": "Deploy"}]

    def read(id):
        log.append(("read", type(id), id))
        if id != "deploy-v2":
            raise ValueError("no such page")
        return {"id": id, "command": "docuctl ship"}

    def count(n):
        log.append(("count", type(n), n))
        return n

    return {
        "search": Tool("search", {"query": "str"}, search),
        "read": Tool("read", {"id": "str"}, read, source=True),
        "count": Tool("count", {"n": "number"}, count),
    }


def once(decision, usage=None):
    def decide(task, observations):
        decide.last_usage = usage
        return decision if not observations else {"action": "final", "answer": "done", "citation": ""}

    return decide


# -- 1. numbers that cannot be represented ------------------------------------------------


def test_a_401_digit_number_is_an_invalid_decision_not_an_overflow():
    assert HUGE == 10**400
    for value in (HUGE, -HUGE, 2**53 + 1, float("inf"), float("-inf"), float("nan")):
        log = []
        result = run(TASK, once({"action": "count", "n": value}), tools=make_tools(log))
        assert result["stop"] == "invalid_decision", value
        assert "count: n must be a finite number" in result["detail"]
        assert log == []
    # The bound is stated and exact: the largest int a float holds exactly still counts.
    log = []
    assert run(TASK, once({"action": "count", "n": MAX_NUMBER}), tools=make_tools(log))["stop"] == "final"
    assert log == [("count", int, MAX_NUMBER)]


def test_a_reported_usage_too_big_to_represent_is_ignored_like_other_nonsense():
    for usage in (
        {"prompt_tokens": HUGE, "completion_tokens": 1},
        {"prompt_tokens": 1e308, "completion_tokens": 1e308},
        {"prompt_tokens": 1, "completion_tokens": 1, "cost": HUGE},
    ):
        result = run(
            TASK,
            once({"action": "search", "query": "x"}, usage),
            tools=make_tools([]),
            budget=Budget(tokens=10**6),
        )
        assert result["stop"] == "final", usage
        assert all(math.isfinite(value) for value in result["usage"].values())


def test_limits_and_budgets_that_cannot_be_represented_are_the_callers_mistake():
    import pytest

    for limits in ({"step_timeout": float("inf")}, {"deadline": HUGE}, {"step_timeout": float("nan")}):
        with pytest.raises(ValueError, match="must be a positive number of seconds"):
            run(TASK, once({"action": "search", "query": "x"}), tools=make_tools([]), **limits)
    for budget in ({"tokens": -1}, {"tokens": 1.5}, {"cost": float("nan")}, {"cost": HUGE}):
        with pytest.raises(ValueError, match="Budget"):
            Budget(**budget)


def test_keys_of_several_types_are_an_invalid_decision_not_a_crash():
    result = run(TASK, once({"action": "search", "query": "x", 1: 2, "b": 3}), tools=make_tools([]))
    assert result["stop"] == "invalid_decision"
    assert "keys must be strings" in result["detail"]


def test_a_trace_holding_an_unprintable_number_still_renders():
    result = run(TASK, once({"action": "count", "n": 10**5000}), tools=make_tools([]))
    assert result["stop"] == "invalid_decision"
    assert "count(n=" in trace_text(result) and "<table>" in result_html(result)


# -- 2. types that lie --------------------------------------------------------------------


class Agreeable(str):
    """Equal to everything, hashing like another id: the str subclass of the issue."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return hash("deploy-v2")

    def strip(self, *args):
        return "looks fine"

    def __len__(self):
        return 1


class Fickle(str):
    """Changes its answer every time it is compared."""

    calls = 0

    def __eq__(self, other):
        Fickle.calls += 1
        return Fickle.calls % 2 == 1

    __hash__ = str.__hash__


class Two(dict):
    """A dict that shows one decision to `get`/`[]` and holds another."""

    def get(self, key, default=None):
        return {"action": "final"}.get(key, default)

    def __getitem__(self, key):
        return "final" if key == "action" else "x"

    def keys(self):
        return ["action", "answer", "citation"]

    def __iter__(self):
        return iter(["action", "answer", "citation"])


def test_a_str_subclass_reaches_the_tool_as_the_plain_string_it_holds():
    log = []
    result = run(
        TASK, once({"action": Agreeable("read"), "id": Agreeable("other-page")}), tools=make_tools(log)
    )
    # What ran is what the string holds, as an exact str: 'other-page', which the tool refused.
    assert log == [("read", str, "other-page")]
    decision = result["trace"][0]["decision"]
    assert all(type(key) is str and type(value) is str for key, value in decision.items())
    assert result["trace"][0]["result"] == {"error": "no such page"}


def test_a_lying_citation_is_not_a_read_source():
    decide = once({"action": "final", "answer": "docuctl ship", "citation": Agreeable("never-read")})
    result = run(TASK, decide, tools=make_tools([]))
    assert result["stop"] == "unread_citation"
    assert result["answer"] is None


def test_a_dict_subclass_is_rebuilt_from_what_it_holds():
    log = []
    result = run(TASK, once(Two(action="search", query="deploy")), tools=make_tools(log))
    assert log == [("search", str, "deploy")]
    assert type(result["trace"][0]["decision"]) is dict


def test_int_and_float_subclasses_become_exact_numbers():
    class Big(int):
        def __abs__(self):
            return 0

    class Odd(float):
        def __eq__(self, other):
            return True

    for value, exact in ((Big(7), 7), (Odd(2.5), 2.5), (Big(10**400), None)):
        log = []
        result = run(TASK, once({"action": "count", "n": value}), tools=make_tools(log))
        if exact is None:
            assert result["stop"] == "invalid_decision" and log == []
        else:
            assert log == [("count", type(exact), exact)]


def test_keys_that_collapse_into_one_are_an_invalid_decision():
    class Key(str):
        def __hash__(self):
            return 1

        def __eq__(self, other):
            return other is self

    decision = {Key("action"): "search", "action": "read", "query": "x"}
    assert len(decision) == 3
    result = run(TASK, once(decision), tools=make_tools([]))
    assert result["stop"] == "invalid_decision"
    assert "duplicate key 'action'" in result["detail"]


def test_the_decision_in_the_trace_is_a_copy_the_policy_cannot_change_afterwards():
    mine = {"action": "search", "query": "deploy"}
    result = run(TASK, once(mine), tools=make_tools([]))
    mine["query"] = "rewritten"
    assert result["trace"][0]["decision"] == {"action": "search", "query": "deploy"}


def test_validate_decision_itself_accepts_only_exact_types():
    tools = make_tools([])
    for bad in (
        {"action": Agreeable("search"), "query": "x"},
        {"action": "search", "query": Fickle("x")},
        Two(action="search", query="x"),
    ):
        try:
            validate_decision(bad, tools)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


# -- 7. hypothesis: hostile decision values -----------------------------------------------

LOOK_ALIKES = [
    "deploy-v2",
    "deploy-v2\u200b",
    "deploy\u2010v2",
    "dep\u200dloy-v2",
    "DEPLOY-V2",
    unicodedata.normalize("NFD", "déploy-v2"),
    "déploy-v2",
    "deploy-v2 ",
    "\u202edeploy-v2",
]
hostile_numbers = st.one_of(
    st.integers(),
    st.integers(min_value=2**53 - 2, max_value=2**53 + 2),
    st.sampled_from([HUGE, -HUGE, 10**4000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
hostile_strings = st.one_of(
    st.sampled_from(LOOK_ALIKES),
    st.text(max_size=20),
    st.builds(Agreeable, st.sampled_from(LOOK_ALIKES)),
    st.builds(Fickle, st.sampled_from(LOOK_ALIKES)),
)
hostile_values = st.one_of(hostile_numbers, hostile_strings, st.lists(st.integers(), max_size=2))
actions = st.one_of(st.sampled_from(["search", "read", "count", "final"]), hostile_strings)
decisions = st.one_of(
    st.builds(lambda a, v: {"action": a, "query": v}, actions, hostile_values),
    st.builds(lambda a, v: {"action": a, "id": v}, actions, hostile_values),
    st.builds(lambda a, v: {"action": a, "n": v}, actions, hostile_values),
    st.builds(lambda v, c: {"action": "final", "answer": v, "citation": c}, hostile_values, hostile_values),
    st.builds(lambda a, v: Two(action=a, id=v), actions, hostile_values),
    # Built from drawn pairs, not st.dictionaries: its unique-keys draw compares Fickle keys,
    # whose answers change between runs, and Hypothesis then stops with FlakyStrategyDefinition
    # (1 `make test` in about 12; 5,000 examples reproduce it).
    st.lists(st.tuples(hostile_strings, hostile_values), max_size=3).map(dict),
    hostile_values,
)
usages = st.none() | st.fixed_dictionaries(
    {"prompt_tokens": hostile_numbers, "completion_tokens": hostile_numbers}
)


@settings(max_examples=150, deadline=None)
@given(
    plan=st.lists(st.tuples(decisions, usages), min_size=1, max_size=5),
    budget=st.none() | st.builds(Budget, tokens=st.integers(1, 10**6)),
)
def test_hostile_values_end_in_a_named_stop_and_tools_see_exact_checked_values(plan, budget):
    log = []

    def decide(task, observations):
        decision, usage = plan[min(len(observations), len(plan) - 1)]
        decide.last_usage = usage
        return decision

    tools = make_tools(log)
    result = run(TASK, decide, tools=tools, max_turns=5, max_tools=4, budget=budget)
    assert result["stop"] in STOP_REASONS
    assert len(log) == result["tool_calls"] <= 4
    for name, kind, value in log:
        if name == "count":
            assert kind in (int, float) and math.isfinite(value) and abs(value) <= MAX_NUMBER
        else:
            assert kind is str and 0 < len(value.strip()) and len(value) <= 2000
    for entry in result["trace"]:
        if "result" in entry:  # a tool ran for exactly the plain decision in the trace
            assert validate_decision(entry["decision"], tools) is entry["decision"]
    if result["stop"] == "final":
        assert type(result["answer"]) is str and result["citation"] in ("", "deploy-v2")
        assert type(result["citation"]) is str
    assert all(math.isfinite(value) for value in result["usage"].values())
    trace_text(result)  # whatever was proposed, the result renders


def test_a_policy_running_past_its_step_timeout_leaves_no_thread_behind_that_can_act():
    release = threading.Event()
    log = []

    def stuck(task, observations):
        release.wait(5)
        return {"action": "search", "query": "late"}

    result = run(TASK, stuck, tools=make_tools(log), step_timeout=0.05)
    release.set()
    assert (result["stop"], log) == ("step_timeout", [])
