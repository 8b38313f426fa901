"""The refund desk's state rules for the constraint ladder (`labkit.model.constraints`).

At rung L2 an id-like argument may only be a value this episode has *observed*: one that
appears in the authenticated request the model was shown or in any tool result so far —
order ids (``o-1001``), payment destinations (``card-…``, ``gift-…``) and product ids
(``p-…``). Observed is not trusted: text an injection planted in a note, message, review or
help page is observed too, so an attack can still steer the model to the attacker's order or
card. That is deliberate. A constraint makes a small model able to *act* (it can no longer
invent an order id that does not exist); whether the act is authorised stays the business of
the refund tool's deterministic defenses, never of the decoder.

The refund lab has no extractive final (a refund's answer is a sentence, not a value to
copy), so L3 is refused for it; the final's citation is always empty.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from labkit.model.constraints import StateRules

ORDER = re.compile(r"\bo-\d+\b")
DESTINATION = re.compile(r"\b(?:card|gift)(?:-[a-z0-9]+)+\b")
PRODUCT = re.compile(r"\bp(?:-[a-z0-9]+)+\b")


def _seen(pattern: re.Pattern[str], describe: Callable[[Any], str]) -> Callable[..., list[str]]:
    def source(task: Any, observations: Sequence[Mapping[str, Any]]) -> list[str]:
        texts = [describe(task)] if task is not None else []
        texts += [json.dumps(o.get("result"), ensure_ascii=False) for o in observations]
        return [match for text in texts for match in pattern.findall(text)]

    return source


def refund_rules(describe: Callable[[Any], str]) -> StateRules:
    """L2's slots for the shop's tools; `describe(task)` is the request text the model is shown."""
    orders, destinations = _seen(ORDER, describe), _seen(DESTINATION, describe)
    return StateRules(
        slots={
            ("lookup_order", "order_id"): orders,
            ("refund", "order_id"): orders,
            ("refund", "destination"): destinations,
            ("read_reviews", "product"): _seen(PRODUCT, describe),
            ("final", "citation"): lambda task, observations: [""],
        }
    )
