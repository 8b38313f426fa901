"""One grid episode, run where the model is: in the client's process or on a Dask worker. It writes
nothing, so a worker that dies mid-episode leaves no trace."""

import os
from collections.abc import Mapping
from typing import Any

from labkit.course.grid.labs import grid_lab
from labkit.course.grid.spec import GridEpisode
from labkit.model.backend import Backend
from labkit.model.factory import parse_spec
from labkit.model.record import Recorder

# Keyed by OLLAMA_HOST too: an Ollama backend is bound to the host it was made for.
_BACKENDS: dict[tuple[str, str | None], Backend] = {}


def backend(model: str) -> Backend:
    """This process's backend for a model spec, made at the first use and kept."""
    key = (model, os.environ.get("OLLAMA_HOST"))
    if key not in _BACKENDS:
        _BACKENDS[key] = parse_spec(model)
    return _BACKENDS[key]


def provenance(model: str) -> dict[str, Any]:
    """The backend's provenance (loads the model): a LabError or ProviderError if it cannot serve."""
    return backend(model).provenance()


class _Lines(list):
    """A stand-in for the Recorder's file: keeps the records it is given, in order."""

    def write(self, record: Mapping[str, Any]) -> None:
        self.append(dict(record))


def run_episode(episode: GridEpisode) -> list[dict[str, Any]]:
    """Its call records, then its episode record (the lab's `record_episode`), as `labkit trials` or the
    lab's recorder writes them. LabError for a setup mistake (as `labkit trials`); a provider failure
    ends in `provider_error`."""
    inner = backend(episode.model)
    recorder = Recorder(inner, os.devnull, run=episode.label)
    recorder.writer = lines = _Lines()  # type: ignore[assignment]  # records kept, not written
    record = grid_lab(episode.lab).record_episode(recorder, episode, inner.name)
    return [*lines, record]
