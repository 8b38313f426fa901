"""Lab 02: the runtime's contract — every stop reason, the trace, the limits it enforces."""

import threading
import time

import numpy as np
import pytest

from labkit.baseline import Task
from labkit.core import Budget, LabError, ProviderError, Tool, run
from labkit.core.display import result_html, trace_text

TASK = Task("t1", "deploy", "How do I deploy the current build?", "v2")


def tools(log=None):
    """A search tool that finds one page, a read tool that returns it, a tool that raises."""
    log = [] if log is None else log

    def search(query):
        log.append(("search", query))
        return [{"id": "deploy-v2", "title": "Deploy a build"}]

    def read(id):
        log.append(("read", id))
        if id != "deploy-v2":
            raise ValueError("page does not exist in the requested version")
        return {"id": id, "command": "docuctl ship --env staging"}

    def explode(n):
        log.append(("explode", n))
        raise RuntimeError("disk full")

    return {
        "search": Tool("search", {"query": "str"}, search),
        "read": Tool("read", {"id": "str"}, read, source=True),
        "explode": Tool("explode", {"n": "number"}, explode),
    }


def script(*decisions, usage=None):
    """A policy that returns `decisions` in order (an exception instance is raised)."""
    queue = list(decisions)

    def decide(task, observations):
        decide.last_usage = usage
        item = queue[len(observations)] if len(observations) < len(queue) else queue[-1]
        if isinstance(item, BaseException):
            raise item
        return item

    decide.last_usage = None
    return decide


SEARCH = {"action": "search", "query": "deploy"}
READ = {"action": "read", "id": "deploy-v2"}
FINAL = {"action": "final", "answer": "docuctl ship --env staging", "citation": "deploy-v2"}


@pytest.mark.parametrize("step_timeout", [None, 5.0])
def test_final_after_search_and_read(step_timeout):
    log = []
    limits = {"max_turns": 3, "max_tools": 2, "step_timeout": step_timeout}
    result = run(TASK, script(SEARCH, READ, FINAL), tools=tools(log), **limits)
    assert (result["stop"], result["answer"], result["citation"]) == ("final", FINAL["answer"], "deploy-v2")
    assert (result["turns"], result["tool_calls"]) == (3, 2)
    assert log == [("search", "deploy"), ("read", "deploy-v2")]


STOPS = {  # what ends an episode: (the policy, run's limits, what the result says)
    "a policy that raises is an invalid decision, not a crash": (
        script(ZeroDivisionError("division by zero")),
        {},
        {"stop": "invalid_decision", "detail": "policy raised ZeroDivisionError: division by zero"},
    ),
    "provider error ConnectionError": (
        script(SEARCH, ConnectionError("refused")),
        {},
        {"stop": "provider_error", "turns": 2, "tool_calls": 1, "detail": "ConnectionError: refused"},
    ),
    "provider error TimeoutError": (
        script(SEARCH, TimeoutError("slow")),
        {},
        {"stop": "provider_error", "turns": 2, "tool_calls": 1, "detail": "TimeoutError: slow"},
    ),
    "provider error ProviderError": (
        script(SEARCH, ProviderError("HTTP 500")),
        {},
        {"stop": "provider_error", "turns": 2, "tool_calls": 1, "detail": "ProviderError: HTTP 500"},
    ),
    "tool limit before the extra tool, max_tools=0": (
        script(SEARCH),
        {"max_turns": 1, "max_tools": 0},
        {"stop": "tool_limit", "tool_calls": 0, "detail": "search proposed after 0 tool calls"},
    ),
    "tool limit before the extra tool, max_tools=2": (
        script(SEARCH),
        {"max_turns": 3, "max_tools": 2},
        {"stop": "tool_limit", "tool_calls": 2, "detail": "search proposed after 2 tool calls"},
    ),
    "turn limit": (
        script(SEARCH),
        {"max_turns": 3, "max_tools": 6},
        {"stop": "turn_limit", "turns": 3, "tool_calls": 3},
    ),
    # the page exists but was never read: the answer is not released
    "unread citation": (script(SEARCH, FINAL), {}, {"stop": "unread_citation", "answer": None}),
    "an empty citation for a no-answer": (
        script({"action": "final", "answer": "No matching page.", "citation": ""}),
        {},
        {"stop": "final", "citation": ""},
    ),
    "cost budget": (
        script(SEARCH, READ, FINAL, usage={"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.004}),
        {"budget": Budget(cost=0.01)},
        {"stop": "budget", "turns": 3},
    ),
}


@pytest.mark.parametrize("case", STOPS)
def test_each_stop_reason_says_what_ended_the_episode(case):
    policy, limits, expected = STOPS[case]
    log = []
    result = run(TASK, policy, tools=tools(log), **limits)
    assert {key: result[key] for key in expected} == expected
    assert len(log) == result["tool_calls"]  # every tool call counted ran, and no other


def test_a_policy_that_changes_what_it_was_shown_changes_only_its_copy():
    def pops_the_hit(task, observations):  # a learner's decide: takes the hit out of the search's result
        if not observations:
            return SEARCH
        hit = observations[0]["result"].pop(0)
        return READ | {"id": hit["id"]} if len(observations) == 1 else FINAL

    result = run(TASK, pops_the_hit, tools=tools(), max_turns=3, max_tools=2)
    assert result["stop"] == "final"  # it read the hit it took, on the second turn as on the third
    assert result["trace"][0]["result"] == [{"id": "deploy-v2", "title": "Deploy a build"}]


def test_lab_error_is_reraised_not_counted():
    with pytest.raises(LabError, match="no recorded reply"):
        run(TASK, script(LabError("no recorded reply for case t1")), tools=tools())


def test_a_tool_that_raises_is_an_observation():
    seen = []

    def decide(task, observations):
        seen.append(list(observations))
        if not observations:
            return {"action": "explode", "n": 3}
        return {"action": "final", "answer": "gave up", "citation": ""}

    result = run(TASK, decide, tools=tools())
    assert result["stop"] == "final"
    assert seen[1] == [{"action": "explode", "result": {"error": "RuntimeError: disk full"}}]
    assert result["tool_calls"] == 1


def test_a_tool_refusal_keeps_its_own_message():
    result = run(TASK, script({"action": "read", "id": "nope"}, FINAL), tools=tools())
    assert result["trace"][0]["result"] == {"error": "page does not exist in the requested version"}
    assert result["stop"] == "unread_citation"  # the refused read did not make the page a source


def slow(seconds, then=SEARCH):
    def decide(task, observations):
        time.sleep(seconds)
        return then

    return decide


def held(then=SEARCH):
    """A decision that comes only once `release` is set (never in time, however busy the machine), and
    `done`, set once it has come."""
    release, done = threading.Event(), threading.Event()

    def decide(task, observations):
        release.wait(60)
        done.set()
        return then

    return decide, release, done


def test_step_timeout_stops_waiting_and_runs_no_tool():
    log = []
    decide, release, done = held()
    result = run(TASK, decide, tools=tools(log), step_timeout=0.05)
    assert not done.is_set()  # it did not wait for the slow decision
    assert (result["stop"], result["turns"], result["tool_calls"]) == ("step_timeout", 1, 0)
    assert result["detail"] == "no decision within 0.05 s"
    release.set()
    assert done.wait(10)  # the abandoned decision finishes on its thread...
    time.sleep(0.05)  # (a tool it led to would run now)
    assert log == []  # ...and still runs nothing


def test_a_late_decision_is_late_even_if_the_runtime_wakes_up_late(monkeypatch):
    # On a loaded machine the wait can return after the limit, with the decision done meanwhile:
    # it still overran and must not run. Here the wait of exactly step_timeout returns only late.
    wait = threading.Condition.wait
    monkeypatch.setattr(
        threading.Condition,
        "wait",
        lambda self, timeout=None: wait(self, 5.0 if timeout == 0.05 else timeout),
    )
    log = []
    result = run(TASK, slow(0.1), tools=tools(log), step_timeout=0.05)
    assert (result["stop"], result["detail"], log) == ("step_timeout", "no decision within 0.05 s", [])
    [entry] = result["trace"]
    assert entry == {"turn": 1, "elapsed": entry["elapsed"], "error": "no decision in time"}


def test_deadline_while_waiting_for_a_decision():
    decide, release, _ = held()
    result = run(TASK, decide, tools=tools(), deadline=0.05, step_timeout=1.0)
    release.set()
    assert (result["stop"], result["turns"]) == ("deadline", 1)


def test_deadline_between_turns():
    late, release, _ = held()

    def decide(task, observations):  # the first decision is instant, the second never in time
        return late(task, observations) if observations else SEARCH

    # 1 s: the first turn's instant decision and search fit in it on a busy machine too
    result = run(TASK, decide, tools=tools(), max_turns=8, max_tools=6, deadline=1.0)
    release.set()
    assert (result["stop"], result["tool_calls"]) == ("deadline", 1)


def test_budget_counted_from_reported_usage():
    usage = {"prompt_tokens": 300, "completion_tokens": 20}
    result = run(TASK, script(SEARCH, READ, FINAL, usage=usage), tools=tools(), budget=Budget(tokens=500))
    assert (result["stop"], result["turns"], result["tool_calls"]) == ("budget", 2, 1)
    assert result["detail"] == "640 tokens used, budget 500"
    assert result["usage"]["prompt_tokens"] == 600
    assert [entry.get("tokens") for entry in result["trace"]] == [320, 320]


def test_tokens_spent_on_an_unparseable_reply_are_counted():
    def decide(task, observations):
        decide.last_usage = {"prompt_tokens": 100, "completion_tokens": 160}
        raise ValueError('model reply is not JSON: \'{"action": "se\'')

    result = run(TASK, decide, tools=tools())
    assert result["stop"] == "invalid_decision"
    assert result["usage"]["completion_tokens"] == 160
    assert result["trace"][0]["tokens"] == 260


def test_abort_before_a_turn():
    abort = threading.Event()
    abort.set()
    result = run(TASK, script(SEARCH), tools=tools(), abort=abort)
    assert (result["stop"], result["turns"], result["tool_calls"]) == ("aborted", 0, 0)


def test_abort_between_turns():
    abort = threading.Event()

    def decide(task, observations):
        if len(observations) == 1:
            abort.set()  # seen after this decision: the read must not run
        return [SEARCH, READ, FINAL][len(observations)]

    log = []
    result = run(TASK, decide, tools=tools(log), abort=abort)
    assert (result["stop"], result["turns"], result["tool_calls"]) == ("aborted", 2, 1)
    assert log == [("search", "deploy")]


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_turns": 0}, "max_turns must be an int in 1..8"),
        ({"max_turns": 9}, "max_turns must be an int in 1..8"),
        ({"max_tools": 7}, "max_tools must be an int in 0..6"),
        ({"max_turns": True}, "max_turns must be an int in 1..8"),
        ({"step_timeout": 0}, "step_timeout must be a positive number"),
        ({"step_timeout": float("nan")}, "step_timeout must be a positive number"),
        ({"deadline": -1}, "deadline must be a positive number"),
        ({"deadline": float("inf")}, "deadline must be a positive number"),
        ({"budget": {"tokens": -1}}, "Budget: tokens must be an int"),
        ({"budget": {"tokens": 1.5}}, "Budget: tokens must be an int"),
        ({"budget": {"cost": float("nan")}}, "Budget: cost must be a number"),
    ],
)
def test_limits_out_of_range_are_the_callers_mistake(limits, message):
    with pytest.raises(ValueError, match=message):
        if "budget" in limits:
            limits = {"budget": Budget(**limits["budget"])}
        run(TASK, script(FINAL), tools=tools(), **limits)


def test_trace_records_decision_result_elapsed_and_tokens():
    usage = {"prompt_tokens": 10, "completion_tokens": 2}
    result = run(TASK, script(SEARCH, READ, FINAL, usage=usage), tools=tools())
    first, second, last = result["trace"]
    assert first["decision"] == SEARCH and first["result"][0]["id"] == "deploy-v2"
    assert second["result"]["command"] == "docuctl ship --env staging"
    assert last["decision"] == FINAL and "result" not in last
    assert all(entry["elapsed"] >= 0 and entry["tokens"] == 12 for entry in result["trace"])
    assert set(result) == set("stop answer citation detail trace turns tool_calls elapsed usage".split())


def test_trace_renders_as_text_without_timings_and_as_html():
    usage = {"prompt_tokens": 5, "completion_tokens": 1}
    result = run(TASK, script(SEARCH, READ, FINAL, usage=usage), tools=tools())
    assert trace_text(result) == (
        " 1  search(query='deploy')  ->  1 hit(s): deploy-v2\n"
        " 2  read(id='deploy-v2')  ->  page deploy-v2: docuctl ship --env staging\n"
        " 3  final(answer='docuctl ship --env staging', citation='deploy-v2')\n"
        "stop=final  turns=3  tool_calls=2  answer='docuctl ship --env staging'  citation='deploy-v2'"
    )
    assert repr(result) == trace_text(result)
    html = result_html(result)
    assert html.count("<tr") == 4 and ">tokens</th>" in html and "ms</td>" in html


class _LateReport:
    """Sets `last_usage` on itself only from its second decision on."""

    def __call__(self, task, observations):
        if observations:
            self.last_usage = {"prompt_tokens": len(observations), "completion_tokens": 1}
        return (SEARCH, READ, FINAL)[len(observations)]


def reporting(report):
    """A policy answering SEARCH, READ, FINAL whose `last_usage` is `report(decision number)`."""

    def decide(task, observations):
        decide.last_usage = report(len(observations) + 1)
        return (SEARCH, READ, FINAL)[len(observations)]

    return decide


USAGE_KINDS = {  # kind: (policy, tokens of each trace entry, the episode's usage)
    "a function without the attribute": (lambda t, o: (SEARCH, READ, FINAL)[len(o)], [None] * 3, (0, 0, 0.0)),
    "prompt tokens only": (reporting(lambda n: {"prompt_tokens": 7}), [7, 7, 7], (21, 0, 0.0)),
    "changes each decision": (
        reporting(lambda n: {"prompt_tokens": 10 * n, "completion_tokens": n, "cost": 0.5}),
        [11, 22, 33],
        (60, 6, 1.5),
    ),
    "set from the second decision": (_LateReport(), [None, 2, 3], (3, 2, 0.0)),
}


@pytest.mark.parametrize("kind", USAGE_KINDS)
def test_tokens_are_charged_exactly_as_the_policy_reports_them(kind):
    policy, tokens, (prompt, completion, cost) = USAGE_KINDS[kind]
    result = run(TASK, policy, tools=tools(), max_turns=3, max_tools=2)
    assert result["stop"] == "final"
    assert [entry.get("tokens") for entry in result["trace"]] == tokens
    assert result["usage"] == {"prompt_tokens": prompt, "completion_tokens": completion, "cost": cost}


def test_any_graded_result_renders_its_grade_without_knowing_the_lab():
    class Marked(dict):
        correct = False
        expected = ("docuctl ship --env prod", "deploy-v2")

    result = Marked(run(TASK, script(SEARCH, READ, FINAL), tools=tools()))
    wrong = "outcome: wrong answer, expected 'docuctl ship --env prod' citing 'deploy-v2'"
    assert trace_text(result).endswith(wrong)
    assert ">stop: final, wrong</b>" in result_html(result)
    assert "expected <code>docuctl ship --env prod</code>" in result_html(result)
    Marked.correct = True
    assert trace_text(result).endswith("outcome: correct") and "final, correct" in result_html(result)


BAD_REPORTS = {  # a learner's policy class reporting its usage wrongly: (last_usage, what the detail names)
    "NaN": ({"prompt_tokens": float("nan")}, "last_usage['prompt_tokens'] must be a number"),
    "an int past any float": ({"completion_tokens": 10**400}, "last_usage['completion_tokens'] must be"),
    "a negative count": ({"prompt_tokens": 50, "completion_tokens": -45}, "got -45"),
    "a count as text": ({"prompt_tokens": "12"}, "got '12'"),
    "a bool": ({"cost": True}, "last_usage['cost'] must be a number"),
    "a count of None": ({"prompt_tokens": None}, "got None"),
    "not a mapping": ([("prompt_tokens", 3)], "last_usage must be a mapping of counts, got list"),
}


@pytest.mark.parametrize("kind", BAD_REPORTS)
def test_a_usage_report_that_is_not_a_count_ends_the_episode_before_any_tool_runs(kind):
    report, named = BAD_REPORTS[kind]
    ran = []
    result = run(TASK, reporting(lambda n: report), tools=tools(ran), budget=Budget(tokens=10))
    assert (result["stop"], result["turns"], result["tool_calls"], ran) == ("invalid_decision", 1, 0, [])
    assert named in result["detail"] and result["trace"][0]["error"] == result["detail"]
    assert result["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}


def test_numpy_counts_are_charged_like_ints():
    policy = reporting(lambda n: {"prompt_tokens": np.int64(4), "cost": np.float64(0.25)})
    result = run(TASK, policy, tools=tools(), max_turns=3, max_tools=2)
    assert result["stop"] == "final" and result["usage"] == {
        "prompt_tokens": 12,
        "completion_tokens": 0,
        "cost": 0.75,
    }
