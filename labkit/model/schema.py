"""The decision schema a model is held to, derived from the tools, and parsing its reply.

At rung L1 of the constraint ladder (the default; `labkit.model.constraints` has the
others) every live backend constrains generation with `decision_schema(tools)`: one JSON object
per turn, either a tool call ``{"action": <tool>, <each param>}`` or the final answer
``{"action": "final", "answer": str, "citation": str}``. A param of kind ``"str"`` becomes
a JSON string, ``"number"`` a JSON number. The runtime still validates what comes back
(`labkit.core.runtime.validate_decision`): a constrained decoder is a convenience, not a check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from labkit.core.runtime import FINAL_FIELDS, Tool
from labkit.core.text import shorten

# Caps the length of every string the model writes. Measured with SmolLM2-135M: without a
# cap a search query ran to 78 tokens of version-number-like noise ("2.0.0.2-b08-24-…") and
# the reply hit the token limit as unparseable JSON. With a cap a string must close, so a
# reply ends within the limit unless it is made of one-character tokens (digits); a reply
# that is still cut off is a counted invalid_decision.
MAX_CHARS = 100

_KINDS = {"str": "string", "number": "number"}


def _param_schema(kind: str, max_chars: int | None) -> dict[str, Any]:
    if kind not in _KINDS:
        raise ValueError(f"unknown param kind {kind!r} (known: {', '.join(_KINDS)})")
    schema: dict[str, Any] = {"type": _KINDS[kind]}
    if kind == "str" and max_chars is not None:
        schema["maxLength"] = max_chars
    return schema


def _shape(action: str, params: Mapping[str, str], max_chars: int | None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "action": {"const": action},
            **{name: _param_schema(kind, max_chars) for name, kind in params.items()},
        },
        "required": ["action", *params],
        "additionalProperties": False,
    }


def decision_schema(tools: Mapping[str, Tool], *, max_chars: int | None = MAX_CHARS) -> dict[str, Any]:
    """The JSON schema of every decision `tools` allow: one object shape per tool, plus final.

    Properties are listed with ``action`` first, so a grammar built from the schema makes
    the model commit to the action before its arguments. Raises ValueError for a tool
    named ``final`` or a param kind other than ``"str"``/``"number"``.
    """
    if "final" in tools:
        raise ValueError("a tool may not be called 'final': that name is the answer")
    shapes = [_shape(name, tool.params, max_chars) for name, tool in tools.items()]
    shapes.append(_shape("final", dict.fromkeys(FINAL_FIELDS, "str"), max_chars))
    return {"anyOf": shapes}


def parse_reply(text: str) -> Any:
    """The JSON value in a model's reply; ValueError (a counted invalid_decision) if none.

    Only the whole reply counts: no prose around it, no code fences. A constrained backend
    produces exactly that; a reply cut off at the token limit does not parse.
    """
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        raise ValueError(f"model reply is not JSON: {shorten(text, 80)!r}") from None
