"""The setup check of `00_start_here.ipynb` (`report()`): per row of _CHECKS, its status ("ok"; "FIX":
a lab needs it; "optional": a model backend not usable now), what was found, a one-line fix. It downloads
nothing, waits at most _TIMEOUT_S and names no folder of the machine; an optional backend is checked only
once chosen, so the committed notebook shows what a fresh install shows."""

import importlib.util
import os
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pandas as pd

from labkit.core.errors import LabError, ProviderError
from labkit.core.paths import CHECKOUT

_TIMEOUT_S = 0.5  # a server on this laptop or the room's answers in milliseconds
_PINNED = ("pandas", "numpy", "matplotlib")  # what the notebooks' checked tables were printed with
_INSTALL = "run `make lab` in the course folder (without make: see the README), then pick the kernel of .venv"
_ROOM_FIX = (
    "in a room, set the address the instructor gives (`labkit serve` prints it): "
    "OPENAI_BASE_URL=http://HOST:8000/v1 and LABKIT_MODEL=openai:smollm2"
)
_Row = tuple[str, str, str]  # status, found, fix


def python_version() -> _Row:
    ok = sys.version_info >= (3, 11)
    fix = "" if ok else "install Python 3.11+ and recreate .venv (`make clean lab`)"
    return ("ok" if ok else "FIX", ".".join(map(str, sys.version_info[:3])), fix)


def environment() -> _Row:
    path = CHECKOUT / "requirements.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    pins = dict(line.split("#")[0].strip().partition("==")[::2] for line in lines if "==" in line)
    wrong = []
    for name in _PINNED:
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "absent"
        if name in pins and have != pins[name].strip():
            wrong.append(f"{name} {have} (course: {pins[name].strip()})")
    found = "kernel: this checkout's .venv"
    if Path(sys.prefix).resolve() != (CHECKOUT / ".venv").resolve():
        found = f"kernel: {Path(sys.prefix).name!r}, not this checkout's .venv"
    if wrong:
        return ("FIX", f"{found}; {', '.join(wrong)}", _INSTALL)
    return ("ok", found + "; pandas, numpy, matplotlib as pinned", "")


def labkit_importable() -> _Row:
    import labkit

    folder = Path(labkit.__file__).resolve().parent
    where = "this checkout" if folder == CHECKOUT / "labkit" else "another folder, not this checkout"
    try:
        version = metadata.version("labkit")
    except metadata.PackageNotFoundError:
        return ("FIX", f"imported from {where}, but not installed", _INSTALL)
    return ("ok", f"labkit {version} from {where}", "")


def fixtures() -> _Row:
    from labkit.baseline.corpus import docuctl
    from labkit.refunds.lab import refund_lab

    corpus, lab = docuctl(), refund_lab()
    cases = f"lab 01-02: {len(corpus.cases)} + {len(corpus.adaptive_cases)} cases"
    return ("ok", f"{cases}; lab 03: {len(lab.requests)} requests, {len(lab.attacks)} attacks", "")


def recordings() -> _Row:
    from labkit.core.fixtures import parse_json
    from labkit.model.replay import TRIALS

    files = sorted(TRIALS.glob("*.jsonl"))
    if not files:
        return ("FIX", "none in fixtures/trials/", "restore them from git")
    lines = [line for path in files for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = sum(parse_json(line) is not None for line in lines)
    return ("ok", f"{len(files)} files, {lines:,} records", "")


def local_backend() -> _Row:
    from labkit.model.local import find_model_file

    try:
        find_model_file()
    except LabError:
        return ("optional", "not installed", "`make model` (16-17 minutes on 2 cores the first time)")
    if importlib.util.find_spec("llama_cpp") is None:
        return ("optional", "the model file is there, llama-cpp-python is not", "`make model`")
    return ("ok", "llama-cpp-python and the model file are installed", "")


def _chosen(kind: str) -> str | None:
    """The model LABKIT_MODEL=<kind>:<model> names, or None when it names another backend."""
    chosen, _, model = os.environ.get("LABKIT_MODEL", "").strip().partition(":")
    return model.strip() if chosen == kind else None


def ollama_backend(host: str | None = None, timeout: float = _TIMEOUT_S, tag: str | None = None) -> _Row:
    """Does an Ollama server answer at `host` (else OLLAMA_HOST, else Ollama's own default), asked as the
    ollama: backend asks it (its `ollama` client, its error messages), and has it pulled `tag` (by default
    the one LABKIT_MODEL=ollama:<tag> names)? "optional" with the fix when not (no lab needs one)."""
    from labkit.model.ollama import OllamaBackend

    tag = _chosen("ollama") if tag is None else tag
    backend = OllamaBackend(tag or "", host=host, timeout=timeout)
    try:
        names = [model.model for model in backend.call("tags", backend.client.list).models]
    except (ProviderError, LabError) as error:
        return ("optional", str(error)[:160], "start `ollama serve`, `ollama pull qwen2.5:0.5b`")
    served = f"Ollama at {backend.host}, serving {', '.join(names[:5]) or 'no model'}"
    if tag and not {tag, f"{tag}:latest"} & set(names):
        return ("optional", f"{served}, not {tag!r}"[:160], f"run `ollama pull {tag}`")
    return ("ok", served[:200], "")


def room_server(base_url: str | None = None, model: str | None = None, timeout: float = _TIMEOUT_S) -> _Row:
    """Does the OpenAI-compatible server at `OPENAI_BASE_URL` answer `/models`, asked as the openai:
    backend asks it (its `openai` client, its error messages), and serve the model
    `LABKIT_MODEL=openai:<model>` names? "optional" with the fix when not (no lab needs one)."""
    from labkit.model.openai_chat import OpenAIBackend

    base = (base_url or os.environ.get("OPENAI_BASE_URL", "")).strip().rstrip("/")
    model = _chosen("openai") if model is None else model
    if not base:
        return ("optional", "no room server set (OPENAI_BASE_URL is unset)", _ROOM_FIX)
    backend = OpenAIBackend(model or "", base_url=base, timeout=timeout)
    try:
        entries = list(backend.call("models", backend.client.models.list).data)
    except (ProviderError, LabError) as error:
        return (
            "optional",
            str(error)[:160],
            "ask the instructor whether it runs; OPENAI_BASE_URL ends in /v1",
        )
    ids = [str(entry.id) for entry in entries]
    served = ", ".join(ids[:5]) or "no model"
    by = " (llama-cpp-python)" if {entry.owned_by for entry in entries} == {"me"} else ""
    answers = f"{backend.base_url} answers{by}, serving {served}"
    if model and model not in ids:
        return (
            "optional",
            f"{answers}, not {model!r}"[:160],
            f"set LABKIT_MODEL=openai:{ids[0] if ids else '<model>'}",
        )
    chosen = f"; LABKIT_MODEL=openai:{model}" if model else ""
    if not model and ids:
        chosen = f"; set LABKIT_MODEL=openai:{ids[0]}"
    return ("ok", f"{answers}{chosen}"[:200], "")


def _if_chosen(
    check: Callable[[], _Row], backend: str, variable: str, setting: str, fix: str
) -> Callable[[], _Row]:
    """`check` once the learner chose `backend` (in LABKIT_MODEL) or set `variable`; else a row saying how."""
    unchecked = ("optional", f"not checked: no lab needs it; set {setting} to check it", f"to use it: {fix}")

    def row() -> _Row:
        chosen = _chosen(backend) is not None or (variable and os.environ.get(variable, "").strip())
        return check() if chosen else unchecked

    return row


def backend_usable(spec: str, timeout: float = _TIMEOUT_S) -> _Row:
    """Can the backend `spec` (a LABKIT_MODEL value) names be used now: ("ok", what answers, "") for a
    replay, an installed embedded model or a server that answers within `timeout` seconds and serves the
    model named; else (status, what was found, the fix). LabError for a spec that names no backend."""
    from labkit.model.factory import backend_name

    kind, _, model = backend_name(spec).partition(":")
    checks = {
        "replay": lambda: ("ok", "the recorded runs", ""),
        "local": local_backend,
        "ollama": lambda: ollama_backend(timeout=timeout, tag=model),
    }
    return checks.get(kind, lambda: room_server(model=model, timeout=timeout))()


def chosen_model() -> _Row:
    """Is `LABKIT_MODEL` a backend, and is the one it names usable now? Labs 02-04 use it, so a misspelt
    value, a server that does not answer or an embedded model not installed is a FIX row, not optional."""
    spec = os.environ.get("LABKIT_MODEL", "").strip() or "replay"
    try:
        status, found, fix = backend_usable(spec)
    except LabError as error:
        return ("FIX", str(error)[:200], "correct its spelling, or unset LABKIT_MODEL (the recorded runs)")
    if status != "ok":
        return (
            "FIX",
            f"LABKIT_MODEL={spec}, but {found}"[:200],
            f"{fix}; or unset LABKIT_MODEL (the recorded runs)",
        )
    return ("ok", f"LABKIT_MODEL={spec}: {found}"[:200], "")


def jupyter_news_off() -> _Row:
    from labkit.course.jupyter_settings import installed

    if installed():
        return ("ok", "override installed in this environment", "")
    return (
        "optional",
        "JupyterLab may ask about news on first open",
        "python -m labkit.course.jupyter_settings, then reload the page",
    )


_CHECKS: dict[str, Callable[[], _Row]] = {  # the rows of the table, in order
    "Python 3.11 or newer": python_version,
    "kernel is the course's environment": environment,
    "labkit importable": labkit_importable,
    "fixtures load": fixtures,
    "recorded model runs load": recordings,
    "model: replay (default)": lambda: ("ok", "answers from the recorded runs, offline", ""),
    "model: local (SmolLM2 in-process)": _if_chosen(
        local_backend, "local", "", "LABKIT_MODEL=local", "`make model` once (16-17 minutes on 2 cores)"
    ),
    "model: ollama:<tag>": _if_chosen(
        ollama_backend,
        "ollama",
        "OLLAMA_HOST",
        "LABKIT_MODEL=ollama:<tag>",
        "`ollama serve`, `ollama pull qwen2.5:0.5b`",
    ),
    "room model server (openai:)": room_server,
    "the model the labs use (LABKIT_MODEL)": chosen_model,
    "JupyterLab news popup off": jupyter_news_off,
}


def report(checks: dict[str, Callable[[], _Row]] = _CHECKS) -> pd.DataFrame:
    """Run every check; a check that fails unexpectedly is a FIX row naming the error, not a traceback."""
    rows = {}
    for name, check in checks.items():
        try:
            rows[name] = check()
        except Exception as error:  # noqa: BLE001 - the point of a setup check is to report, not to stop
            rows[name] = ("FIX", f"{type(error).__name__}: {error}"[:200], _INSTALL)
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["status", "found", "fix"])
    return table.rename_axis("check")


def ready(table: pd.DataFrame) -> str:
    """One sentence: every required check passed, or which did not."""
    failed = list(table.index[table["status"] == "FIX"])
    if failed:
        return f"not ready: fix {', '.join(failed)} (see the 'fix' column), then run this notebook again"
    return "ready: every required check passed"
