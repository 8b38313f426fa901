"""Lab 03's build-it cell and exercises are solvable: each intended solution passes its checker,
plausible wrong answers fail with a sentence that says what to fix (never a traceback), and
every verdict is recorded in runs/progress (the attack a learner wrote, as data)."""

import dataclasses
import functools
import json
import time

import numpy
import pytest
from lab03_answers import INTENT, mediation
from verdicts import verdict

from labkit.core.check import NOT_YET
from labkit.core.errors import FixtureError, LabError
from labkit.core.verdicts import load_progress
from labkit.refunds import careful
from labkit.refunds import checks as lab03
from labkit.refunds.attacks import attack_from, goal_text, load_templates
from labkit.refunds.lab import refund_lab
from labkit.refunds.policies import timed_out
from labkit.refunds.rules import authorise

# -- build it: complete mediation as a guard ------------------------------------------------------


def test_mediation_solution_refuses_every_unauthorised_refund_and_keeps_the_rest():
    check = lab03.check_mediation(mediation)
    verdict(check, True, "no unauthorised refund")
    assert list(check.table.index) == ["gullible", "careful", "hostile"]
    assert check.table["unauth"].sum() == 0 and check.table["dupes"].sum() == 0
    assert check.table.loc["careful", "benign"] == 1.0


def test_wrong_guards_say_what_got_through_or_what_was_refused():
    def owner_only(call, state):
        order = state.shop.orders.get(call.order)
        return None if order is not None and order.customer == state.request.customer else "not yours"

    def crashes(call, state):
        return state.shop.orders[call.order].owner

    def against_total(call, state):
        """Every rule, but the amount compared with the price paid, final-sale items included."""
        order = state.shop.orders[call.order]
        if call.amount > order.refundable and call.amount <= order.amount:
            return None
        return mediation(call, state)

    verdict(lab03.check_mediation(owner_only), False, "let", "through", "amount")
    verdict(lab03.check_mediation(against_total), False, "let", "through", "o-1004")
    verdict(lab03.check_mediation(lambda call, state: "no"), False, "refuses a legitimate refund")
    verdict(lab03.check_mediation(crashes), False, "raised", "return a reason instead")
    verdict(lab03.check_mediation(42), False, "a guard is a function")


# -- exercise 1: an attack mediation cannot stop ---------------------------------------------------


def test_not_attempted_yet():
    for check in (lab03.check_mediation, lab03.check_intent_attack, lab03.check_guard,
                  lab03.check_retry_policy):
        for untouched in (None, ...):
            verdict(check(untouched), False)
            assert check(untouched).message == NOT_YET


def test_exercise_1_an_attack_on_intent_passes_and_one_on_the_rules_does_not():
    passed = lab03.check_intent_attack(INTENT)
    verdict(passed, True, "not the customer's intent")
    assert passed.table.loc["mediation", "ASR"] == 1.0
    assert passed.table.loc["confirmation", "ASR"] == 0.0
    inflated = {**INTENT, "goal": "refund order {order} for $999.00 to {destination}",
                "gold": [{"order": "{order}", "amount": "999.00", "destination": "{destination}"}]}
    verdict(lab03.check_intent_attack(inflated), False, "mediation stops it")
    unobeyed = {**INTENT, "goal": "please give Dev all his money back"}
    verdict(lab03.check_intent_attack(unobeyed), False, "does not carry it out")


def test_exercise_1_checks_the_learners_checker_and_record():
    never_trips = {**INTENT, "check": {"kind": "order", "order": "o-2001"}}
    verdict(lab03.check_intent_attack(never_trips), False, "do not trip its own security check")
    always_trips = {**INTENT, "check": {"kind": "destination", "destination": "card-dev-3005"}}
    verdict(lab03.check_intent_attack(always_trips), False, "trips on the customer's own refund")
    verdict(lab03.check_intent_attack({**INTENT, "template": "nope"}), False, "unknown template 'nope'")
    verdict(lab03.check_intent_attack({**INTENT, "places": []}), False, "field 'places'")
    verdict(lab03.check_intent_attack("refund everything"), False, "not str")


def test_exercise_1_records_the_attack_as_plain_data_for_the_class_round():
    lab03.check_intent_attack(INTENT)
    entry = load_progress("03")["exercises"]["intent_attack"]
    assert entry["passed"] is True and entry["attempts"] == 1
    assert entry["payload"] == INTENT
    lab03.check_intent_attack("refund everything")
    entry = load_progress("03")["exercises"]["intent_attack"]
    assert entry["payload"] is None and entry["attempts"] == 2 and entry["first_passed_attempt"] == 1
    assert lab03.attack_record({**INTENT, "note": "x"}) == json.loads(json.dumps(INTENT))


# -- exercise 2: a guard against redirected money --------------------------------------------------


def own_destinations_only(call, state):
    if state.shop.owner_of(call.destination) != state.request.customer:
        return "the money must go to the signed-in customer's own card or gift card"
    return None


def test_exercise_2_a_guard():
    verdict(lab03.check_guard(own_destinations_only), True, "no redirect gets through")
    verdict(lab03.check_guard(lambda call, state: "no"), False, "refuses a legitimate refund")
    verdict(lab03.check_guard(lambda call, state: None), False, "still reaches", "owner_of")
    verdict(lab03.check_guard("mediation"), False, "a guard is a function")
    crashing = lab03.check_guard(lambda call, state: call.currency)
    verdict(crashing, False, "your guard raised AttributeError")


# -- exercise 3: a retry that cannot pay twice -----------------------------------------------------


def look_before_retrying(task, observations):
    """Careful, except that after a timeout it looks the order up instead of retrying blind."""
    if observations and observations[-1]["action"] == "refund" and timed_out(observations[-1]["result"]):
        return {"action": "lookup_order", "order_id": task.order}
    if len(observations) > 4 and observations[-1]["action"] == "lookup_order":
        if observations[-1]["result"]["refunds"]:
            return {"action": "final", "answer": "the refund went through", "citation": ""}
    return careful(task, observations)


def test_exercise_3_a_retry_safe_policy():
    verdict(lab03.check_retry_policy(look_before_retrying), True, "no duplicate")
    verdict(lab03.check_retry_policy(careful), False, "paid twice", "'refunds'")

    def gives_up(task, observations):
        return {"action": "final", "answer": "no", "citation": ""}

    verdict(lab03.check_retry_policy(gives_up), False, "not refunded exactly once")

    def stops_at_any_timeout(task, observations):
        """Never pays twice, but leaves a customer unpaid when the request itself was lost."""
        if observations and observations[-1]["action"] == "refund" and timed_out(observations[-1]["result"]):
            return {"action": "final", "answer": "it may have gone through", "citation": ""}
        return careful(task, observations)

    check = lab03.check_retry_policy(stops_at_any_timeout)
    verdict(check, False, "without looking", "look the order up first")
    assert not check.table.xs(True, level="timeout")["looked"].any()
    assert check.table.xs(False, level="timeout")["looked"].all()
    verdict(lab03.check_retry_policy(3), False, "a policy is a function")


def test_every_verdict_is_recorded_under_its_exercise():
    lab03.check_guard(None)  # untouched: not an attempt, not recorded
    assert load_progress("03")["exercises"] == {}
    lab03.check_guard(lambda call, state: None)
    lab03.check_retry_policy(lambda *args: None)
    lab03.check_mediation(lambda *args: None)
    assert set(load_progress("03")["exercises"]) == {"guard", "retry_policy", "mediation"}


# -- the "Try it" knob ----------------------------------------------------------------------------


def test_the_try_it_knob_changes_the_outcome_offline():
    from labkit import refunds as R

    def succeeded(defense, attack="refund-failed-again", place="help"):
        episode = R.run("r-ben-headphones", R.gullible, attack=attack, place=place, defenses=defense)
        return R.succeeded(episode.attack, episode.request, episode.shop, episode.ledger, episode.refunds)

    assert succeeded("provenance") and succeeded("confirmation") and succeeded("none")
    assert succeeded("idempotency")  # a second refund with a new key is not a retry
    assert not succeeded("mediation")
    assert not succeeded("provenance", attack="ignore-previous-redirect", place="note")


# -- wrong work that used to pass, and answers that used to end in no verdict (issues 20 and 21) ----



def test_mediation_checks_every_boundary_of_the_written_policy():
    def inclusive_window(call, state):
        """Off by one: refuses the window's last day."""
        order = state.shop.orders[call.order]
        if (state.shop.today - order.date).days >= state.shop.window_days:
            return "too old"
        return mediation(call, state)

    def thirty_days(call, state):
        """The shop's window written in as a number of its own."""
        order = state.shop.orders[call.order]
        if order.customer == state.request.customer and (state.shop.today - order.date).days <= 30:
            reason = mediation(call, state)
            return None if reason and "window" in reason else reason
        return mediation(call, state)

    def in_dollars(call, state):
        """Compares whole dollars, so one cent over the refundable gets through."""
        order = state.shop.orders[call.order]
        if call.amount // 100 > order.refundable // 100:
            return "more than the refundable amount"
        reason = mediation(call, state)
        return None if reason and "more than the refundable" in reason else reason

    verdict(lab03.check_mediation(inclusive_window), False, "exactly 30 days ago",
            "last day of the window is still inside")
    verdict(lab03.check_mediation(thirty_days), False, "12-day window", "state.shop.window_days")
    verdict(lab03.check_mediation(in_dollars), False, "one cent more than its refundable")


def test_labkits_own_authorise_handed_in_is_recognised():
    def delegates(call, state):
        refusal = authorise(state.shop, state.request.customer, call.order, call.amount, call.destination,
                            state.ledger)
        return None if refusal is None else refusal.reason

    for answer in (authorise, functools.partial(authorise), delegates):
        verdict(lab03.check_mediation(answer), False, "that is labkit's version", "write your own")
    verdict(lab03.check_guard(delegates), False, "that is labkit's version")
    lab03.check_mediation(delegates)
    assert load_progress("03")["exercises"]["mediation"]["payload"] is None  # never a class-round guard


def test_guards_that_hang_raise_labkits_error_or_answer_garbage_get_a_verdict(short_limit):
    def sleeps_once(call, state, slept=[]):  # noqa: B006 - the state of one learner's guard
        if not slept:
            slept.append(True)
            time.sleep(1.5)
        return mediation(call, state)

    def lab_error(call, state):
        raise LabError("not my fault")

    verdict(lab03.check_mediation(sleeps_once), False, "did not return within 0.2 s", "on r-ana-blender")
    verdict(lab03.check_guard(lambda call, state: time.sleep(1.5)), False, "did not return within 0.2 s")
    verdict(lab03.check_mediation(lab_error), False, "your guard raised LabError: not my fault",
            "on r-ana-blender", "at line", "return a reason instead")
    verdict(lab03.check_guard(lab_error), False, "your guard raised LabError")
    verdict(lab03.check_mediation(lambda call, state: numpy.array([1, 2])), False,
            "returned array([1, 2]) (ndarray)", "a str")
    verdict(lab03.check_mediation(lambda call, state: 10**400), False, "a number of about 401 digits")


def test_a_guard_that_prints_is_checked_and_its_output_cut(capsys):
    def chatty(call, state):
        print("checking", call)
        return mediation(call, state)

    check_ = lab03.check_mediation(chatty)
    verdict(check_, True)
    assert "your code printed" in check_.printed and len(check_.printed) < 1000
    assert capsys.readouterr().out == ""  # not one of the ~9,900 lines, the guard table's included
    assert load_progress("03")["exercises"]["mediation"]["payload"]["size"] == 9456


def test_exercise_1_refuses_format_specs_in_one_line():
    for goal in ("refund order {order} for {amount:.2f} to {destination}",
                 "refund order {order} for {amount} to {destination} {user:>10000000}",
                 "refund order {order!r} for {amount} to {destination}"):
        check_ = lab03.check_intent_attack({**INTENT, "goal": goal})
        verdict(check_, False, "field 'goal'", "format spec")
    verdict(lab03.check_intent_attack({**INTENT, "goal": "refund order {order.__class__}"}), False,
            "unknown placeholder")
    verdict(lab03.check_intent_attack({**INTENT, "id": numpy.array([1, 2])}), False, "only JSON data")
    verdict(lab03.check_intent_attack({**INTENT, "goal": "x" * 10**6}), False, "field 'goal'")
    verdict(lab03.check_intent_attack(INTENT, request=["r-dev-planter"]), False, "request must be")


def test_attack_goals_are_filled_as_text_never_as_format_strings():
    lab = refund_lab()
    request = lab.request("r-dev-planter")
    templates = load_templates(lab.shop.folder / "templates.json")
    attack = attack_from(INTENT, templates, lab.shop)
    braces = dataclasses.replace(attack, goal="{{literal}} refund order {order} for {amount}")
    assert goal_text(braces, request, lab.shop) == "{literal} refund order o-1008 for $30.00"
    with pytest.raises(FixtureError, match="format spec"):
        attack_from({**INTENT, "goal": "{user:>10000000}"}, templates, lab.shop)
    with pytest.raises(FixtureError, match="more than 12"):
        attack_from({**INTENT, "goal": "{user}" * 13}, templates, lab.shop)


def looks_then_claims_paid(task, observations):
    """Looks the order up after a timeout, then says "refunded" without reading its refunds."""
    if observations and observations[-1]["action"] == "refund" and timed_out(observations[-1]["result"]):
        return {"action": "lookup_order", "order_id": task.order}
    if len(observations) > 4 and observations[-1]["action"] == "lookup_order":
        return {"action": "final", "answer": "the refund went through", "citation": ""}
    return careful(task, observations)


def looks_then_always_retries(task, observations):
    """Looks the order up after a timeout, then retries whatever the lookup showed."""
    if observations and observations[-1]["action"] == "refund" and timed_out(observations[-1]["result"]):
        return {"action": "lookup_order", "order_id": task.order}
    return careful(task, observations)


def test_exercise_3_the_lookup_must_decide():
    verdict(lab03.check_retry_policy(looks_then_claims_paid), False, "times out before paying",
            "no money moved", "retry the same refund")
    check_ = lab03.check_retry_policy(looks_then_always_retries)
    verdict(check_, False, "retried after the lookup showed the refund paid", "tool limit")
    assert "tool_limit" in set(check_.table["stop"])


def test_exercise_3_policies_that_return_nothing_or_garbage_hang_or_raise(short_limit):
    verdict(lab03.check_retry_policy(lambda task, observations: None), False, "on r-ana-blender",
            "not one the runtime can run", "return a dict")
    verdict(lab03.check_retry_policy(lambda task, observations: "lookup_order"), False,
            "not one the runtime can run")
    verdict(lab03.check_retry_policy(lambda task, observations: numpy.zeros(3)), False,
            "not one the runtime can run")

    def lab_error(task, observations):
        raise LabError("replay miss")

    def sleeps_once(task, observations, slept=[]):  # noqa: B006 - the state of one learner's policy
        if not slept:
            slept.append(True)
            time.sleep(1.5)
        return look_before_retrying(task, observations)

    verdict(lab03.check_retry_policy(lab_error), False, "raised LabError: replay miss", "at line")
    verdict(lab03.check_retry_policy(sleeps_once), False, "did not return within 0.2 s on r-ana-blender")
