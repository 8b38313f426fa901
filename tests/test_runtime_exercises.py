"""Lab 02: the notebook's exercise checkers accept right answers and explain wrong ones."""

import math

import pytest

from labkit import docuctl_tools, run, task_from
from labkit.exercises_02 import budget_case, check_budget, check_pass_hat_k, check_stop_policy
from labkit.model.docuctl import docuctl_policy


def searcher(task, observations):
    return {"action": "search", "query": "rollback"}


def citer(task, observations):
    return {"action": "final", "answer": "docuctl release revert --env staging", "citation": "rollback-v2"}


def test_stop_policy_checker():
    assert check_stop_policy("tool_limit", searcher).startswith("Yes: stop=tool_limit after 3 turn(s)")
    assert check_stop_policy("unread_citation", citer).startswith("Yes: stop=unread_citation")
    # turn_limit runs under max_turns=2, max_tools=3: the searcher reaches it (under the
    # tool_limit setting no policy could, since every non-final action spends a tool).
    assert check_stop_policy("turn_limit", searcher).startswith("Yes: stop=turn_limit after 2 turn(s)")
    assert check_stop_policy("turn_limit", citer).startswith(
        "Not yet: your policy ended with stop=unread_citation"
    )
    assert "not a stop reason" in check_stop_policy("crash", searcher)
    assert "needs a timer" in check_stop_policy("deadline", searcher)


def test_pass_hat_k_checker():
    assert check_pass_hat_k(lambda c, n, k: math.comb(c, k) / math.comb(n, k)).startswith("Yes")
    assert "drawn without replacement" in check_pass_hat_k(lambda c, n, k: (c / n) ** k)
    assert "raised ZeroDivisionError" in check_pass_hat_k(lambda c, n, k: 1 / 0)


def test_budget_checker_finds_the_exact_spend():
    case = budget_case()
    free = run(
        task_from(case),
        docuctl_policy("base"),
        tools=docuctl_tools(task_from(case)),
        max_turns=3,
        max_tools=2,
    )
    needed = free["usage"]["prompt_tokens"] + free["usage"]["completion_tokens"]
    assert check_budget(1).startswith("Too small: the episode stopped with stop=budget")
    assert check_budget(needed - 1).startswith("Too small")
    assert check_budget(needed).startswith(f"Yes: {needed} tokens")
    assert check_budget(needed + 1).startswith("Enough, but not the smallest")


@pytest.mark.parametrize("answer", [0, -3, 2.5, "600"])
def test_budget_checker_refuses_nonsense(answer):
    assert check_budget(answer) == "Give the budget as a positive int of tokens."
