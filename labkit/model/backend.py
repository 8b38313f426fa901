"""What a model backend is asked (`ChatRequest`) and answers (`Reply`). A backend raises
`ProviderError` when it could not answer (the runtime counts a `provider_error`) and `LabError` when
the lab is set up wrong (no model file, an unknown `LABKIT_MODEL`, a request never recorded)."""

import abc
import functools
import hashlib
import json
import os
import platform
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any, Protocol

from labkit.core.decisions import MAX_NUMBER
from labkit.core.errors import LabError, ProviderError
from labkit.core.text import shorten
from labkit.core.timeouts import TIMED_OUT, call_within

Message = dict[str, str]
TIMEOUT = 120.0  # seconds a server backend waits for its first call: a cold model load takes tens
# Every later call is one decision, held to the room's deadline (benchmarks/room.py): a server that
# trickles its reply byte by byte ends as a provider_error within it. A slower model's user raises it.
DECISION_TIMEOUT_ENV, DECISION_TIMEOUT = "LABKIT_DECISION_TIMEOUT", 15.0
PROBE_S = 2.0  # seconds a busy server has to answer "are you there?" (a hung one never does)


@dataclass(frozen=True)
class ChatRequest:
    """One decision asked of a model: where (`lab`, `case`, `trial`, `turn`: the replay key) and what
    (`schema` is None at rung L0). `fingerprint()` lets a replay prove it answers the question asked."""

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


class Backend(Protocol):
    name: str

    def complete(self, request: ChatRequest) -> Reply: ...

    def provenance(self) -> dict[str, Any]: ...


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def decision_timeout() -> float:
    """The seconds a server backend gives each call after its first: LABKIT_DECISION_TIMEOUT, else 15.
    (serves: user — a LABKIT_* value out of range is one line)"""
    value = os.environ.get(DECISION_TIMEOUT_ENV, "")
    try:
        seconds = float(value) if value else DECISION_TIMEOUT
    except ValueError:
        raise LabError(f"{DECISION_TIMEOUT_ENV}={value!r} is not a number of seconds") from None
    if not 0 < seconds <= 3600:
        raise LabError(f"{DECISION_TIMEOUT_ENV}={value!r}: give seconds from 0 to 3600")
    return seconds


class ServerBackend(abc.ABC):
    """A backend behind an HTTP server: `call(what, fn)` runs one client call, each way it fails one
    ProviderError naming the server (`where`): no whole answer within `timeout` (`_SLOW`, caught first),
    nothing listening (`_DOWN`), an HTTP error (`_STATUS`), not a reply (`_BAD`). A subclass sets these, what
    to check when nothing answers (`_unreachable`), the server's words (`_status_text`), `_fix` (LabError)."""

    # A subclass sets `where` (the server, as a message names it), `timeout` (seconds for a whole call;
    # after a first answer, at most `decision_timeout()`) and the client's exception types `_SLOW`,
    # `_DOWN`, `_STATUS` (with a `status_code`) and `_BAD`.
    _answered = False  # the first call may load the model: it gets the whole `timeout`

    @abc.abstractmethod
    def _unreachable(self, error: Exception) -> str:
        """What to check when nothing listens at `where` (after "cannot reach <where>")."""

    @abc.abstractmethod
    def _status_text(self, error: Any) -> str:
        """The server's own words in an HTTP error, short."""

    @abc.abstractmethod
    def _fix(self, what: str, status: int) -> str | None:
        """How to fix a setup mistake behind `status` (then a LabError), or None (a ProviderError)."""

    @abc.abstractmethod
    def _answers(self) -> bool:
        """Whether the server answers a cheap request within PROBE_S seconds now: then a decision past its
        deadline is queued behind other learners' (a room's server is busy), not lost to a hung server."""

    def _patience(self, limit: float) -> tuple[Callable[[float], float], list[bool]]:
        """For `call_within`: another `limit` seconds each time a call outlives its deadline while the
        server still answers, up to `timeout` in all, saying once on stderr that the learner waits; and
        the list that holds True once it did."""
        said: list[bool] = []

        def more(waited: float) -> float:
            if waited >= self.timeout or not self._answers():
                return 0.0
            if not said:
                print(f"labkit: waiting for {self.where}: it is busy with other requests", file=sys.stderr)
                said.append(True)
            return min(limit, self.timeout - waited)

        return more, said

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        """`fn()`, one call of this backend's client about `what` (chat, models, tags), within `timeout`;
        each way it fails one ProviderError naming the server, or a LabError saying how to fix it."""
        limit = min(self.timeout, decision_timeout()) if self._answered else self.timeout
        more, queued = self._patience(limit) if limit < self.timeout else (None, [])
        try:  # the client's `timeout` bounds each read, `limit` the whole call (longer while queued)
            reply = call_within(fn, (), limit, more)
        except self._SLOW:
            reply = TIMED_OUT
        except self._DOWN as error:  # serves: environment — a server down is a counted provider_error
            raise ProviderError(f"cannot reach {self.where} {self._unreachable(error)}") from None
        except self._STATUS as error:
            status, text = error.status_code, self._status_text(error)
            if (fix := self._fix(what, status)) is not None:  # serves: user — a setup mistake, and its fix
                raise LabError(f"{self.where} answered {what} with HTTP {status} ({text}): {fix}") from None
            raise ProviderError(f"{self.where} answered {what} with HTTP {status}: {text}") from None
        except self._BAD as error:  # serves: ours — a server's reply is data to check
            not_a_reply = f"something that is not a {what} reply ({first_line(error)})"
            raise ProviderError(f"{self.where} answered {what} with {not_a_reply}") from None
        if reply is TIMED_OUT and queued:  # serves: environment — a server too slow or too busy
            raise ProviderError(
                f"{self.where} answered other requests, but not this {what} in {self.timeout:g} s"
            )
        if reply is TIMED_OUT:
            later = f" (a slower model: set {DECISION_TIMEOUT_ENV}=60)" if limit < self.timeout else ""
            raise ProviderError(f"{self.where} did not answer {what} within {limit:g} s{later}")
        self._answered = True
        return reply

    def _count(self, value: Any, field: str) -> int:
        """A token count the server reported: an int from 0 to MAX_NUMBER, else a ProviderError.
        (serves: ours — reported counts are checked before they are counted)"""
        if type(value) is int and 0 <= value <= MAX_NUMBER:
            return value
        raise ProviderError(f"{self.where} reported {field} {shorten(repr(value), 40)}, not a token count")


@functools.cache
def versions(*packages: str) -> dict[str, str]:
    """Installed versions of python, labkit and `packages` ("absent" when not installed); shared."""
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
