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
