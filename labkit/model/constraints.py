"""The constraint ladder: which decisions a model may emit at each turn, as a JSON schema; a convenience
for the decoder, never the check (the runtime validates every decision). ``L0`` prompt only (no schema);
``L1`` the static schema: one object per tool call ``{"action": <tool>, <each param>}`` or the final
``{"action": "final", "answer", "citation"}``; ``L2`` L1 with every id-like argument limited to values
this episode observed (a tool with none yet is left out); ``L3`` L2 plus an extractive final (the exact
command of a page read). `admissible_schema` is pure, so backends can cache what they build from it."""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labkit.core.errors import LabError
from labkit.core.runtime import FINAL_FIELDS, Tool

RUNGS = ("L0", "L1", "L2", "L3")
RUNG_NAMES = {
    "L0": "prompt only",
    "L1": "static schema",
    "L2": "observed ids",
    "L3": "observed ids + extractive final",
}
DEFAULT_RUNG = "L1"  # the rung of a call recorded before rungs existed

# Caps every string the model writes, so a string must close: without it SmolLM2-135M wrote a
# 78-token search query of version-number-like noise and hit the token limit as unparseable JSON.
MAX_CHARS = 100
_TYPES = {"str": "string", "number": "number"}

_Observation = Mapping[str, Any]
_Values = Callable[[Any, Sequence[_Observation]], Sequence[str]]  # (task, observations) -> values


@dataclass(frozen=True)
class StateRules:
    """How a lab's episode state limits decisions: `slots` maps (tool or "final", param) to its admissible
    values (L2); `finals(observations)` gives L3's exact [{"answer", "citation"}] (None: L3 refused)."""

    slots: Mapping[tuple[str, str], _Values] = field(default_factory=dict)
    finals: Callable[[Sequence[_Observation]], Sequence[Mapping[str, str]]] | None = None


def check_rung(rung: object, rules: StateRules | None = None) -> None:
    """LabError naming the choices unless `rung` is one of RUNGS that `rules` can serve (serves: user)."""
    if rung not in RUNGS:
        raise LabError(f"unknown constraint rung {rung!r} (known: {', '.join(RUNGS)})")
    if rung in ("L2", "L3") and rules is None:
        raise LabError(f"rung {rung} needs the lab's state rules; this policy has none (use L0 or L1)")
    if rung == "L3" and rules is not None and rules.finals is None:
        raise LabError("rung L3 needs an extractive final, which this lab does not define (use L0-L2)")


def _shape(action: str, params: Mapping[str, str], max_chars: int | None) -> dict[str, Any]:
    properties: dict[str, Any] = {"action": {"const": action}}
    for name, kind in params.items():
        length = {"maxLength": max_chars} if kind == "str" and max_chars is not None else {}
        properties[name] = {"type": _TYPES[kind], **length}
    return {
        "type": "object",
        "properties": properties,
        "required": ["action", *params],
        "additionalProperties": False,
    }


def decision_schema(tools: Mapping[str, Tool], *, max_chars: int | None = MAX_CHARS) -> dict[str, Any]:
    """The static schema (L1): one shape per tool, then final; ``action`` first, so a grammar
    commits to it first. ValueError for a tool named ``final``."""
    if "final" in tools:
        raise ValueError("a tool may not be called 'final': that name is the answer")  # serves: ours
    shapes = [_shape(name, tool.params, max_chars) for name, tool in tools.items()]
    return {"anyOf": [*shapes, _shape("final", dict.fromkeys(FINAL_FIELDS, "str"), max_chars)]}


def admissible_schema(
    tools: Mapping[str, Tool],
    rung: str,
    rules: StateRules | None = None,
    task: Any = None,
    observations: Sequence[_Observation] = (),
    *,
    max_chars: int | None = MAX_CHARS,
) -> dict[str, Any] | None:
    """The schema of the decisions admissible at `rung` after `observations` (None at L0): at L2/L3 a slot is
    ``{"enum": [values observed]}`` (none: shape dropped), at L3 a ``{"const"}`` final per extractive one."""
    check_rung(rung, rules)
    if rung == "L0":
        return None
    static = decision_schema(tools, max_chars=max_chars)
    if rung == "L1":
        return static
    shapes = []
    for shape in static["anyOf"]:
        action = shape["properties"]["action"]["const"]
        properties = dict(shape["properties"])
        for name in shape["properties"]:
            if (source := rules.slots.get((action, name))) is not None:
                values = source(task, observations)  # in first-seen order, once each
                properties[name] = {"enum": list(dict.fromkeys(v for v in values if isinstance(v, str)))}
        if not (rung == "L3" and action == "final") and all(p.get("enum", 1) for p in properties.values()):
            shapes.append(shape | {"properties": properties})
    if rung == "L3":  # the final shape with its fields fixed to each extractive final
        for final in rules.finals(observations):
            fixed = {name: {"const": final[name]} for name in ("answer", "citation")}
            shapes.append(static["anyOf"][-1] | {"properties": {"action": {"const": "final"}, **fixed}})
    if not shapes:  # serves: ours — the lab's state rules admit nothing
        raise LabError(f"rung {rung}: no decision is admissible in this state (check the lab's state rules)")
    return {"anyOf": shapes}
