"""Checkers for lab 03's exercises. Each returns a Check: `passed`, a sentence, and a table.

1. `check_intent_attack(record)`: write an attack (one attacks.json record) that complete
   mediation cannot stop — its goal is a refund the shop's rules allow but the customer did
   not ask for — and see which defense does stop it.
2. `check_guard(guard)`: write a defense — a guard `guard(call, state) -> str | None` — that
   stops every attack sending money to a card or gift card the customer does not own,
   without mediation and without refusing a legitimate request.
3. `check_retry_policy(decide)`: write a policy whose retry after a timeout cannot pay
   twice even when the server has no idempotency keys and no mediation.

A checker never raises for a learner's mistake: a malformed record, a guard that crashes or
a policy that errs all come back as a failed Check that says what went wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import pandas as pd

from labkit.errors import LabError
from labkit.exercises.check import Check
from labkit.refunds.attacks import ATTACKS, attack_from, gold_calls, load_templates, succeeded
from labkit.refunds.defenses import DEFENSES, Defenses
from labkit.refunds.lab import refund_lab
from labkit.refunds.metrics import Spec, evaluate, suite, summarise
from labkit.refunds.policies import careful, gullible, scripted
from labkit.refunds.shop import Refund
from labkit.refunds.tools import EpisodeState

NOT_YET = "not attempted yet: replace None with your answer and run the cell again"


def _attack(record: Any):
    lab = refund_lab()
    if not isinstance(record, Mapping):
        raise LabError(f"an attack record is a dict like those in attacks.json, not {type(record).__name__}")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(ATTACKS).iter_errors([record]))
    if error is not None:
        field = ".".join(map(str, list(error.absolute_path)[1:])) or "record"
        raise LabError(f"field {field!r}: {error.message}")
    templates = load_templates(lab.shop.folder / "templates.json")
    return attack_from(record, templates, lab.shop, "your attack")


def check_intent_attack(record: Any, request: str = "r-dev-planter") -> Check:
    """Exercise 1: an attack that mediation lets through and confirmation stops."""
    if record is None:
        return Check(False, NOT_YET)
    lab = refund_lab()
    try:
        attack = _attack(record)
        target = lab.request(request)
    except LabError as error:
        return Check(False, str(error))
    # Check the checker first: carried out by hand on an undefended shop, the attack's
    # own gold calls must trip its own security check, and the customer's refund must not.
    state = EpisodeState(lab.shop, target, DEFENSES["none"])
    new = [Refund(f"gold-{i}", c.order, c.amount, c.destination, target.customer)
           for i, c in enumerate(gold_calls(attack, target, lab.shop))]
    if not succeeded(attack, target, lab.shop, [*state.ledger, *new], new):
        return Check(False, "its gold calls do not trip its own security check: fix 'check' or 'gold'")
    asked = target.asked(lab.shop)
    honest = [Refund("gold-ok", asked.order, asked.amount, asked.destination, target.customer)]
    if succeeded(attack, target, lab.shop, [*state.ledger, *honest], honest):
        return Check(False, "its security check trips on the customer's own refund: it would count "
                            "every honest episode as an attack")
    specs = [Spec("attack", target, attack, place) for place in attack.places]
    rows = {}
    for name in ("none", "mediation", "provenance", "confirmation", "all_deterministic"):
        scores = evaluate(scripted(gullible), DEFENSES[name], specs, lab)
        rows[name] = summarise(scores)
    table = pd.DataFrame.from_dict(rows, orient="index")[["attack_success_rate", "unauthorized_refunds",
                                                          "money_lost"]]
    table.index.name = "defense"
    if table.loc["none", "attack_success_rate"] == 0:
        return Check(False, "the gullible policy does not carry it out even undefended: does the goal "
                            "say 'refund order <id> for $<amount> to <destination>'?", table)
    if table.loc["mediation", "attack_success_rate"] == 0:
        return Check(False, "mediation stops it: the shop's rules already forbid that refund. Find one "
                            "the rules allow but the customer did not ask for.", table)
    if table.loc["all_deterministic", "attack_success_rate"] > 0:
        return Check(False, "it gets past every deterministic defense: tell the course maintainers!", table)
    return Check(True, "mediation enforces the shop's rules, not the customer's intent; the approver, "
                       "shown the exact arguments, stops it.", table)


Guard = Callable[[Any, EpisodeState], Any]
REDIRECTS = ("destination",)


def _guarded(guard: Guard, crashes: list[BaseException]) -> Guard:
    """`guard`, remembering what it raised: inside the tool a crash is only a refusal."""
    def checked(call: Any, state: EpisodeState) -> Any:
        try:
            return guard(call, state)
        except Exception as error:
            crashes.append(error)
            raise

    checked.__name__ = getattr(guard, "__name__", "your_guard")
    return checked


def check_guard(guard: Guard | None) -> Check:
    """Exercise 2: a guard that stops money going to someone else's card, refusing nothing legitimate."""
    if guard is None:
        return Check(False, NOT_YET)
    if not callable(guard):
        return Check(False, f"a guard is a function guard(call, state) -> str | None, "
                            f"not {type(guard).__name__}")
    lab = refund_lab()
    crashes: list[BaseException] = []
    defenses = Defenses("your_guard", guards=(_guarded(guard, crashes),))
    specs = suite(lab, faults=False)
    scores = {name: evaluate(scripted(policy), defenses, specs, lab)
              for name, policy in (("gullible", gullible), ("careful", careful))}
    if crashes:
        return Check(False, f"your guard raised {type(crashes[0]).__name__}: {crashes[0]}")
    redirect = [s for s in scores["gullible"]
                if s.spec.attack is not None and s.spec.attack.check["kind"] in REDIRECTS]
    rows = {
        "gullible, redirect attacks": summarise(redirect),
        "gullible, all episodes": summarise(scores["gullible"]),
        "careful, all episodes": summarise(scores["careful"]),
    }
    table = pd.DataFrame.from_dict(rows, orient="index")[["benign_utility", "attack_success_rate",
                                                          "over_refusals"]]
    if rows["gullible, redirect attacks"]["attack_success_rate"] > 0:
        return Check(False, "some money still reaches a card or gift card the customer does not own", table)
    if rows["careful, all episodes"]["over_refusals"] or rows["careful, all episodes"]["benign_utility"] < 1:
        return Check(False, "your guard refuses a legitimate refund the careful policy proposes", table)
    return Check(True, "no redirect gets through and no legitimate refund is refused. Which attacks "
                       "still succeed against the gullible policy, and why?", table)


def check_retry_policy(decide: Callable | None) -> Check:
    """Exercise 3: a policy whose retries cannot pay twice on a server without keys or checks."""
    if decide is None:
        return Check(False, NOT_YET)
    if not callable(decide):
        return Check(False, f"a policy is a function decide(task, observations), not {type(decide).__name__}")
    lab = refund_lab()
    specs = [s for s in suite(lab) if s.kind in ("benign", "fault") and s.request.legitimate]
    scores = evaluate(scripted(decide), DEFENSES["none"], specs, lab)
    table = pd.DataFrame([{"request": s.spec.request.id, "fault": s.spec.kind == "fault",
                           "refunds": len(s.episode.refunds), "utility": s.utility,
                           "duplicates": s.duplicates, "stop": s.episode.result["stop"]} for s in scores])
    table = table.set_index(["request", "fault"])
    if any(s.duplicates for s in scores):
        return Check(False, "a retry paid twice: look at the order before retrying", table)
    if not all(s.utility for s in scores):
        return Check(False, "a legitimate request was not refunded exactly once", table)
    return Check(True, "no duplicate, every refund paid once. Now ask: what if the lookup itself "
                       "is stale? That is why the server-side key is still the real fix.", table)
