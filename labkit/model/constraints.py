"""The constraint ladder: which decisions a model may emit at each turn, as a JSON schema.

A backend holds generation to the schema of the rung it is given; the runtime still
validates every decision (`labkit.core.runtime.validate_decision`), so a rung is a convenience
for the decoder, never the check. Four rungs:

- ``L0`` prompt only: no schema; the reply is parsed as JSON (the first JSON object in it).
- ``L1`` the static decision schema: one object shape per tool, plus ``final``
  (`labkit.model.schema.decision_schema`), the same at every turn.
- ``L2`` L1, with every id-like argument limited to values this episode has observed
  (`StateRules.slots`): for docuctl, `read` only of a page id a search returned, and a final
  citation only of such an id. A tool whose slot has no admissible value yet is left out
  of the schema for that turn (no search yet: no read).
- ``L3`` L2 plus an extractive final (`StateRules.finals`): the final answer must be the
  exact command of a page read in this episode, citing that page. Defined only for labs
  whose answers can be extracted (docuctl); asking it of another is a LabError.

`admissible_schema(tools, rung, rules, task, observations)` is a pure function of the tools,
the lab's rules and the episode's observations: the same state gives the same schema, so
backends can cache what they build from it, and replay can prove the recorded request was
the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.core.errors import LabError
from labkit.core.runtime import Tool
from labkit.core.text import shorten
from labkit.model.schema import MAX_CHARS, decision_schema

RUNGS = ("L0", "L1", "L2", "L3")
RUNG_NAMES = {
    "L0": "prompt only",
    "L1": "static schema",
    "L2": "observed ids",
    "L3": "observed ids + extractive final",
}
# Calls recorded before rungs existed were all made under the static schema.
DEFAULT_RUNG = "L1"

Observation = Mapping[str, Any]
# A slot's admissible values in this state: f(task, observations) -> values, in first-seen order.
Source = Callable[[Any, Sequence[Observation]], Sequence[str]]
# The extractive finals in this state: f(observations) -> [{"answer": ..., "citation": ...}].
Finals = Callable[[Sequence[Observation]], Sequence[Mapping[str, str]]]


@dataclass(frozen=True)
class StateRules:
    """How one lab's episode state limits decisions at L2 and L3.

    `slots` maps (tool, param) — the tool may be ``"final"`` — to the Source of its
    admissible values; params not named stay as the static schema has them. `finals` gives
    L3's exact final answers; None means the lab has no extractive final (L3 refused).
    """

    slots: Mapping[tuple[str, str], Source] = field(default_factory=dict)
    finals: Finals | None = None


def check_rung(rung: object, rules: StateRules | None = None) -> str:
    """`rung` if it is one of RUNGS that `rules` can serve; LabError naming the choices otherwise."""
    if rung not in RUNGS:
        raise LabError(f"unknown constraint rung {rung!r} (known: {', '.join(RUNGS)})")
    if rung in ("L2", "L3") and rules is None:
        raise LabError(f"rung {rung} needs the lab's state rules; this policy has none (use L0 or L1)")
    if rung == "L3" and rules is not None and rules.finals is None:
        raise LabError("rung L3 needs an extractive final, which this lab does not define (use L0-L2)")
    return str(rung)


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if isinstance(v, str)))


def admissible_schema(
    tools: Mapping[str, Tool],
    rung: str,
    rules: StateRules | None = None,
    task: Any = None,
    observations: Sequence[Observation] = (),
    *,
    max_chars: int | None = MAX_CHARS,
) -> dict[str, Any] | None:
    """The JSON schema of the decisions admissible at `rung` after `observations`; None at L0.

    L1 is `decision_schema(tools)` whatever the state. At L2/L3 each (tool, param) slot in
    `rules` becomes ``{"enum": [values observed]}``; a shape with an empty slot is dropped.
    At L3 the final shape is replaced by one exact ``{"const": ...}`` shape per extractive
    final, or dropped while there is none. Raises LabError for an unknown rung or one the
    rules cannot serve.
    """
    check_rung(rung, rules)
    if rung == "L0":
        return None
    static = decision_schema(tools, max_chars=max_chars)
    if rung == "L1":
        return static
    assert rules is not None  # check_rung guarantees it
    shapes = []
    for shape in static["anyOf"]:
        action = shape["properties"]["action"]["const"]
        if rung == "L3" and action == "final":
            continue
        properties = dict(shape["properties"])
        empty = False
        for name in list(properties):
            source = rules.slots.get((action, name))
            if source is None:
                continue
            values = _unique(source(task, observations))
            if not values:
                empty = True
                break
            properties[name] = {"enum": values}
        if not empty:
            shapes.append(shape | {"properties": properties})
    if rung == "L3":
        assert rules.finals is not None
        for final in rules.finals(observations):
            shapes.append(
                {
                    "type": "object",
                    "properties": {
                        "action": {"const": "final"},
                        "answer": {"const": final["answer"]},
                        "citation": {"const": final["citation"]},
                    },
                    "required": ["action", "answer", "citation"],
                    "additionalProperties": False,
                }
            )
    if not shapes:
        raise LabError(f"rung {rung}: no decision is admissible in this state (check the lab's state rules)")
    return {"anyOf": shapes}


# -- parsing at L0 ----------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def first_json_object(text: str) -> Any:
    """The first JSON object in free text (inside a code fence if there is one); ValueError if none.

    L0 has no grammar, so a model may wrap its object in prose or a fence; taking the first
    complete object is what a hand-written agent loop would do. The constrained rungs never
    need it: their replies are exactly one object, parsed strictly.
    """
    if not isinstance(text, str):
        raise ValueError("model reply is not text")
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(body) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(body, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        return value
    raise ValueError(f"no JSON object in the model's reply: {shorten(text, 80)!r}")
