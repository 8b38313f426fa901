"""What a model backend is asked (`ChatRequest`) and answers (`Reply`): the types every backend shares.

A backend raises `ProviderError` when it could not answer (a server down or slow, an HTTP error,
a body that is not a chat reply: the runtime counts `provider_error`) and `LabError` when the lab
is set up wrong (no model file, an unknown `LABKIT_MODEL`, a request never recorded).
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any, Protocol

from labkit.core.decisions import MAX_NUMBER
from labkit.core.errors import ProviderError

Message = dict[str, str]
TIMEOUT = 120.0  # seconds a server backend waits for each read of a call: a cold model load takes tens


@dataclass(frozen=True)
class ChatRequest:
    """One decision asked of a model: where (`lab`, `case`, `trial`, `turn`: the replay key) and what.

    `fingerprint()` hashes the messages, schema and options, so a replay proves it answers the
    question the live model was asked. `schema` is None at rung L0 (`labkit.model.constraints`).
    """

    lab: str
    case: str
    trial: int
    turn: int
    messages: tuple[Message, ...]
    schema: Mapping[str, Any] | None
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 128
    rung: str = "L1"

    def options(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of the messages, schema and options."""
        body = {"messages": list(self.messages), "schema": self.schema, "options": self.options()}
        text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        # surrogatepass: a reply may hold a lone surrogate (JSON can spell "\ud800").
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def where(self) -> str:
        return f"lab {self.lab!r}, case {self.case!r}, trial {self.trial}, turn {self.turn}"


@dataclass(frozen=True)
class Reply:
    """A backend's answer. `reused_tokens`: prompt tokens served from a cache, where it can tell."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str = "stop"
    reused_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def token_count(value: Any, what: str) -> int:
    """`value` if an int from 0 to MAX_NUMBER, else ProviderError "`what` <value>, not a token count"."""
    if type(value) is int and 0 <= value <= MAX_NUMBER:
        return value
    shown = f"{value}" if type(value) is int and abs(value) < 10**20 else type(value).__name__
    raise ProviderError(f"{what} {shown}, not a token count")


class Backend(Protocol):
    name: str

    def complete(self, request: ChatRequest) -> Reply: ...

    def provenance(self) -> dict[str, Any]: ...


def versions(*packages: str) -> dict[str, str]:
    """Installed versions of python, labkit and `packages` ("absent" when not installed)."""
    found = {"python": platform.python_version()}
    for name in ("labkit", *packages):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def now() -> str:
    """The current UTC time, ISO 8601 to the second: the `date` of a provenance record."""
    return datetime.now(UTC).isoformat(timespec="seconds")
