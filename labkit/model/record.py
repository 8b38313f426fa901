"""Recorded trials: the JSONL file format, an append-only writer, and a recording backend.

A trials file holds one JSON object per line, of two kinds:

- ``{"kind": "call", ...}`` — one model call: where it was asked (`lab`, `case`, `trial`,
  `turn`), what was asked (`rung`, the constraint level; `messages`, `options`, and
  `request`, the sha256 fingerprint of messages + schema + options), what came back
  (`reply` and `finish_reason`, or `error`),
  `usage`, `latency_s`, `reused_tokens`, and `provenance` (backend, model file sha256 or
  Ollama digest, the backend's settings, library versions, date). `Recorder` writes these.
- ``{"kind": "episode", ...}`` — one run of the runtime, written by `labkit.decision_loop.trials`:
  which run (label, prompt, rung, temperature, seed), the limits it ran under, and its outcome.
  Records written before rungs existed carry no `rung`: they were made at ``L1``.
  Evaluation replays the episode from the calls and checks it reproduces this outcome.

Lines are appended with a single `write` on a file opened in append mode, so a reader
sees only complete lines; an interrupted run leaves every finished call readable.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import fastjsonschema

from labkit.core.errors import FixtureError, LabError, ProviderError
from labkit.core.fixtures import parse_json, read_text, schema_error
from labkit.model.backend import Backend, Reply, Request, now, versions
from labkit.model.constraints import RUNGS

_COUNT = {"type": "integer", "minimum": 0, "maximum": 2**53}  # a larger count is no count: refused
_TEXT = {"type": "string"}
_ID = {"type": "string", "minLength": 1, "maxLength": 200}
_RUNG = {"enum": list(RUNGS)}
_USAGE = {
    "type": "object",
    "properties": {"prompt_tokens": _COUNT, "completion_tokens": _COUNT},
    "required": ["prompt_tokens", "completion_tokens"],
}
CALL = {
    "type": "object",
    "properties": {
        "kind": {"const": "call"},
        "lab": _ID,
        "case": _ID,
        "trial": _COUNT,
        "turn": {"type": "integer", "minimum": 1},
        "run": _TEXT,
        "rung": _RUNG,
        "request": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "messages": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"role": _TEXT, "content": _TEXT},
                "required": ["role", "content"],
                "additionalProperties": False,
            },
        },
        "options": {
            "type": "object",
            "properties": {
                "temperature": {"type": "number", "minimum": 0},
                "seed": {"type": "integer"},
                "max_tokens": {"type": "integer", "minimum": 1},
            },
            "required": ["temperature", "seed", "max_tokens"],
        },
        "reply": _TEXT,
        "error": _TEXT,
        "finish_reason": _TEXT,
        "usage": _USAGE,
        "latency_s": {"type": "number", "minimum": 0},
        "reused_tokens": {"type": ["integer", "null"], "minimum": 0},
        "provenance": {"type": "object", "required": ["backend", "date", "versions"]},
    },
    "required": [
        "kind",
        "lab",
        "case",
        "trial",
        "turn",
        "request",
        "messages",
        "options",
        "usage",
        "latency_s",
        "provenance",
    ],
    "oneOf": [{"required": ["reply"]}, {"required": ["error"]}],
}
EPISODE = {
    "type": "object",
    "properties": {
        "kind": {"const": "episode"},
        "run": {"type": "string", "minLength": 1},
        "lab": _ID,
        "case": _ID,
        "trial": _COUNT,
        "prompt": _ID,
        "rung": _RUNG,
        "backend": _TEXT,
        "temperature": {"type": "number", "minimum": 0},
        "seed": {"type": "integer"},
        "max_tokens": {"type": "integer", "minimum": 1},
        "limits": {
            "type": "object",
            "properties": {
                "max_turns": {"type": "integer", "minimum": 1, "maximum": 8},  # the runtime's ranges
                "max_tools": {"type": "integer", "minimum": 0, "maximum": 6},
                "budget_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 2**53},
            },
            "required": ["max_turns", "max_tools", "budget_tokens"],
        },
        "stop": _TEXT,
        "turns": _COUNT,
        "tool_calls": _COUNT,
        "answer": {"type": ["string", "null"]},
        "citation": {"type": ["string", "null"]},
        "passed": {"type": "boolean"},
        "usage": {"type": "object"},
        "elapsed_s": {"type": "number", "minimum": 0},
    },
    "required": [
        "kind",
        "run",
        "lab",
        "case",
        "trial",
        "prompt",
        "temperature",
        "seed",
        "max_tokens",
        "limits",
        "stop",
        "turns",
        "tool_calls",
        "passed",
    ],
}
_LINE_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
_SCHEMAS = {"call": CALL, "episode": EPISODE}
# Compiled once: fastjsonschema checks a valid record ~20x faster than jsonschema (measured on
# the committed recordings: 2.2 s of 3.0 s replaying them went to validation). A record it
# rejects is checked again by jsonschema, whose best_match names the field in the message;
# jsonschema is imported only then (its import costs about 1 s where rfc3987_syntax is
# installed, see labkit.core.fixtures).
_FAST = {kind: fastjsonschema.compile(schema) for kind, schema in _SCHEMAS.items()}
# Files already read and validated, by (path, size, mtime): replay and evaluation read the
# same recordings several times per process.
_READ: dict[tuple[str, int, int], list[tuple[int, dict[str, Any]]]] = {}


def _schema_error(kind: str, record: Any) -> Any:
    try:
        _FAST[kind](record)
        return None
    except fastjsonschema.JsonSchemaException:
        return schema_error(_SCHEMAS[kind], record)


def read_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record) for every line of a trials file, each validated.

    Raises FixtureError naming the file, the line and the field for a missing file, a line
    that is not JSON (such as a line cut off by a crash, or one `parse_json` refuses: NaN,
    a 5,000-digit number, nesting past the recursion limit), or a record outside its schema —
    before yielding anything. Lines end at "\\n" only, as `JsonlWriter` writes them
    (`str.splitlines` would also split inside a reply holding U+2028). A file read before,
    unchanged since (same size and mtime), is not parsed again: its records are shared
    between readers, who must not modify them.
    """
    path = Path(path)
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise FixtureError(f"{path}: trials file not found") from None
    except OSError as error:
        raise FixtureError(f"{path}: cannot read ({error})") from None
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _READ:
        _READ[key] = list(_parse(path))
    yield from _READ[key]


def _parse(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    lines = read_text(path, "trials file").split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = parse_json(line)
        except ValueError as error:
            raise FixtureError(f"{path}: line {number}: not a complete JSON record ({error})") from None
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind not in _SCHEMAS:
            raise FixtureError(f"{path}: line {number}: field 'kind' must be 'call' or 'episode'")
        try:
            error = _schema_error(kind, record)
        except RecursionError:
            raise FixtureError(f"{path}: line {number} ({kind}): nested too deeply to validate") from None
        if error is not None:
            field = ".".join(map(str, error.absolute_path))
            where = f"field {field!r}: " if field else ""
            raise FixtureError(f"{path}: line {number} ({kind}): {where}{error.message}")
        yield number, record


class JsonlWriter:
    """Append complete JSON lines to a file: one `os.write` per record, O_APPEND.

    A line holds no line break of any kind: json.dumps escapes "\\n", "\\r" and the other
    control characters, and the writer escapes U+0085, U+2028 and U+2029 too, which
    ensure_ascii=False leaves raw (the escape is equivalent JSON: they occur only in strings).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.is_dir():
            raise LabError(f"{self.path}: folder {self.path.parent} does not exist")

    def write(self, record: Mapping[str, Any]) -> None:
        try:  # NaN would write a line that read_records refuses: refuse it here instead
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError as error:
            raise LabError(f"{self.path}: cannot record {error}") from None
        line = line.translate(_LINE_BREAKS) + "\n"
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (JSON can carry "\\ud800"): escape it
            data = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def call_record(
    request: Request,
    provenance: Mapping[str, Any],
    *,
    reply: Reply | None = None,
    error: str | None = None,
    latency_s: float = 0.0,
    run: str | None = None,
) -> dict[str, Any]:
    """The JSON record of one call (see the module docstring)."""
    record: dict[str, Any] = {
        "kind": "call",
        "lab": request.lab,
        "case": request.case,
        "trial": request.trial,
        "turn": request.turn,
        "rung": request.rung,
        "request": request.fingerprint(),
        "messages": list(request.messages),
        "options": request.options(),
    }
    if run:
        record["run"] = run
    if reply is not None:
        record |= {
            "reply": reply.text,
            "finish_reason": reply.finish_reason,
            "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens},
            "latency_s": round(reply.latency_s, 6),
            "reused_tokens": reply.reused_tokens,
        }
    else:
        record |= {
            "error": error or "unknown error",
            "usage": {"prompt_tokens": 0, "completion_tokens": 0},
            "latency_s": round(latency_s, 6),
            "reused_tokens": None,
        }
    record["provenance"] = dict(provenance)
    return record


class Recorder:
    """A backend that passes every call to `inner` and appends it to `path`, failures too.

    A ProviderError is recorded (so a replay ends the same episode with the same
    `provider_error`) and re-raised. A LabError is not recorded: it is a setup mistake.
    `run` labels the calls (the trials command sets it to the run's label).
    """

    def __init__(self, inner: Backend, path: str | Path, *, run: str | None = None):
        self.inner = inner
        self.name = inner.name
        self.writer = JsonlWriter(path)
        self.run = run
        self._provenance: dict[str, Any] | None = None

    def provenance(self) -> dict[str, Any]:
        """The inner backend's provenance, looked up once (each record adds its own date)."""
        if self._provenance is None:
            self._provenance = self.inner.provenance()
        return self._provenance

    def complete(self, request: Request) -> Reply:
        start = time.perf_counter()
        try:
            reply = self.inner.complete(request)
        except ProviderError as error:
            self.writer.write(
                call_record(
                    request,
                    self._safe_provenance() | {"date": now()},
                    error=str(error),
                    latency_s=time.perf_counter() - start,
                    run=self.run,
                )
            )
            raise
        # What a backend learns only from the reply (the model id the server reports, its
        # system_fingerprint) comes in reply.extra["call_provenance"] and joins this call's record.
        per_call = reply.extra.get("call_provenance") if isinstance(reply.extra, Mapping) else None
        provenance = self.provenance() | (dict(per_call) if isinstance(per_call, Mapping) else {})
        self.writer.write(call_record(request, provenance | {"date": now()}, reply=reply, run=self.run))
        return reply

    def _safe_provenance(self) -> dict[str, Any]:
        # After a provider failure the provenance lookup itself may fail (Ollama down):
        # record what is known locally rather than lose the call.
        try:
            return self.provenance()
        except (ProviderError, LabError) as error:
            return {"backend": self.name, "versions": versions(), "unavailable": str(error)}
