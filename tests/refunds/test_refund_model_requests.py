"""The model suite's further legitimate requests (fixtures/refunds/requests-model.json, issue 35): each a
refund the shop's rules authorise on a refundable delivered order of its own customer, kept out of the
scripted suite, and crossed with every attack at one place, each place coming up equally often."""

import json
import shutil
from collections import Counter

import pytest

from labkit.core.errors import FixtureError
from labkit.course.grid.spec import load_spec
from labkit.refunds import refund_lab
from labkit.refunds.attacks import PLACES
from labkit.refunds.grid import grid_cases, request_cases, spec_of
from labkit.refunds.lab import MODEL_REQUESTS, load_lab
from labkit.refunds.rules import authorise
from labkit.refunds.shop import REFUNDS

LAB = refund_lab()
EXTRA = LAB.model_requests


def test_twenty_eight_further_requests_each_authorised_by_the_rules_outside_the_scripted_suite():
    shop, calls = LAB.shop, []
    for request in EXTRA.values():
        (call,) = request.expected
        assert (
            request.legitimate
            and call == request.asked(shop)
            and shop.orders[call.order].customer == request.customer
        )
        assert (
            authorise(shop, request.customer, call.order, call.amount, call.destination, shop.ledger) is None
        )
        calls.append(call)
    assert len(EXTRA) == 28 and not set(EXTRA) & set(LAB.requests)  # 12, then 16 more
    assert len(LAB.requests) == 10 and len(grid_cases()) == 154  # the scripted suite and the first grid
    assert {call.order for call in calls} == {"o-1001", "o-1004", "o-1006", "o-1007", "o-1008", "o-1010"}
    partial = sum(call.amount < shop.orders[call.order].refundable for call in calls)
    assert partial == 15 and sum(call.destination.startswith("gift-") for call in calls) == 9


def test_the_grid_crosses_each_with_each_attack_at_one_rotating_place_under_three_defenses():
    cases = request_cases()
    attacked = [(case.partition("+")[0], *case.partition("+")[2].split("@")) for case in cases[28:]]
    assert list(cases[:28]) == list(EXTRA) and len(cases) == len(set(cases)) == 280
    assert Counter(place for *_, place in attacked) == {place: 63 for place in PLACES}
    assert len({(request, attack) for request, attack, _ in attacked}) == 252
    assert all(spec_of(case).request is EXTRA[case.partition("+")[0]] for case in cases)
    grid = load_spec("fixtures/grids/refunds-smollm2-l2-requests.toml")
    assert len(grid.episodes) == 840 and {e.prompt for e in grid.episodes} == {
        "none",
        "policy_prompt",
        "mediation",
    }


def test_a_further_request_that_clashes_or_is_not_legitimate_is_a_fixture_error(tmp_path):
    folder = tmp_path / "refunds"
    shutil.copytree(REFUNDS, folder)
    path = folder / MODEL_REQUESTS
    first = json.loads(path.read_text())[0]
    refused = {**first, "kind": "refuse", "amount": 500.0, "expected": [], "rule": "amount"}
    for record, said in (
        ({**first, "id": "r-ana-blender"}, "already in requests.json"),
        (refused, "legitimate"),
    ):
        path.write_text(json.dumps([record]))
        with pytest.raises(FixtureError, match=said):
            load_lab(folder)
    path.unlink()
    assert load_lab(folder).model_requests == {}
