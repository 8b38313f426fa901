"""One grid episode, run where the model is: in the client's process or on a Dask worker. It writes
nothing, so a worker that dies mid-episode leaves no trace."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

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


def _docuctl(episode: GridEpisode, recorder: Recorder, name: str) -> dict[str, Any]:
    from labkit.baseline.corpus import docuctl
    from labkit.decision_loop.model_policy import docuctl_policy
    from labkit.decision_loop.trials import episode_record, known_cases, limits_for, run_case

    corpus = docuctl()
    case = known_cases(corpus)[episode.case]  # lab 01's cases and lab 02's rewrite cases
    settings = {key: getattr(episode, key) for key in ("temperature", "trial", "max_tokens", "rung")}
    settings["seed"] = episode.seed + episode.trial
    policy = docuctl_policy(episode.prompt, backend=recorder, **settings)
    limits = limits_for(case, corpus)
    result = run_case(case, policy, limits=limits, budget_tokens=episode.budget_tokens, corpus=corpus)
    return episode_record(
        case,
        result,
        run_label=episode.label,
        backend=name,
        prompt=episode.prompt,
        limits=limits,
        budget_tokens=episode.budget_tokens,
        **settings,
    )


def run_episode(episode: GridEpisode) -> list[dict[str, Any]]:
    """Its call records, then its episode record, as `labkit trials` or the lab's recorder writes them.
    LabError for a setup mistake (as `labkit trials`); a provider failure ends in `provider_error`."""
    inner = backend(episode.model)
    recorder = Recorder(inner, os.devnull, run=episode.label)
    recorder.writer = lines = _Lines()  # type: ignore[assignment]  # records kept, not written
    options, seed = dict(episode.options), episode.seed + episode.trial
    common = {"model_name": inner.name, "label": episode.label, "temperature": episode.temperature}
    common |= {"seed": seed, "trial": episode.trial}
    if episode.lab == "refunds":
        from labkit.refunds.grid import refund_episode_record

        record = refund_episode_record(
            recorder, case=options["case"], defense=options["defense"], rung=episode.rung, **common
        )
    elif episode.lab == "routing":
        from labkit.routing.reviser_trials import variant_record

        record = variant_record(recorder, variant=options["variant"], control=options["control"], **common)
    else:
        record = _docuctl(episode, recorder, inner.name)
    return [*lines, record]
