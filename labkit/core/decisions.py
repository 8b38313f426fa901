"""What a policy may propose: the tools it can call, and the check every decision passes.

A decision is one plain dict: ``{"action": "final", "answer": str, "citation": str}`` or
``{"action": <tool name>, <each argument the tool declares>}``. `validate_decision` accepts
exactly those and raises ValueError for anything else; the runtime turns that into an
`invalid_decision` stop.

What a tool sees is what was checked. Before validation every decision is rebuilt from
plain values of exact types (`plain_decision`): a dict subclass becomes the dict it holds,
a str, int or float subclass becomes the exact str, int or float it holds, whatever its
`__eq__`, `__hash__` or `__str__` say. Validation then accepts only exact types, and the
trace and the tools get the rebuilt copy, never the policy's own object. A number a
decision carries is an int or float from -MAX_NUMBER to MAX_NUMBER (2**53, the largest
range in which a float holds every int exactly): 10**400, NaN and infinities are an
`invalid_decision`, not an OverflowError.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from labkit.core.text import shorten

MAX_VALUE_LENGTH = 2000  # the longest string argument a decision may carry
MAX_NUMBER = 2**53  # bound of every number in a decision, a reported usage or a budget
FINAL_FIELDS = ("answer", "citation")

# A policy: called with the task and the observations so far, it returns one decision.
Decide = Callable[[Any, list[dict[str, Any]]], Any]


@dataclass(frozen=True)
class Tool:
    """One action a policy may propose.

    `params` maps each argument name to its kind: ``"str"`` (an exact str, non-blank, at
    most 2,000 characters) or ``"number"`` (an exact int or float from -MAX_NUMBER to
    MAX_NUMBER: finite, not a bool). Every argument is required and no other is accepted.
    `call(**args)` does the work; whatever it raises becomes an observation. If `source`
    is true, a result's `id` may later be cited.
    """

    name: str
    params: Mapping[str, str]
    call: Callable[..., Any]
    source: bool = False
    description: str = ""


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _shown(value: Any, limit: int = 60) -> str:
    """A short repr for an error message (a policy's key may be a megabyte long)."""
    return shorten(repr(value), limit)


def _exact(value: Any) -> Any:
    """A scalar as the exact str, int or float it holds; anything else unchanged.

    The base type's own method reads the stored value: a subclass's overrides of
    `__str__`, `__int__`, `__eq__` or `__hash__` are never called.
    """
    if type(value) in _SCALARS:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):  # bool is final: a subclass of int here is never a bool
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value  # a list, an object...: validation accepts none of them, so no tool sees it


def plain_decision(value: Any) -> Any:
    """`value` rebuilt from plain values of exact types: what validation and the tools see.

    A dict (or dict subclass) becomes a new plain dict of its stored items, each key an exact
    str and each str, int or float value the exact value it holds; a lone str, int or float
    likewise. Other values are returned as they are (validation refuses them all). Raises
    ValueError for a key that is not a string, or two keys that hold the same string.
    """
    if not isinstance(value, dict):
        return _exact(value)
    out: dict[str, Any] = {}
    for key, item in dict.items(value):  # the stored items, whatever a subclass's items() says
        if not isinstance(key, str):
            raise ValueError(f"decision keys must be strings, got {type(key).__name__}")
        key = _exact(key)
        if key in out:
            raise ValueError(f"duplicate key {_shown(key)} in the decision")
        out[key] = _exact(item)
    return out


def validate_decision(value: Any, tools: Mapping[str, Tool]) -> dict[str, Any]:
    """Return `value` if it is a well-formed action for `tools`; raise ValueError otherwise.

    Accepted shapes: ``{"action": "final", "answer": str, "citation": str}`` (answer not
    blank; citation may be empty) and ``{"action": <tool>, <each declared param>}``, built
    of exact types only (a plain dict, str keys, str/int/float values): `run` passes every
    decision through `plain_decision` first, so a subclass never gets this far there.
    """
    if type(value) is not dict:
        what = "a plain dict" if isinstance(value, dict) else "an object"
        raise ValueError(f"decision must be {what}, got {type(value).__name__}")
    action = value.get("action")
    if type(action) is str and action == "final":
        params: Mapping[str, str] = dict.fromkeys(FINAL_FIELDS, "str")
    elif type(action) is str and action in tools:
        params = tools[action].params
    else:
        known = ", ".join([*tools, "final"])
        raise ValueError(f"unknown action {_shown(action)} (known: {known})")
    _check_fields(action, set(value), {"action", *params})
    for name, kind in params.items():
        _check_argument(action, name, kind, value[name])
    return value


def _check_fields(action: str, keys: set[Any], expected: set[str]) -> None:
    """Every declared field present, and no other (ValueError naming both)."""
    if keys == expected:
        return
    missing, extra = sorted(expected - keys), sorted(keys - expected, key=repr)
    parts = [f"missing {missing}"] * bool(missing) + [f"unexpected {_shown(extra, 200)}"] * bool(extra)
    raise ValueError(f"{action}: " + ", ".join(parts))


def _check_argument(action: str, name: str, kind: str, arg: Any) -> None:
    """One argument of its declared kind (ValueError otherwise); a final's citation may be empty."""
    if kind == "number":
        # One range check refuses NaN and the infinities too (every comparison with NaN
        # is false); int against int is exact, so 10**400 never becomes a float.
        if not (type(arg) in (int, float) and -MAX_NUMBER <= arg <= MAX_NUMBER):
            raise ValueError(f"{action}: {name} must be a finite number from -2**53 to 2**53")
    elif type(arg) is not str or len(arg) > MAX_VALUE_LENGTH:
        raise ValueError(f"{action}: {name} must be a string of at most {MAX_VALUE_LENGTH} characters")
    elif not arg.strip() and not (action == "final" and name == "citation"):
        raise ValueError(f"{action}: {name} must not be blank")
