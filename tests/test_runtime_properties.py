"""Lab 02: the runtime's guarantees hold whatever a policy returns or raises (hypothesis)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from labkit import STOP_REASONS, Budget, ProviderError, Task, Tool, run, validate_decision

TASK = Task("p1", "deploy", "How do I deploy?", "v2")

text = st.text(max_size=30)
junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | text,
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
    [
        ValueError("bad"),
        TypeError("bad"),
        KeyError("k"),
        RuntimeError("boom"),
        ZeroDivisionError("x"),
        ConnectionError("refused"),
        TimeoutError("slow"),
        ProviderError("HTTP 500"),
        OSError("disk"),
    ]
)
behaviour = st.one_of(valid, nearly, junk, errors)
usage = st.none() | st.fixed_dictionaries(
    {
        "prompt_tokens": st.integers(-5, 400) | st.floats(allow_nan=True),
        "completion_tokens": st.integers(0, 50),
    }
)


def make_tools(log, raising):
    def search(query):
        log.append("search")
        if raising:
            raise RuntimeError("search is down")
        return [{"id": "a", "title": "A"}]

    def read(id):
        log.append("read")
        if id not in ("a", "b"):
            raise ValueError("no such page")
        return {"id": id}

    def count(n):
        log.append("count")
        return n * 2

    return {
        "search": Tool("search", {"query": "str"}, search),
        "read": Tool("read", {"id": "str"}, read, source=True),
        "count": Tool("count", {"n": "number"}, count),
    }


@settings(max_examples=300, deadline=None)
@given(
    plan=st.lists(st.tuples(behaviour, usage), min_size=1, max_size=10),
    max_turns=st.integers(1, 8),
    max_tools=st.integers(0, 6),
    budget=st.none() | st.builds(Budget, tokens=st.integers(1, 2000)),
    raising=st.booleans(),
)
def test_any_policy_ends_in_a_named_stop_within_limits(plan, max_turns, max_tools, budget, raising):
    log = []

    def decide(task, observations):
        item, spent = plan[min(len(observations), len(plan) - 1)]
        decide.last_usage = spent
        if isinstance(item, BaseException):
            raise item
        return item

    tools = make_tools(log, raising)
    result = run(TASK, decide, tools=tools, max_turns=max_turns, max_tools=max_tools, budget=budget)

    assert result["stop"] in STOP_REASONS
    assert 0 <= result["turns"] <= max_turns
    assert 0 <= result["tool_calls"] <= max_tools
    assert len(log) == result["tool_calls"]  # every counted call ran, and nothing else ran
    executed = [entry for entry in result["trace"] if "result" in entry]
    assert len(executed) == result["tool_calls"]
    for entry in executed:  # a tool ran only for a valid tool decision
        decision = validate_decision(entry["decision"], tools)
        assert decision["action"] != "final"
    # Nothing runs after an invalid decision: it is the last thing in the trace.
    if result["stop"] == "invalid_decision":
        assert "result" not in result["trace"][-1]
    if result["stop"] == "final":
        assert result["citation"] == "" or result["citation"] in {
            e["result"].get("id") for e in executed if isinstance(e["result"], dict)
        }
    spent = result["usage"]["prompt_tokens"] + result["usage"]["completion_tokens"]
    assert math.isfinite(spent) and spent >= 0
    # Budget held: an episode over its budget ends as `budget`, or as the invalid decision
    # whose unparseable reply spent the tokens; it never goes on to another turn.
    if budget is not None and spent > budget.tokens:
        assert result["stop"] in ("budget", "invalid_decision")


@settings(max_examples=100, deadline=None)
@given(plan=st.lists(behaviour, min_size=1, max_size=6))
def test_a_final_answer_is_released_only_with_a_final_stop(plan):
    def decide(task, observations):
        item = plan[min(len(observations), len(plan) - 1)]
        if isinstance(item, BaseException):
            raise item
        return item

    result = run(TASK, decide, tools=make_tools([], False), max_turns=6, max_tools=6)
    if result["stop"] != "final":
        assert result["answer"] is None and result["citation"] is None
