"""The replay backend: answers from recorded trials (`trial_files`, or ``LABKIT_MODEL=replay:<file>``),
only to the questions recorded, keyed by (lab, case, trial, turn): a different rung or request fingerprint
is a `ReplayMiss` saying what differs, never a fallback; a recorded provider failure replays as the same
ProviderError. `run=label` answers only from that run's calls (a grid's file holds several models')."""

from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError, ProviderError
from labkit.core.fixtures import FIXTURES
from labkit.model.backend import ChatRequest, Reply, versions
from labkit.model.constraints import DEFAULT_RUNG
from labkit.model.record import existing_trials, file_state, read_records

TRIALS = FIXTURES / "trials"

_Key = tuple[str, str, int, int]


class ReplayMiss(LabError):
    """A request with no recorded reply: the message names lab, case, trial and turn (serves: ours)."""


def trial_files(lab: str, folder: Path = TRIALS) -> list[Path]:
    """The recordings replay reads for `lab`: `<lab>.jsonl` and `<lab>-*.jsonl`, sorted (none when there is
    no `folder`). The folder is listed again only when its mtime moved (a file added, removed or renamed
    there): replay asks for every request, and listing took most of a replayed lab's overhead."""
    return list(_listing(folder, lab, folder.stat().st_mtime_ns if folder.is_dir() else 0))


@cache
def _listing(folder: Path, lab: str, changed: int) -> tuple[Path, ...]:
    return tuple(sorted({*folder.glob(f"{lab}.jsonl"), *folder.glob(f"{lab}-*.jsonl")}))


_CACHE: dict[tuple[tuple[str, int, int], ...], dict[_Key, list[dict[str, Any]]]] = {}


def _calls(files: Sequence[Path]) -> dict[_Key, list[dict[str, Any]]]:
    """The call records of `files` by key, indexed once per state (path, size, mtime) of the files."""
    state = tuple(file_state(path) for path in files)
    if state not in _CACHE:
        calls: dict[_Key, list[dict[str, Any]]] = {}
        for path in files:
            for number, record in read_records(path):
                if record["kind"] == "call":
                    key = (record["lab"], record["case"], record["trial"], record["turn"])
                    calls.setdefault(key, []).append(record | {"_where": f"{path.name}:{number}"})
        _CACHE[state] = calls
    return _CACHE[state]


def recorded_calls(lab: str) -> list[dict[str, Any]]:
    """Every recorded call of `lab` in its trial files, from the index replay itself reads (parsed once
    per state of the files)."""
    return [record for records in _calls(trial_files(lab)).values() for record in records]


def _difference(request: ChatRequest, record: dict[str, Any]) -> str:
    """What differs between a request and a recorded call with the same key (for ReplayMiss)."""
    for name, value in request.options().items():
        if record["options"].get(name) != value:
            return f"{name} is {value!r}, recorded {record['options'].get(name)!r}"
    recorded = record["messages"]
    for i, (new, old) in enumerate(zip(request.messages, recorded, strict=False)):
        if new != old:
            return f"message {i} ({new.get('role')}) differs from the recording"
    if len(request.messages) != len(recorded):
        return f"{len(request.messages)} messages, recorded {len(recorded)}"
    return "the decision schema differs (were the tools changed?)"


class ReplayBackend:
    """The default backend: each request answered with the reply recorded for it, never a model.

    `files`: the recordings to read (a lab's own `fixtures/trials/<lab>*.jsonl` when None; a path that is
    not there is refused when the backend is made); `run`: only the calls of that recorded run.
    `complete` returns the recorded reply, or raises `ReplayMiss` (one line) when no recording has
    one for the request's case, trial and turn, when it was recorded at another rung, or when the
    request differs from the one recorded (its messages' fingerprint): a replay never answers a
    question it was not asked."""

    name = "replay"

    def __init__(self, files: Iterable[str | Path] | None = None, *, run: str | None = None):
        self.files = None if files is None else [existing_trials(f) for f in files]
        self.run = run

    def provenance(self) -> dict[str, Any]:
        """What made the replies: this backend's name and the installed versions."""
        return {"backend": self.name, "versions": versions()}

    def complete(self, request: ChatRequest) -> Reply:
        """The reply recorded for `request`; ReplayMiss saying which of the class's refusals applies."""
        lab = request.lab
        files = trial_files(lab) if self.files is None else self.files
        if not files:
            raise ReplayMiss(
                f"no recorded trials for lab {lab!r} in {TRIALS} (expected {lab}.jsonl "
                f"or {lab}-*.jsonl); record some with LABKIT_MODEL=local LABKIT_RECORD=<file>"
            )
        key = (request.lab, request.case, request.trial, request.turn)
        recorded = _calls(files).get(key)
        if recorded and self.run is not None:
            recorded = [r for r in recorded if r.get("run", self.run) == self.run]
        if not recorded:
            raise ReplayMiss(f"no recorded reply for {request.where()} in {', '.join(p.name for p in files)}")
        rungs = {r.get("rung", DEFAULT_RUNG) for r in recorded}
        if request.rung not in rungs:
            raise ReplayMiss(
                f"the recording for {request.where()} was made at rung {', '.join(sorted(rungs))}, "
                f"and this request is at rung {request.rung} ({recorded[0]['_where']}): "
                "a reply constrained one way is no answer to a request constrained another"
            )
        recorded = [r for r in recorded if r.get("rung", DEFAULT_RUNG) == request.rung]
        fingerprint = request.fingerprint()
        matches = [r for r in recorded if r["request"] == fingerprint]
        if not matches:
            raise ReplayMiss(
                f"the recording for {request.where()} was asked something else: "
                f"{_difference(request, recorded[0])} ({recorded[0]['_where']})"
            )
        answers = {(r.get("reply"), r.get("error")) for r in matches}
        if len(answers) > 1:
            raise ReplayMiss(
                f"{len(answers)} different recorded replies for {request.where()} "
                f"({', '.join(r['_where'] for r in matches)}): pin one file with "
                "LABKIT_MODEL=replay:<file>"
            )
        record = matches[0]
        if "error" in record:
            raise ProviderError(record["error"])
        return Reply(
            text=record["reply"],
            prompt_tokens=record["usage"]["prompt_tokens"],
            completion_tokens=record["usage"]["completion_tokens"],
            latency_s=record["latency_s"],
            finish_reason=record.get("finish_reason", "stop"),
            reused_tokens=record.get("reused_tokens"),
            extra={"recorded": record["_where"], "provenance": record["provenance"]},
        )
