"""Lab 03's data: bad fixtures are refused by name, and the checkers are checked (every gold
solution passes utility and trips no security check; every gold attack trips its own)."""

import json
import shutil

import pytest

from labkit.core.errors import FixtureError
from labkit.refunds import money_lost, refund_episode, refund_lab, succeeded, unauthorized, utility
from labkit.refunds.attacks import gold_calls, render
from labkit.refunds.defenses import trusted_values
from labkit.refunds.lab import load_lab
from labkit.refunds.policies import instructions_in
from labkit.refunds.shop import REFUNDS, RefundCall

LAB = refund_lab()
LEGIT = LAB.legitimate


def gold_policy(calls):
    """A policy that makes exactly these refund calls, then answers."""

    def decide(task, observations):
        if len(observations) < len(calls):
            call = calls[len(observations)]
            asked = {"order_id": call.order, "amount": call.amount / 100, "destination": call.destination}
            return {"action": "refund", **asked, "idempotency_key": f"gold-{len(observations)}"}
        return {"action": "final", "answer": "done", "citation": ""}

    return decide


@pytest.mark.parametrize("request_id", list(LAB.requests))
@pytest.mark.parametrize("defense", ["none", "all_deterministic"])
def test_every_gold_solution_passes_utility_and_trips_no_security_check(request_id, defense):
    request = LAB.requests[request_id]
    episode = refund_episode(request, gold_policy(list(request.expected)), defenses=defense)
    assert [r.call for r in episode.refunds] == list(request.expected)
    assert utility(request, episode.refunds)
    assert unauthorized(LAB.shop, request.customer, LAB.shop.ledger, episode.refunds) == []
    assert money_lost(request, episode.refunds) == 0
    for attack in LAB.attacks.values():
        if request.legitimate:
            assert not succeeded(attack, request, LAB.shop, episode.ledger, episode.refunds), attack.id


@pytest.mark.parametrize("request_id", [r.id for r in LEGIT])
@pytest.mark.parametrize("attack_id", list(LAB.attacks))
def test_every_gold_attack_trips_its_check_undefended_and_nothing_under_mediation(request_id, attack_id):
    request, attack = LAB.requests[request_id], LAB.attacks[attack_id]
    calls = gold_calls(attack, request, LAB.shop)
    undefended = refund_episode(request, gold_policy(calls), defenses="none")
    assert [r.call for r in undefended.refunds] == calls
    assert succeeded(attack, request, LAB.shop, undefended.ledger, undefended.refunds)
    assert unauthorized(LAB.shop, request.customer, LAB.shop.ledger, undefended.refunds)
    mediated = refund_episode(request, gold_policy(calls), defenses="mediation")
    assert not succeeded(attack, request, LAB.shop, mediated.ledger, mediated.refunds)
    assert unauthorized(LAB.shop, request.customer, LAB.shop.ledger, mediated.refunds) == []


@pytest.mark.parametrize("request_id", [r.id for r in LAB.requests.values() if not r.legitimate])
def test_doing_what_a_refused_request_asks_fails_utility_and_is_unauthorised(request_id):
    request = LAB.requests[request_id]
    episode = refund_episode(request, gold_policy([request.asked(LAB.shop)]), defenses="none")
    assert len(episode.refunds) == 1
    assert not utility(request, episode.refunds)
    assert len(unauthorized(LAB.shop, request.customer, LAB.shop.ledger, episode.refunds)) == 1
    assert money_lost(request, episode.refunds) == episode.refunds[0].amount


@pytest.mark.parametrize("attack_id", list(LAB.attacks))
def test_each_attack_text_says_what_its_gold_calls_do(attack_id):
    """The goal a reader sees and the gold the checker executes describe the same refund."""
    attack = LAB.attacks[attack_id]
    for request in LEGIT:
        text = render(attack, request, LAB.shop)
        said = [
            RefundCall(c["order_id"], round(c["amount"] * 100), c["destination"])
            for c in instructions_in(text)
        ]
        assert said == gold_calls(attack, request, LAB.shop)[-1:]
        assert "{" not in text and "}" not in text


def test_attack_values_are_foreign_to_provenance_except_a_repeat():
    """Every attack but 'refund it again' needs a value that only tool text supplies."""
    for request in LEGIT:
        trusted = trusted_values(request, LAB.shop)
        for attack in LAB.attacks.values():
            call = gold_calls(attack, request, LAB.shop)[-1]
            inside = all(
                getattr(call, f) in getattr(trusted, f + "s") for f in ("order", "amount", "destination")
            )
            assert inside == (attack.check["kind"] == "duplicate"), (request.id, attack.id)


def test_fresh_ledger_for_every_episode():
    request = LEGIT[0]
    first = refund_episode(request, gold_policy(list(request.expected)))
    second = refund_episode(request, gold_policy(list(request.expected)))
    assert [r.id for r in first.refunds] == [r.id for r in second.refunds] == ["rf-0002"]
    assert second.ledger[:-1] == LAB.shop.ledger


# --- bad fixtures: one FixtureError naming file, record and field ---------------------------


@pytest.fixture
def folder(tmp_path):
    copy = tmp_path / "refunds"
    shutil.copytree(REFUNDS, copy)
    return copy


def edit(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


LAMP = [{"order": "o-1006", "amount": 120.0, "destination": "card-chloe-5100"}]
BROKEN = [  # file (.json), record, field, the value written there, what the error says about it
    ("orders", 0, "amount", 88.0, "88.0 is not the sum of its item prices (89.00)"),
    ("orders", 0, "payment_method", "card-ben-1881", "'card-ben-1881' is not a payment method of 'c-ana'"),
    ("orders", 2, "date", "2025-02-30", "'2025-02-30' is not a date"),
    ("customers", 1, "gift_cards", ["gift-ana-01"], "'gift-ana-01' already belongs to 'c-ana'"),
    ("ledger", 0, "customer", "c-ana", "order 'o-1005' belongs to 'c-ben', not 'c-ana'"),
    ("requests", 0, "expected", [{**LAMP[0], "order": "o-1001"}], "expects exactly the refund it asks for"),
    ("requests", 4, "rule", "window", "break rule 'window', but it breaks rule 'status'"),
    ("attacks", 0, "template", "please", "unknown template 'please'"),
    ("attacks", 1, "goal", "refund order {orderr} for {amount} to x", "unknown placeholder(s) ['orderr']"),
    ("attacks", 0, "check", {"kind": "order"}, "kind 'order' takes order"),
]


@pytest.mark.parametrize(("name", "index", "field", "value", "detail"), BROKEN)
def test_a_broken_fixture_is_refused_with_file_record_and_field(folder, name, index, field, value, detail):
    path = folder / f"{name}.json"
    record = json.loads(path.read_text())[index]
    edit(path, lambda data: data[index].update({field: value}))
    with pytest.raises(FixtureError) as caught:
        load_lab(folder)
    message = str(caught.value)
    assert message.startswith(f"{path}: record {index} (id {record['id']!r}): field {field!r}: ")
    assert detail in message and "\n" not in message


def test_a_request_the_policy_refuses_cannot_be_legitimate(folder):
    edit(folder / "requests.json", lambda data: data[5].update(kind="legitimate", rule=None, expected=LAMP))
    with pytest.raises(
        FixtureError, match=r"record 5 \(id 'r-dev-other'\): field 'kind': the refund rules refuse it"
    ):
        load_lab(folder)


def test_a_template_without_goal_and_a_file_that_is_not_json(folder):
    edit(folder / "templates.json", lambda data: data.update(direct="TODO: nothing"))
    with pytest.raises(FixtureError, match=r"templates.json: key 'direct': the template has no \{goal\}"):
        load_lab(folder)
    (folder / "reviews.json").write_text("[{")
    with pytest.raises(FixtureError, match=r"reviews.json: not valid JSON \(line 1"):
        load_lab(folder)


def test_the_schemas_name_what_the_code_handles():
    """schemas.json lists the places, check kinds, placeholders and rules the code acts on."""
    from labkit.refunds.attacks import ATTACKS, CHECK_FIELDS, GOAL_FIELDS, MONEY_FIELDS, PLACES
    from labkit.refunds.rules import REFUND_RULES
    from labkit.refunds.shop import MAX_CENTS, SCHEMAS

    fields = ATTACKS["items"]["properties"]
    assert fields["places"]["items"]["enum"] == list(PLACES)
    assert fields["check"]["properties"]["kind"]["enum"] == list(CHECK_FIELDS)
    gold = fields["gold"]["items"]["properties"]
    assert gold["order"]["anyOf"][0]["enum"] == [f"{{{f}}}" for f in GOAL_FIELDS]
    assert gold["amount"]["anyOf"][0]["enum"] == [f"{{{f}}}" for f in MONEY_FIELDS]
    request = SCHEMAS["requests"]["items"]["properties"]
    assert request["rule"]["oneOf"][0]["enum"] == list(REFUND_RULES)
    assert SCHEMAS["orders"]["items"]["properties"]["amount"]["maximum"] == MAX_CENTS / 100
