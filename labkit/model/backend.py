"""What a model backend is asked and answers: the types every backend shares.

A backend has one job: given a `Request` (the messages, the decision schema, temperature,
seed and token limit, plus where in the experiment the request comes from), return a
`Reply` (the text and the usage it reports). Failures are of two kinds:

- `labkit.core.errors.ProviderError` (an OSError): the backend could not answer — a server that
  is down or slow, an HTTP error, a reply that is not a chat reply. The runtime counts it
  as the stop reason `provider_error`.
- `labkit.core.errors.LabError`: the lab is set up wrong — no model file, an unknown
  `LABKIT_MODEL`, a request that was never recorded. The runtime re-raises it.

Which backend a lab gets (`LABKIT_MODEL`) is `labkit.model.factory`'s job. This module imports
no backend, so every backend can import it.
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


@dataclass(frozen=True)
class Request:
    """One decision asked of a model, and where in an experiment it was asked.

    `lab`, `case`, `trial` and `turn` locate the request (the replay key); `messages`,
    `schema`, `temperature`, `seed` and `max_tokens` are what the model is asked, and
    `fingerprint()` hashes exactly those, so a replay can prove it answers the same
    question the live model was asked. `rung` is the constraint level the schema was built
    at (`labkit.model.constraints`); `schema` is None at ``L0`` (no constraint: free text).
    The rung is recorded beside the fingerprint, and replay refuses a recording made at
    another rung.
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
        return fingerprint(list(self.messages), self.schema, self.options())

    def where(self) -> str:
        return f"lab {self.lab!r}, case {self.case!r}, trial {self.trial}, turn {self.turn}"


def fingerprint(messages: list[Message], schema: Mapping[str, Any] | None, options: Mapping[str, Any]) -> str:
    body = json.dumps(
        {"messages": messages, "schema": schema, "options": options},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    # surrogatepass: a reply may hold a lone surrogate (JSON can spell "\\ud800"); any other
    # text encodes exactly as plain UTF-8, so no recorded fingerprint changes.
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Reply:
    """A backend's answer: the text and what the backend reports about producing it.

    `latency_s` is the backend's own wall time for the call (for a replay: the recorded
    live figure). `reused_tokens` is how many prompt tokens came from the backend's cache
    instead of being evaluated again, where the backend can tell (the local one can).
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str = "stop"
    reused_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def token_count(value: Any, what: str) -> int:
    """`value` if it is a token count a server may report (an int from 0 to MAX_NUMBER).

    Raises ProviderError "`what` <value>, not a token count" otherwise (`what` names the server
    and the field, e.g. "Ollama at http://host reported eval_count").
    """
    if not (type(value) is int and 0 <= value <= MAX_NUMBER):
        if type(value) is int:
            shown = str(value) if abs(value) < 10**20 else "an out-of-range number"
        else:
            shown = "None" if value is None else f"a {type(value).__name__}"
        raise ProviderError(f"{what} {shown}, not a token count")
    return value


class Backend(Protocol):
    """`name` says which backend this is; `complete` answers one request (see module doc)."""

    name: str

    def complete(self, request: Request) -> Reply: ...

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
