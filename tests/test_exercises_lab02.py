"""Lab 02's build-it cell and exercises: every intended solution passes its checker, and a
plausible wrong attempt fails with a sentence that says what to fix (never a traceback)."""

import math

import pytest
from verdicts import verdict

from labkit.core.progress import load_progress
from labkit.core.runtime import validate_decision
from labkit.decision_loop import checks as lab02

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
    check = lab02.check_missing_rule("unread_citation")
    verdict(check, True, "23 of these 24 episodes", "outcome() passes 1")


def test_missing_rule_wrong_answers():
    verdict(lab02.check_missing_rule("tool_limit"), False, "unread_citation 22", "Which rule")
    verdict(lab02.check_missing_rule("final"), False, "Which rule")
    verdict(lab02.check_missing_rule("citations"), False, "not a stop reason")
    verdict(lab02.check_missing_rule(None), False, "not attempted yet")


def test_every_public_checker_records_progress():
    for name in lab02.__all__:
        if name.startswith("check_"):
            assert getattr(lab02, name).exercise[0] == "02"
