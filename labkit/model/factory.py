"""Which backend `LABKIT_MODEL` names, and the recording wrapper `LABKIT_RECORD` adds.

`LABKIT_MODEL` values: ``replay`` (the default; every `<lab>.jsonl` and `<lab>-*.jsonl` in
`fixtures/trials/`), ``replay:<file>`` (one recording), ``local`` (SmolLM2 in-process),
``ollama:<tag>``, ``openai:<model>`` (any OpenAI-compatible server at `OPENAI_BASE_URL`,
`labkit.model.openai_chat`). `LABKIT_RECORD=<file>` wraps a live backend so every call is appended
to that file with its provenance (`labkit.model.record`).

Kept apart from `labkit.model.backend` (the types) so that the backends import only the
types and the factory imports the backends: no module of `labkit.model` imports one that
imports it back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from labkit.core.errors import LabError
from labkit.model.backend import Backend
from labkit.model.record import Recorder
from labkit.model.replay import ReplayBackend


def backend_from_env(environ: Mapping[str, str] | None = None) -> Backend:
    """The backend `LABKIT_MODEL` names (default ``replay``), recording if `LABKIT_RECORD`.

    Raises LabError for an unknown value, or for LABKIT_RECORD with a replay backend
    (recording replayed answers would present old replies as new measurements).
    """
    env = os.environ if environ is None else environ
    spec = env.get("LABKIT_MODEL", "").strip() or "replay"
    backend = parse_spec(spec, env)
    record = env.get("LABKIT_RECORD", "").strip()
    if record:
        if spec.startswith("replay"):
            raise LabError(
                f"LABKIT_RECORD={record} needs a live model, but LABKIT_MODEL is {spec!r}: "
                "set LABKIT_MODEL=local, ollama:<tag> or openai:<model>"
            )
        backend = Recorder(backend, record)
    return backend


def backend_for(parameter: str, environ: Mapping[str, str] | None = None) -> Backend:
    """The backend a lab's `LABKIT_MODEL` parameter (its papermill parameters cell) names.

    Left at ``replay``, the environment's `LABKIT_MODEL` decides, as `backend_from_env` does
    (a learner who set it before starting Jupyter gets that model); any other value wins.
    `labkit rerun` sets both to the same spec. Recording and errors as in `backend_from_env`.
    """
    env = os.environ if environ is None else environ
    if parameter.strip() in ("", "replay"):
        return backend_from_env(env)
    return backend_from_env({**env, "LABKIT_MODEL": parameter})


def backend_name(spec: str) -> str:
    """The name (`Backend.name`) of the backend `spec` selects, without constructing it: replay,
    local, the spec itself for ollama:<tag>, openai:<model> with the model name stripped.

    Raises LabError for a spec `parse_spec` refuses (an `openai:` without a model name included).
    """
    kind, _, arg = spec.partition(":")
    if kind == "replay":
        return "replay"
    if kind == "local" and not arg:
        return "local"
    if kind == "ollama" and arg:
        return spec
    if kind == "openai" and arg.strip():
        return f"openai:{arg.strip()}"
    if kind == "openai":
        raise LabError(f"{spec!r}: openai:<model> needs a model name, e.g. openai:smollm2")
    raise LabError(f"{spec!r} is not a backend: use replay, replay:<file>, local, ollama:<tag> "
                   "(e.g. ollama:qwen2.5:0.5b) or openai:<model>")


def parse_spec(spec: str, environ: Mapping[str, str] | None = None) -> Backend:
    """A backend from a `LABKIT_MODEL`-style spec: replay, replay:<file>, local, ollama:<tag>,
    openai:<model>.

    `environ` (default os.environ) supplies `OLLAMA_HOST` for an Ollama backend, and
    `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `LABKIT_OPENAI_SCHEMA` for an OpenAI-compatible one.
    """
    env = os.environ if environ is None else environ
    kind, _, arg = spec.partition(":")
    if kind == "replay":
        return ReplayBackend([arg] if arg else None)
    if kind == "local" and not arg:
        from labkit.model.local import LocalBackend  # imported when chosen: it loads numpy

        return LocalBackend()
    if kind == "ollama" and arg:
        from labkit.model.ollama import OllamaBackend  # imported when chosen, like local

        return OllamaBackend(arg, host=env.get("OLLAMA_HOST", "").strip() or None)
    if kind == "openai":
        from labkit.model.openai_chat import OpenAIBackend  # imported when chosen: it imports openai

        return OpenAIBackend(arg.strip(), environ=env)
    raise LabError(
        f"LABKIT_MODEL={spec!r} is not a backend: use replay (default), replay:<file>, "
        "local, ollama:<tag> (e.g. ollama:qwen2.5:0.5b) or openai:<model> (a server at OPENAI_BASE_URL)"
    )
