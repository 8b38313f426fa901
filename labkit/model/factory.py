"""Which backend `LABKIT_MODEL` names: ``replay`` (the default: `fixtures/trials/`), ``replay:<file>``,
``local`` (SmolLM2 in-process), ``ollama:<tag>`` (at `OLLAMA_HOST`), ``openai:<model>`` (a server at
`OPENAI_BASE_URL`); a live backend is imported only when chosen. `LABKIT_RECORD=<file>` records it."""

import os
import re
from collections.abc import Mapping

from labkit.core.errors import LabError
from labkit.model.backend import Backend
from labkit.model.record import Recorder
from labkit.model.replay import ReplayBackend

BACKENDS = "replay (default), replay:<file>, local, ollama:<tag> or openai:<model> (at OPENAI_BASE_URL)"


def _kind(spec: str, shown: str) -> tuple[str, str]:
    """(kind, argument) of a spec; LabError naming the choices for one (`shown` so) that is no backend.
    (serves: user — a LABKIT_MODEL typo)"""
    kind, _, arg = spec.partition(":")
    if kind == "openai" and not arg.strip():
        raise LabError(f"{shown}: openai:<model> needs a model name, e.g. openai:smollm2")
    # An Ollama name is letters, digits and ._:/- ("qwen2.5:0.5b"); a space or a ";" is a typo, refused here,
    # before a grid starts, rather than as a 404 from the server after the first cell.
    if (
        kind in ("replay", "openai")
        or (kind == "local" and not arg)
        or (kind == "ollama" and re.fullmatch(r"[\w.:/-]+", arg))
    ):
        return kind, arg.strip() if kind == "openai" else arg
    raise LabError(f"{shown} is not a backend: use {BACKENDS}; e.g. ollama:qwen2.5:0.5b")


def is_live(model: str | Backend | None = None) -> bool:
    """True when `model` (a spec, a backend, or by default `LABKIT_MODEL`) is a live model, not a replay:
    the one answer to that question for the labs and the CLI."""
    name = os.environ.get("LABKIT_MODEL", "") if model is None else getattr(model, "name", model)
    return str(name).strip().split(":", 1)[0] not in ("", "replay")


def backend_name(spec: str) -> str:
    """The `Backend.name` of the backend `spec` selects, without constructing it."""
    kind, arg = _kind(spec, repr(spec))
    return f"{kind}:{arg}" if kind in ("ollama", "openai") else kind


def parse_spec(spec: str, environ: Mapping[str, str] | None = None) -> Backend:
    """The backend a `LABKIT_MODEL`-style spec names (`environ` supplies the servers' variables)."""
    env = os.environ if environ is None else environ
    kind, arg = _kind(spec, f"LABKIT_MODEL={spec!r}")
    if kind == "replay":
        return ReplayBackend([arg] if arg else None)
    if kind == "local":
        from labkit.model.local import LocalBackend

        return LocalBackend()
    if kind == "ollama":
        from labkit.model.ollama import OllamaBackend

        return OllamaBackend(arg, host=env.get("OLLAMA_HOST", "").strip() or None)
    from labkit.model.openai_chat import OpenAIBackend

    return OpenAIBackend(arg, environ=env)


def backend_from_env(environ: Mapping[str, str] | None = None) -> Backend:
    """The backend `LABKIT_MODEL` names (default ``replay``), recording to `LABKIT_RECORD` if set
    (refused for a replay: it would present old replies as new measurements)."""
    env = os.environ if environ is None else environ
    spec = env.get("LABKIT_MODEL", "").strip() or "replay"
    backend = parse_spec(spec, env)
    record = env.get("LABKIT_RECORD", "").strip()
    if record and not is_live(spec):  # serves: user — old replies are never recorded as new ones
        raise LabError(
            f"LABKIT_RECORD={record} needs a live model, but LABKIT_MODEL is {spec!r}: "
            "set LABKIT_MODEL=local, ollama:<tag> or openai:<model>"
        )
    return Recorder(backend, record) if record else backend


def backend_for(parameter: str, environ: Mapping[str, str] | None = None) -> Backend:
    """The backend a lab's `LABKIT_MODEL` parameter (papermill) names; at ``replay``, the environment's."""
    env = os.environ if environ is None else environ
    return backend_from_env(
        env if parameter.strip() in ("", "replay") else {**env, "LABKIT_MODEL": parameter}
    )
