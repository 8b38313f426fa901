"""Lab 02's build-it cell and exercises: every intended solution passes its checker, and a
plausible wrong attempt fails with a sentence that says what to fix (never a traceback)."""

import functools
import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verdicts import own_verdict, verdict

from labkit.core import check as core_check
from labkit.core.errors import LabError
from labkit.core.runtime import run, validate_decision
from labkit.core.verdicts import load_progress
from labkit.decision_loop import checks as lab02
from labkit.decision_loop.tables import pass_hat_k

# -- build it: the heart of run --------------------------------------------------------------


def read_ids(tool, result):
    """The ids a tool call makes readable: a source tool's page, nothing else."""
    if tool.source and isinstance(result, dict) and isinstance(result.get("id"), str):
        return {result["id"]}
    return set()


def run_reading(ids_read):
    """The intended `my_run`, with `ids_read(tool, result)` deciding what counts as read."""
    return lambda *args, **limits: my_run(*args, **limits, ids_read=ids_read)


def my_run(task, decide, tools, max_turns, max_tools, ids_read=read_ids):
    observations, sources, tool_calls = [], set(), 0

    def stop(reason, turns, answer=None, citation=None):
        return {"stop": reason, "turns": turns, "tool_calls": tool_calls, "answer": answer,
                "citation": citation}

    for turn in range(1, max_turns + 1):
        try:
            proposal = decide(task, list(observations))
        except OSError:
            return stop("provider_error", turn)
        except Exception:
            return stop("invalid_decision", turn)
        try:
            decision = validate_decision(proposal, tools)
        except ValueError:
            return stop("invalid_decision", turn)
        if decision["action"] == "final":
            if decision["citation"] and decision["citation"] not in sources:
                return stop("unread_citation", turn)
            return stop("final", turn, decision["answer"], decision["citation"])
        if tool_calls == max_tools:
            return stop("tool_limit", turn)
        tool = tools[decision["action"]]
        try:
            result = tool.call(**{name: decision[name] for name in tool.params})
        except Exception as error:
            result = {"error": str(error)}
        tool_calls += 1
        sources |= ids_read(tool, result)
        observations.append({"action": decision["action"], "result": result})
    return stop("turn_limit", max_turns)


def test_run_solution_matches_the_runtime_on_every_case():
    check = lab02.check_run(my_run)
    verdict(check, True, f"all {len(lab02.scenarios())} cases")
    # Every stop reason a policy can reach alone appears among the cases.
    assert set(check.table["stop"]) == set(lab02.REACHABLE)
    assert load_progress("02")["exercises"]["run"]["passed"] is True


def test_wrong_runs_are_answered_with_the_rule_they_break():
    def no_validation(task, decide, tools, max_turns, max_tools):
        tool_calls, observations = 0, []
        for turn in range(1, max_turns + 1):
            d = decide(task, observations)
            if d["action"] == "final":
                return {"stop": "final", "turns": turn, "tool_calls": tool_calls, "answer": d["answer"],
                        "citation": d["citation"]}
            result = tools[d["action"]].call(**{k: v for k, v in d.items() if k != "action"})
            tool_calls += 1
            observations.append({"action": d["action"], "result": result})
        return {"stop": "turn_limit", "turns": max_turns, "tool_calls": tool_calls, "answer": None,
                "citation": None}

    def limit_after_running(task, decide, tools, max_turns, max_tools):
        # Checks the tool limit only after running the tool: one call too many.
        result = my_run(task, decide, tools, max_turns, max_tools + 1)
        if result["tool_calls"] > max_tools:
            return result | {"stop": "tool_limit", "tool_calls": max_tools}
        return result

    def trusts_citations(task, decide, tools, max_turns, max_tools):
        result = my_run(task, decide, tools, max_turns, max_tools)
        return result | {"stop": "final"} if result["stop"] == "unread_citation" else result

    def skeleton(task, decide, tools, max_turns, max_tools):
        # The notebook's cell as stored: asks once per turn and does nothing with the answer.
        for _ in range(max_turns):
            decide(task, [])
        return {"stop": "turn_limit", "turns": max_turns, "tool_calls": 0, "answer": None, "citation": None}

    verdict(lab02.check_run(no_validation), False, "raised KeyError", "stop reason")
    verdict(lab02.check_run(limit_after_running), False, "tools ran")
    def every_id_returned(tool, result):
        """Search hits count as read too: an id in any result, list or dict."""
        items = result if isinstance(result, list) else [result]
        return {item["id"] for item in items if isinstance(item, dict) and isinstance(item.get("id"), str)}

    hits_count_as_read = run_reading(every_id_returned)

    verdict(lab02.check_run(trusts_citations), False, "unread_citation")
    verdict(lab02.check_run(hits_count_as_read), False, "searches, then cites a hit unread")
    verdict(lab02.check_run(lambda *a, **k: "done"), False, "return a dict")
    verdict(lab02.check_run(skeleton), False, "'scripted search, read, answer'", "expected 'final'")
    verdict(lab02.check_run(None), False, "not attempted yet")


# -- exercise 1: a policy for each stop reason -----------------------------------------------


def searcher(task, observations):
    return {"action": "search", "query": task.question}


def citer(task, observations):
    return {"action": "final", "answer": "docuctl release revert --env staging", "citation": "rollback-v2"}


def test_stop_policy_solutions_reach_every_reason_a_policy_can():
    verdict(lab02.check_stop_policy("tool_limit", searcher), True, "stop=tool_limit after 3 turn(s)")
    # turn_limit runs under max_turns=2, max_tools=3: under the tool_limit setting no policy
    # could reach it, since every non-final action spends a tool.
    verdict(lab02.check_stop_policy("turn_limit", searcher), True, "after 2 turn(s)", "max_turns=2")
    verdict(lab02.check_stop_policy("unread_citation", citer), True, "stop=unread_citation")
    verdict(lab02.check_stop_policy("invalid_decision", lambda t, o: {"action": "delete"}), True)

    def flaky(task, observations):
        raise ConnectionError("refused")

    verdict(lab02.check_stop_policy("provider_error", flaky), True)


def test_stop_policy_wrong_attempts_say_what_happened():
    verdict(lab02.check_stop_policy("turn_limit", citer), False, "ended with stop=unread_citation")
    verdict(lab02.check_stop_policy("turn_limit", lambda t, o: {"action": "nope"}), False, "invalid_decision")
    verdict(lab02.check_stop_policy("crash", searcher), False, "not a stop reason")
    verdict(lab02.check_stop_policy("deadline", searcher), False, "needs a timer")
    verdict(lab02.check_stop_policy("tool_limit", None), False, "not attempted yet")
    verdict(lab02.check_stop_policy("tool_limit", "search"), False, "a policy is a function")


# -- exercise 2: pass^k by hand --------------------------------------------------------------


def test_pass_hat_k_solution_and_wrong_attempts():
    verdict(lab02.check_pass_hat_k(lambda c, n, k: math.comb(c, k) / math.comb(n, k)), True, "C(c,k)/C(n,k)")
    verdict(lab02.check_pass_hat_k(lambda c, n, k: (c / n) ** k), False, "drawn without replacement")
    verdict(lab02.check_pass_hat_k(lambda c, n, k: 1 / 0), False, "raised ZeroDivisionError")
    verdict(lab02.check_pass_hat_k(lambda c, n, k: "0.3"), False, "expected")
    verdict(lab02.check_pass_hat_k(None), False, "not attempted yet")


# -- exercise 3: size a budget ---------------------------------------------------------------


def test_budget_solution_is_the_replayed_episodes_exact_spend():
    # SmolLM2's recorded deploy-build episode: 255 + 326 + 411 tokens over three decisions.
    verdict(lab02.check_budget(992), True, "992 tokens", "3 decisions")
    verdict(lab02.check_budget(991), False, "too small", "stop=budget")
    verdict(lab02.check_budget(993), False, "not the smallest")
    verdict(lab02.check_budget(581), False, "too small")


def test_the_budget_checker_ignores_the_live_backend(monkeypatch):
    monkeypatch.setenv("LABKIT_MODEL", "ollama:nothing-here")
    verdict(lab02.check_budget(992), True)


@pytest.mark.parametrize("answer", [0, -3, 2.5, "600", True])
def test_budget_checker_refuses_nonsense(answer):
    verdict(lab02.check_budget(answer), False, "positive int of tokens")


def test_budget_checker_untouched():
    verdict(lab02.check_budget(...), False, "not attempted yet")


# -- exercise 4: the rule a stop-only grader relies on ---------------------------------------


def test_missing_rule_solution_is_answered_with_the_recordings_figures():
    # The example prompt at L1, T=0: 22 unread_citation, 1 invalid_decision, 1 final (passed).
    check = lab02.check_missing_rule("unread_citation", 23)
    verdict(check, True, "23 of these 24 episodes", "outcome() passes 1")


def test_missing_rule_asks_a_figure_no_cell_shows():
    # The rule itself is on screen in section 5's stops table; the count of T=0 episodes that
    # would end `final` without it is not: the exercise asks for it.
    verdict(lab02.check_missing_rule("unread_citation"), False, "unread_citation is the rule", "how many")
    verdict(lab02.check_missing_rule("unread_citation", 22), False, "not 22", "replay_trials")
    verdict(lab02.check_missing_rule("unread_citation", "23"), False, "plain int")


def test_missing_rule_wrong_answers():
    verdict(lab02.check_missing_rule("tool_limit"), False, "unread_citation 22", "Which rule")
    verdict(lab02.check_missing_rule("final"), False, "Which rule")
    verdict(lab02.check_missing_rule("citations"), False, "not a stop reason")
    verdict(lab02.check_missing_rule(None), False, "not attempted yet")


def test_every_public_checker_records_progress():
    for name in lab02.__all__:
        if name.startswith("check_"):
            assert getattr(lab02, name).exercise[0] == "02"


# -- hostile and careless answers (issues 20 and 21) ------------------------------------------

def popping_run(task, decide, tools, max_turns, max_tools):
    """The intended run, written as many would: it pops the action out of the validated decision."""
    observations, sources, tool_calls = [], set(), 0

    def stop(reason, turns, answer=None, citation=None):
        return {"stop": reason, "turns": turns, "tool_calls": tool_calls, "answer": answer,
                "citation": citation}

    for turn in range(1, max_turns + 1):
        try:
            proposal = decide(task, list(observations))
        except OSError:
            return stop("provider_error", turn)
        except Exception:
            return stop("invalid_decision", turn)
        try:
            decision = validate_decision(proposal, tools)
        except ValueError:
            return stop("invalid_decision", turn)
        action = decision.pop("action")
        if action == "final":
            if decision["citation"] and decision["citation"] not in sources:
                return stop("unread_citation", turn)
            return stop("final", turn, decision["answer"], decision["citation"])
        if tool_calls == max_tools:
            return stop("tool_limit", turn)
        tool = tools[action]
        try:
            result = tool.call(**decision)
        except Exception as error:
            result = {"error": str(error)}
        tool_calls += 1
        sources |= read_ids(tool, result)
        observations.append({"action": action, "result": result})
    return stop("turn_limit", max_turns)


def test_a_run_that_changes_the_decisions_it_is_handed_is_judged_on_its_own_merits():
    before = lab02.reference_table()
    verdict(lab02.check_run(popping_run), True)
    # ... and it changed nothing the next check compares against
    pd_equal = before.equals(lab02.reference_table())
    assert pd_equal, lab02.reference_table()
    verdict(lab02.check_run(my_run), True)


def test_the_modules_decisions_are_read_only():
    with pytest.raises(TypeError):
        lab02.FINAL["action"] = "read"  # type: ignore[index]
    with pytest.raises(TypeError):
        lab02.LIMITS["max_turns"] = 8  # type: ignore[index]


class Same(str):
    """A string equal to everything."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__


class SameInt(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__


def test_values_that_compare_equal_to_everything_do_not_pass():
    def always_equal(task, decide, tools, max_turns, max_tools):
        return {"stop": Same("final"), "turns": SameInt(0), "tool_calls": SameInt(0), "answer": Same(""),
                "citation": Same("")}

    verdict(lab02.check_run(always_equal), False, "of type Same", "plain")
    nope = lambda t, o: {"action": "nope"}  # noqa: E731
    verdict(lab02.check_stop_policy(Same("tool_limit"), nope), False, "plain string")
    verdict(lab02.check_missing_rule(Same("unread_citation"), 23), False, "plain string")


def test_numpy_values_are_answered_not_compared():
    def numpy_counts(task, decide, tools, max_turns, max_tools):
        result = my_run(task, decide, tools, max_turns, max_tools)
        return result | {"turns": np.int64(result["turns"])}

    verdict(lab02.check_run(numpy_counts), False, "of type int64", "int()")
    verdict(lab02.check_budget(np.int64(992)), False, "positive int of tokens", "int(x)")
    verdict(lab02.check_pass_hat_k(lambda c, n, k: np.array([0.5])), False, "ndarray", "plain float")
    # a numpy float is a float: the right value passes
    verdict(lab02.check_pass_hat_k(lambda c, n, k: np.float64(math.comb(c, k) / math.comb(n, k))), True)


def delegating_run(task, decide, tools, max_turns, max_tools):
    return run(task, decide, tools=tools, max_turns=max_turns, max_tools=max_tools)


@functools.wraps(run)
def wrapped_run(*args, **kwargs):
    return delegating_run(*args, **kwargs)


@pytest.mark.parametrize("answer", [run, functools.partial(run), delegating_run, wrapped_run])
def test_labkits_own_run_is_recognised(answer):
    verdict(lab02.check_run(answer), False, "that is labkit's version (`run`)", "write your own my_run")


@pytest.mark.parametrize(
    "answer", [pass_hat_k, functools.partial(pass_hat_k), lambda c, n, k: pass_hat_k(c, n, k)]
)
def test_labkits_own_pass_hat_k_is_recognised(answer):
    verdict(lab02.check_pass_hat_k(answer), False, "that is labkit's version (`pass_hat_k`)",
            "write your own")


def test_huge_and_odd_numbers_get_a_verdict():
    verdict(lab02.check_budget(10**20), False, "not the smallest")
    verdict(lab02.check_budget(10**5000), False, "not the smallest")  # past Python's int-to-str limit
    assert load_progress("02")["exercises"]["budget"]["payload"] == {"tokens": None}
    verdict(lab02.check_pass_hat_k(lambda c, n, k: 10**400), False, "between 0 and 1")
    verdict(lab02.check_pass_hat_k(lambda c, n, k: 10**5000), False, "between 0 and 1")
    verdict(lab02.check_pass_hat_k(lambda c, n, k: math.nan), False, "expected")
    verdict(lab02.check_pass_hat_k(lambda c, n, k: True), False, "a bool")


def test_labkits_own_error_raised_by_an_answer_is_a_verdict():
    def raises_lab_error(task, decide, tools, max_turns, max_tools):
        raise LabError("no recording for this request")

    verdict(lab02.check_run(raises_lab_error), False, "your function raised LabError", "line")

    def policy(task, observations):
        raise LabError("no recording for this request")

    verdict(lab02.check_stop_policy("tool_limit", policy), False, "LabError")


def test_a_slow_policy_under_the_runtime_gets_a_verdict_naming_the_case(monkeypatch):
    monkeypatch.setattr(core_check, "LIMIT_S", 0.3)  # the checkers' 3 s, shortened for the suite

    def slow(task, observations):
        time.sleep(5)  # over the checker's limit; labkit's run waits for a policy without a timeout
        return {"action": "search", "query": task.question}

    verdict(lab02.check_stop_policy("tool_limit", slow), False, "did not return within 0.3 s",
            "max_turns=3, max_tools=2")


def test_a_hanging_run_gets_a_verdict_naming_the_case(monkeypatch):
    monkeypatch.setattr(core_check, "LIMIT_S", 0.3)

    def hangs(task, decide, tools, max_turns, max_tools):
        while True:
            time.sleep(0.01)

    verdict(lab02.check_run(hangs), False, "did not return within 0.3 s", "'scripted search, read, answer'")


# -- the cases a learner has not seen ---------------------------------------------------------


def test_runs_that_fit_only_the_shown_cases_fail_on_the_others():
    def any_id(tool, result):  # forgets tool.source: a non-source tool's id counts as read
        return {result["id"]} if isinstance(result, dict) and isinstance(result.get("id"), str) else set()

    def limit_from_turn_2(task, decide, tools, max_turns, max_tools):
        # checks the tool limit only once a tool has run: max_tools=0 lets one through
        if max_tools == 0:
            return my_run(task, decide, tools, max_turns, 1)
        return my_run(task, decide, tools, max_turns, max_tools)

    def connection_errors_only(task, decide, tools, max_turns, max_tools):
        def wrapped(t, o):
            try:
                return decide(t, o)
            except OSError as error:
                if isinstance(error, ConnectionError):
                    raise
                raise RuntimeError(str(error)) from None

        return my_run(task, wrapped, tools, max_turns, max_tools)

    verdict(lab02.check_run(run_reading(any_id)), False, "not a source", "does not show")
    verdict(lab02.check_run(limit_from_turn_2), False, "no tool allowed", "does not show")
    verdict(lab02.check_run(connection_errors_only), False, "TimeoutError", "provider_error")
    # the intended solution passes them all; the table shows only the cases in the reference table
    check = lab02.check_run(my_run)
    verdict(check, True, "and 8 it does not show")
    assert list(check.table.index) == list(lab02.reference_table().index)


# -- hypothesis: whatever a learner hands in ends in a verdict --------------------------------

values = st.one_of(
    st.none(), st.just(...), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.just(10**400), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.sampled_from([np.int64(3), np.float64(0.5), np.array([1, 2]), np.str_("final"), Same("final")]),
)


def _raiser(error):
    def fn(*args, **kwargs):
        raise error

    return fn


functions = st.one_of(
    values.map(lambda value: lambda *args, **kwargs: value),
    st.sampled_from([ValueError("x"), KeyError("k"), LabError("lab"), RecursionError(), ZeroDivisionError()])
    .map(_raiser),
)
answers = st.one_of(values, functions)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@SETTINGS
@given(answers)
def test_any_answer_to_check_run_is_a_verdict(answer):
    own_verdict(lab02.check_run(answer))


@SETTINGS
@given(answers, answers)
def test_any_answer_to_check_stop_policy_is_a_verdict(reason, policy):
    own_verdict(lab02.check_stop_policy(reason, policy))
    own_verdict(lab02.check_stop_policy("tool_limit", policy))


@SETTINGS
@given(answers)
def test_any_answer_to_check_pass_hat_k_is_a_verdict(answer):
    own_verdict(lab02.check_pass_hat_k(answer))


@SETTINGS
@given(values)
def test_any_answer_to_check_budget_is_a_verdict(answer):
    own_verdict(lab02.check_budget(answer))


@SETTINGS
@given(values, values)
def test_any_answer_to_check_missing_rule_is_a_verdict(stop, finals):
    own_verdict(lab02.check_missing_rule(stop, finals))
    own_verdict(lab02.check_missing_rule("unread_citation", finals))
