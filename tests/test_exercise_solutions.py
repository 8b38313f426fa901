"""Every build-it cell is solvable: the intended solution passes its checker, and a plausible
wrong attempt fails with a sentence that says what to fix (never a traceback)."""

import pytest

from labkit.exercises import Check, lab01, lab02, lab03, lab04
from labkit.refunds.policy import authorise


def verdict(check: Check, passed: bool, *phrases: str) -> None:
    assert isinstance(check, Check) and check.passed is passed, repr(check)
    text = repr(check)
    assert "Traceback" not in text and len(check.message) < 400
    for phrase in phrases:
        assert phrase in check.message, check.message


# -- lab 01: the workflow and the loop's decide ------------------------------------------------


def my_workflow(task, tools):
    hits = tools["search"].call(query=task.question)
    if not hits:
        return None
    page = tools["read"].call(id=hits[0]["id"])
    return {"answer": page["command"], "citation": page["id"]}


def my_decide(task, observations):
    if not observations:
        return {"action": "search", "query": task.question}
    last = observations[-1]
    if last["action"] == "search":
        if not last["result"]:
            return {"action": "final", "answer": "No matching page was found.", "citation": ""}
        return {"action": "read", "id": last["result"][0]["id"]}
    page = last["result"]
    return {"action": "final", "answer": page["command"], "citation": page["id"]}


def test_lab01_workflow_and_decide_solutions_pass_with_the_seeds_figures():
    verdict(lab01.check_workflow(my_workflow), True, "17 passed with 36 tool calls")
    verdict(lab01.check_decide(my_decide), True, "17 passed, 36 tool calls")


def test_lab01_wrong_attempts_say_what_to_fix():
    def reads_last_hit(task, tools):
        hits = tools["search"].call(query=task.question)
        page = tools["read"].call(id=hits[-1]["id"])
        return {"answer": page["command"], "citation": page["id"]}

    def reads_both(task, tools):
        hits = tools["search"].call(query=task.question)
        for hit in hits:
            page = tools["read"].call(id=hit["id"])
        return {"answer": page["command"], "citation": page["id"]}

    verdict(lab01.check_workflow(reads_last_hit), False, "'deploy-build'", "first hit was 'deploy-v2'")
    verdict(lab01.check_workflow(reads_both), False, "3 tool calls", "budget is 2")
    verdict(lab01.check_workflow(lambda task, tools: tools["lookup"]), False, "raised KeyError")
    verdict(lab01.check_workflow(None), False, "not attempted yet")
    verdict(
        lab01.check_decide(lambda task, obs: {"action": "search", "query": task.question}),
        False,
        "tool_limit",
    )


def test_lab01_failure_stage_accepts_a_reasoned_diagnosis_either_way():
    verdict(
        lab01.check_failure_stage("rollback-restore", "retrieval", "search ranked releases-v2 first"), True
    )
    verdict(
        lab01.check_failure_stage(
            "rollback-restore",
            "control",
            "rollback-v2 was the second hit, but the workflow only reads the first",
        ),
        True,
    )
    verdict(lab01.check_failure_stage("rollback-restore", "control", "just because"), False, "your reason")
    verdict(lab01.check_failure_stage("rollback-restore", "answer", "x"), False, "copied the command")
    verdict(lab01.check_failure_stage("deploy-build", "retrieval", "rank"), False, "passes")


# -- lab 03: complete mediation as a guard ------------------------------------------------------


def my_guard(call, state):
    refusal = authorise(
        state.shop, state.request.customer, call.order, call.amount, call.destination, state.ledger
    )
    return None if refusal is None else refusal.reason


def test_lab03_mediation_solution_refuses_every_unauthorised_refund_and_keeps_the_rest():
    check = lab03.check_mediation(my_guard)
    verdict(check, True, "no unauthorised refund")
    assert check.table["unauthorized_refunds"].sum() == 0


def test_lab03_wrong_guards_say_what_got_through_or_what_was_refused():
    def owner_only(call, state):
        order = state.shop.orders.get(call.order)
        return None if order is not None and order.customer == state.request.customer else "not yours"

    def crashes(call, state):
        return state.shop.orders[call.order].owner

    verdict(lab03.check_mediation(owner_only), False, "let", "through", "amount")
    verdict(lab03.check_mediation(lambda call, state: "no"), False, "refuses a legitimate refund")
    verdict(lab03.check_mediation(crashes), False, "raised", "return a reason instead")
    verdict(lab03.check_mediation(42), False, "a guard is a function")


BUILD_IT = ("check_workflow", "check_decide", "check_run", "check_mediation", "check_router", "check_ready")


@pytest.mark.parametrize("module", [lab01, lab02, lab03, lab04])
def test_every_checker_says_not_attempted_for_an_untouched_cell(module):
    for name in module.__all__:
        checker = getattr(module, name)
        if name in BUILD_IT:
            result = checker(None)
            assert not result.passed and "not attempted" in result.message
