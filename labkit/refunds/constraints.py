"""The refund desk's state rules for the constraint ladder (`labkit.model.constraints`): at rung L2 an
order id, destination or product id must be one the episode has observed (observed is not trusted:
authorising stays the tool's business). No extractive final, so L3 is refused for this lab."""

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
