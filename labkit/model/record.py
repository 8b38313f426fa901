"""Recorded trials, one JSON object per line: ``{"kind": "call", ...}`` (one model call, its reply or
error and provenance: `Recorder`), ``{"kind": "episode", ...}`` (one run and its outcome:
`labkit.decision_loop.trials`); without `rung`, made at L1. Each record is one `os.write` in append
mode: a crash leaves every finished line readable."""

import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from labkit.core.errors import FixtureError, LabError, ProviderError
from labkit.core.fixtures import parse_json, read_text, schema_error
from labkit.model.backend import Backend, ChatRequest, Reply, now, versions
from labkit.model.constraints import RUNGS

# The JSON schema of each kind of record; a count past 2**53 is no count and is refused.
_SCHEMAS = json.loads(Path(__file__).with_name("record_schemas.json").read_text(encoding="utf-8"))
for _schema in _SCHEMAS.values():  # the ladder's rungs are defined once, in constraints
    _schema["properties"]["rung"]["enum"] = list(RUNGS)
# Files read and validated, by (path, size, mtime): replay and evaluation reread them in a process.
_READ: dict[tuple[str, int, int], list[tuple[int, dict[str, Any]]]] = {}


def read_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record) of a trials file, each validated (else one FixtureError naming file, line,
    field); lines end at "\\n" only. An unchanged file's records are parsed once, shared: never modified.
    (serves: untrusted file — a recording)"""
    path = existing_trials(path)
    key = file_state(path)
    if key not in _READ:
        _READ[key] = list(_parse(path))
    yield from _READ[key]


def existing_trials(path: str | Path) -> Path:
    """`path` as a Path, or a FixtureError if no trials file is there (the one wording of that error).
    (serves: user — a path that is not there)"""
    if not Path(path).is_file():
        raise FixtureError(f"{path}: trials file not found")
    return Path(path)


def file_state(path: Path) -> tuple[str, int, int]:
    """(absolute path, size, mtime): a file that changed has another state, so what was read from it
    before is read again (the one key of every cache of file contents in the model seam). The path is
    not resolved: replay asks for every request, and resolving took most of that time; a file named two
    ways is at worst read twice."""
    stat = path.stat()
    return str(path.absolute()), stat.st_size, stat.st_mtime_ns


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
        try:  # a lab replays thousands of records: schema_error recognises the valid ones fast
            error = schema_error(_SCHEMAS[kind], record)
        except RecursionError:
            raise FixtureError(f"{path}: line {number} ({kind}): nested too deeply to validate") from None
        if error is not None:
            field = ".".join(map(str, error.absolute_path))
            where = f"field {field!r}: " if field else ""
            raise FixtureError(f"{path}: line {number} ({kind}): {where}{error.message}")
        yield number, record


class JsonlWriter:
    """Append complete JSON lines to a file: one `os.write` per record, O_APPEND."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.is_dir():  # serves: user — a recording's path
            raise LabError(f"{self.path}: folder {self.path.parent} does not exist")

    def write(self, record: Mapping[str, Any]) -> None:
        try:  # NaN would write a line that read_records refuses: refuse it here instead (serves: ours)
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError as error:
            raise LabError(f"{self.path}: cannot record {error}") from None
        try:
            data = (line + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (JSON can carry "\\ud800"): escape it
            data = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


class Recorder:
    """A backend that passes every call to `inner` and appends it to `path` labelled `run`. A
    ProviderError is recorded (a replay ends the same way) and re-raised; a LabError is not recorded."""

    def __init__(self, inner: Backend, path: str | Path, *, run: str | None = None):
        self.inner = inner
        self.name = inner.name
        self.writer = JsonlWriter(path)
        self.run = run

    def provenance(self) -> dict[str, Any]:
        return self.inner.provenance()  # each live backend looks its own up once

    def complete(self, request: ChatRequest) -> Reply:
        start = time.perf_counter()
        try:
            reply = self.inner.complete(request)
        except ProviderError as error:
            try:
                provenance = self.provenance()
            # serves: environment — the server is down for the lookup too: the call is still kept
            except (ProviderError, LabError) as failure:  # the lookup fails too (server down): keep the call
                provenance = {"backend": self.name, "versions": versions(), "unavailable": str(failure)}
            failed = Reply("", latency_s=time.perf_counter() - start)
            self._write(request, failed, provenance, {"error": str(error)})
            raise
        # What a backend learns only from the reply (the model the server names) joins the record.
        provenance = self.provenance() | dict(reply.extra.get("call_provenance", {}))
        self._write(request, reply, provenance, {"reply": reply.text, "finish_reason": reply.finish_reason})
        return reply

    def _write(self, request: ChatRequest, reply: Reply, provenance: dict, outcome: dict) -> None:
        self.writer.write(
            {
                "kind": "call",
                "lab": request.lab,
                "case": request.case,
                "trial": request.trial,
                "turn": request.turn,
                "rung": request.rung,
                "request": request.fingerprint(),
                "messages": list(request.messages),
                "options": request.options(),
                **({"run": self.run} if self.run else {}),
                **outcome,
                "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens},
                "latency_s": round(reply.latency_s, 6),
                "reused_tokens": reply.reused_tokens,
                "provenance": provenance | {"date": now()},
            }
        )
