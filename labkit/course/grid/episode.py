"""One grid episode, run where the model is: in the client's process or on a Dask worker.

`run_episode(episode)` returns the episode's records, calls first, exactly as `labkit
trials` writes them for the same model, prompt, rung, temperature, seed, case and trial
(it calls the same functions: `docuctl_policy`, `run_case`, `episode_record`, and the
`Recorder`'s `call_record`s). It writes nothing: the client appends what it returns, so a
worker that dies mid-episode leaves no trace and its retry is recorded once.

Backends are kept per process, by spec (`backend()`): a worker loads its model at its
first episode and keeps it for every later one (the local backend's engine is itself one
per process; an Ollama backend keeps its client and provenance).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from labkit.baseline.corpus import docuctl
from labkit.course.grid.spec import Episode
from labkit.decision_loop.model_policy import DOCUCTL_LAB as LAB
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.trials import cases_of, episode_record, limits_for, run_case
from labkit.model.backend import Backend
from labkit.model.factory import parse_spec
from labkit.model.record import Recorder

Record = dict[str, Any]
# Keyed by OLLAMA_HOST too: an Ollama backend is bound to the host it was made for.
_BACKENDS: dict[tuple[str, str | None], Backend] = {}


def backend(model: str) -> Backend:
    """This process's backend for a model spec, made at the first use and kept."""
    key = (model, os.environ.get("OLLAMA_HOST"))
    if key not in _BACKENDS:
        _BACKENDS[key] = parse_spec(model)
    return _BACKENDS[key]


def provenance(model: str) -> Record:
    """The backend's provenance (loads the model): a LabError or ProviderError if it cannot serve."""
    return backend(model).provenance()


class _Lines:
    """A stand-in for the Recorder's file: keeps the records it is given, in order."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def write(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))


def run_episode(episode: Episode) -> list[Record]:
    """Run one episode; return its call records and then its episode record.

    Raises LabError for a setup mistake (an unrecorded replay request, a model the server
    does not have), as `labkit trials` does; a provider failure is an episode ending in
    `provider_error`, recorded like any other.
    """
    if episode.lab != LAB:
        return _lab_episode(episode)
    corpus = docuctl()
    case = next(c for c in cases_of("all", corpus) if c["id"] == episode.case)
    inner = backend(episode.model)
    recorder = Recorder(inner, os.devnull, run=episode.label)
    recorder.writer = lines = _Lines()  # type: ignore[assignment]  # records kept, not written
    policy = docuctl_policy(
        episode.prompt,
        backend=recorder,
        temperature=episode.temperature,
        seed=episode.seed + episode.trial,
        trial=episode.trial,
        max_tokens=episode.max_tokens,
        rung=episode.rung,
    )
    limits = limits_for(case, corpus)
    result = run_case(case, policy, limits=limits, budget_tokens=episode.budget_tokens, corpus=corpus)
    record = episode_record(
        case,
        result,
        run_label=episode.label,
        backend=inner.name,
        prompt=episode.prompt,
        rung=episode.rung,
        trial=episode.trial,
        temperature=float(episode.temperature),
        seed=episode.seed + episode.trial,
        max_tokens=episode.max_tokens,
        limits=limits,
        budget_tokens=episode.budget_tokens,
    )
    return [*lines.records, record]


def _lab_episode(episode: Any) -> list[Record]:
    """A refunds or routing episode (`labkit.course.grid.labs`): its calls, then its episode record."""
    from labkit.course.grid.labs import run_lab_episode

    inner = backend(episode.model)
    recorder = Recorder(inner, os.devnull, run=episode.label)
    recorder.writer = lines = _Lines()  # type: ignore[assignment]  # records kept, not written
    record = run_lab_episode(episode, recorder, inner.name)
    return [*lines.records, record]
