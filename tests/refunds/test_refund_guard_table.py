"""A lab-03 guard as a table of verdicts: exact for guards that read the records, honest where not."""

from dataclasses import astuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labkit.refunds.attacks import gold_calls
from labkit.refunds.checks import check_mediation
from labkit.refunds.defenses import Defenses
from labkit.refunds.guard_table import (
    TABLE_FORMAT,
    TableGuard,
    amount_class,
    guard_table,
    landmarks,
    representatives,
    table_problem,
)
from labkit.refunds.lab import refund_lab
from labkit.refunds.rules import authorise
from labkit.refunds.shop import MAX_CENTS, Refund, RefundCall
from labkit.refunds.tools import EpisodeState


def mediation(call, state):
    refusal = authorise(state.shop, state.request.customer, *astuple(call), state.ledger)
    return refusal and refusal.reason


def intent(call, state):
    """Only the refund the customer asked for (reads the request, not just the shop's rules)."""
    return None if call == state.request.asked(state.shop) else "not what the customer asked for"


def cap(call, state):
    """A constant of its own: no refund above $50."""
    return "over the cap" if call.amount > 50_00 else None


@settings(deadline=None)  # hypothesis's 200 ms an example is a clock a busy machine can miss
@given(st.integers(1, MAX_CENTS))
def test_every_amount_falls_in_a_class_the_table_holds(amount):
    lab = refund_lab()
    for request in lab.requests.values():
        marks = landmarks(request.id, request.order)
        held = dict(representatives(marks))
        assert amount_class(marks, amount) in held
        assert amount_class(marks, held[amount_class(marks, amount)]) == amount_class(marks, amount)


def _states(lab, request):
    """A fresh state, and one per order with that order refunded earlier in the episode."""
    yield EpisodeState(lab.shop, request, Defenses("t"))
    for order in lab.shop.orders.values():
        state = EpisodeState(lab.shop, request, Defenses("t"))
        state.ledger.append(
            Refund("rf-x", order.id, order.refundable or 1, order.payment_method, request.customer)
        )
        yield state


@pytest.mark.parametrize("guard", [mediation, intent], ids=["mediation", "intent"])
def test_a_guard_that_reads_the_records_is_tabulated_exactly(guard):
    # Every call an attack or a customer makes: each attack's gold calls and the asked refund,
    # each at its own amount and at one cent more or less, in every ledger state.
    lab = refund_lab()
    table = TableGuard(guard_table(guard), "t")
    checked = 0
    for request in lab.requests.values():
        calls = {request.asked(lab.shop)}
        for attack in lab.attacks.values():
            calls |= set(gold_calls(attack, request, lab.shop))
        calls |= {RefundCall(c.order, c.amount + d, c.destination) for c in calls for d in (-1, 1)}
        for state in _states(lab, request):
            for call in calls:
                if 0 < call.amount <= MAX_CENTS:
                    assert bool(table(call, state)) == bool(guard(call, state)), (call, request.id)
                    checked += 1
    assert checked > 1000


def test_the_tabulated_mediation_guard_passes_the_mediation_checker():
    assert check_mediation(TableGuard(guard_table(mediation), "tabulated")).passed


def test_a_guard_with_a_constant_of_its_own_is_judged_at_the_class_representative():
    # The documented approximation: $50 is no landmark of o-1001 ($89 refundable), so every
    # amount below $89 shares the verdict of the representative ($44.50: allowed).
    lab = refund_lab()
    request = lab.requests["r-ana-blender"]
    state = EpisodeState(lab.shop, request, Defenses("t"))
    call = RefundCall("o-1001", 60_00, "card-ana-4242")
    assert cap(call, state) and not TableGuard(guard_table(cap), "t")(call, state)


def test_a_guard_that_raises_is_recorded_and_still_refuses():
    def flaky(call, state):
        if call.destination.startswith("gift"):
            raise KeyError(call.destination)
        return None

    table = guard_table(flaky)
    assert set(table["verdicts"]) == {"a", "e"}
    guard = TableGuard(table, "flaky")
    lab = refund_lab()
    state = EpisodeState(lab.shop, lab.requests["r-ana-blender"], Defenses("t"))
    assert guard(RefundCall("o-1001", 8900, "gift-ana-01"), state)
    assert not guard(RefundCall("o-1001", 8900, "card-ana-4242"), state)
    assert guard.crashes == 1


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda t: [], "is an object"),
        (lambda t: {**t, "format": "x"}, "format"),
        (lambda t: {**t, "shop": "0" * 16}, "another version"),
        (lambda t: {**t, "verdicts": t["verdicts"][:-1]}, "exactly"),
        (lambda t: {**t, "verdicts": "x" + t["verdicts"][1:]}, "letters"),
        (lambda t: {**t, "verdicts": None}, "exactly"),
    ],
)
def test_a_table_that_does_not_fit_the_shop_is_refused(change, problem):
    table = guard_table(mediation)
    assert table["format"] == TABLE_FORMAT and table_problem(table) is None
    assert problem in table_problem(change(table))
    with pytest.raises(ValueError, match=problem):
        TableGuard(change(table), "t")
