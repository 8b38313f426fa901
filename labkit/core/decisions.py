"""What a policy may propose: the tools it can call, and the check every decision passes.

A decision is one plain dict, ``{"action": "final", "answer": str, "citation": str}`` or ``{"action":
<tool name>, <each argument the tool declares>}``; adversarial (a prompt-injected model), it enters the
runtime as plain JSON data (`plain_decision`), and `validate_decision` refuses any other shape (ValueError).
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from labkit.core.text import shorten

_MAX_VALUE_LENGTH = 2000  # the longest string argument a decision may carry
MAX_NUMBER = 2**53  # bound of every number in a decision, a reported usage or a budget
FINAL_FIELDS = ("answer", "citation")

# A policy: called with the task and the observations so far, it returns one decision.
Decide = Callable[[Any, list[dict[str, Any]]], Any]


@dataclass(frozen=True)
class Tool:
    """One action a policy may propose. `params` maps each (required) argument to ``"str"``
    (non-blank, at most 2,000 characters) or ``"number"`` (an int or float within ±MAX_NUMBER, not
    a bool). What `call(**args)` raises becomes an observation; a `source` result's `id` is citable."""

    name: str
    params: Mapping[str, str]
    call: Callable[..., Any]
    source: bool = False
    description: str = ""


def plain_decision(value: Any) -> Any:
    """`value` after one JSON round trip, so a subclass's `__eq__` or `__hash__` is gone; ValueError
    for what JSON cannot write (an object, a set, 10**5000, a cycle)."""
    try:
        return json.loads(json.dumps(value))
    except Exception as error:  # noqa: BLE001 - whatever the object does, it is not plain data
        raise ValueError(f"decision is not plain JSON data ({shorten(str(error), 100)})") from None


def validate_decision(value: Any, tools: Mapping[str, Tool]) -> dict[str, Any]:
    """A copy of `value` if it is a well-formed action for `tools`, of exact types (a final's citation
    may be empty), else ValueError: what the policy does to `value` afterwards changes nothing."""
    if type(value) is not dict:
        raise ValueError(f"decision must be an object, got {type(value).__name__}")
    action = value.get("action")
    if type(action) is str and action == "final":
        params: Mapping[str, str] = dict.fromkeys(FINAL_FIELDS, "str")
    elif type(action) is str and action in tools:
        params = tools[action].params
    else:
        known = ", ".join([*tools, "final"])
        raise ValueError(f"unknown action {shorten(repr(action), 60)} (known: {known})")
    missing = sorted({*params} - set(value))
    extra = sorted(set(value) - {"action", *params}, key=repr)
    if missing or extra:
        parts = [f"missing {missing}"] if missing else []
        if extra:
            parts.append(f"unexpected {shorten(repr(extra), 200)}")
        raise ValueError(f"{action}: " + ", ".join(parts))
    for name, kind in params.items():
        _check_argument(action, name, kind, value[name])
    return dict(value)


def _check_argument(action: str, name: str, kind: str, arg: Any) -> None:
    """One argument of its declared kind (ValueError otherwise); a final's citation may be empty."""
    if kind == "number":
        # One range check refuses NaN and the infinities too; int against int is exact.
        if not (type(arg) in (int, float) and -MAX_NUMBER <= arg <= MAX_NUMBER):
            raise ValueError(f"{action}: {name} must be a finite number from -2**53 to 2**53")
    elif type(arg) is not str or len(arg) > _MAX_VALUE_LENGTH:
        raise ValueError(f"{action}: {name} must be a string of at most {_MAX_VALUE_LENGTH} characters")
    elif not arg.strip() and not (action == "final" and name == "citation"):
        raise ValueError(f"{action}: {name} must not be blank")
