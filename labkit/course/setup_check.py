"""The setup check of `00_start_here.ipynb`: one row per thing a lab needs, with a one-line fix.

`report()` returns a DataFrame: check, status ("ok", "FIX" for something a lab needs,
"optional" for a model backend that is not usable right now), what was found, and what to do.
Every check is bounded: nothing here downloads, builds or waits more than `OLLAMA_TIMEOUT`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import urllib.request
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pandas as pd

from labkit.core.paths import CHECKOUT

OLLAMA_TIMEOUT = 0.5  # seconds: a server on this laptop or the room's answers in milliseconds
# The versions the notebooks' checked outputs were made with (pandas' table repr above all).
PINNED = ("pandas", "numpy", "matplotlib")
INSTALL = "run `make lab` in the course folder (without make: see the README), then pick the kernel of .venv"

Row = tuple[str, str, str, str]  # check, status, found, fix


def _pins() -> dict[str, str]:
    """name -> version pinned in the checkout's requirements.txt (empty if there is none)."""
    path = CHECKOUT / "requirements.txt"
    if not path.is_file():
        return {}
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            pins[name.lower()] = version.strip()
    return pins


def python_version() -> Row:
    found = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11)
    return ("Python 3.11 or newer", "ok" if ok else "FIX", found,
            "" if ok else "install Python 3.11+ and recreate .venv (`make clean lab`)")


def environment() -> Row:
    pins = _pins()
    wrong = []
    for name in PINNED:
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "absent"
        if name in pins and have != pins[name]:
            wrong.append(f"{name} {have} (course: {pins[name]})")
    found = f"kernel {sys.executable}"
    if wrong:
        return ("kernel is the course's environment", "FIX", f"{found}; {', '.join(wrong)}", INSTALL)
    return ("kernel is the course's environment", "ok", found + "; pandas, numpy, matplotlib as pinned", "")


def labkit_importable() -> Row:
    import labkit

    where = Path(labkit.__file__).resolve().parent
    try:
        version = metadata.version("labkit")
    except metadata.PackageNotFoundError:
        return ("labkit importable", "FIX", f"imported from {where}, but not installed", INSTALL)
    return ("labkit importable", "ok", f"labkit {version} from {where}", "")


def fixtures() -> Row:
    from labkit.baseline.corpus import docuctl
    from labkit.refunds.lab import refund_lab

    corpus, lab = docuctl(), refund_lab()
    return ("fixtures load", "ok",
            f"lab 01-02: {len(corpus.cases)} + {len(corpus.adaptive_cases)} cases; "
            f"lab 03: {len(lab.requests)} requests, {len(lab.attacks)} attacks", "")


def recordings() -> Row:
    from labkit.core.fixtures import parse_json
    from labkit.model.replay import TRIALS

    files = sorted(TRIALS.glob("*.jsonl"))
    lines = sum(1 for path in files for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and parse_json(line) is not None)
    if not files:
        return ("recorded model runs load", "FIX", f"none in {TRIALS}",
                "restore fixtures/trials/ from the course's git")
    return ("recorded model runs load", "ok", f"{len(files)} files, {lines:,} records", "")


def replay_backend() -> Row:
    return ("model: replay (default)", "ok", "answers from the recorded runs, offline", "")


def local_backend() -> Row:
    from labkit.core.errors import LabError
    from labkit.model.local import find_model_file

    missing = []
    if importlib.util.find_spec("llama_cpp") is None:
        missing.append("llama-cpp-python")
    try:
        find_model_file()
    except LabError:
        missing.append("the SmolLM2 model file")
    if missing:
        return ("model: local (SmolLM2 in-process)", "optional", f"missing {' and '.join(missing)}",
                "`make model` (about 16-17 minutes on 2 cores the first time)")
    return ("model: local (SmolLM2 in-process)", "ok", "llama-cpp-python and the model file are installed",
            "")


def ollama_backend(host: str | None = None, timeout: float = OLLAMA_TIMEOUT) -> Row:
    host = (host or os.environ.get("OLLAMA_HOST", "").strip() or "http://127.0.0.1:11434").rstrip("/")
    if "://" not in host:
        host = f"http://{host}"
    try:
        with urllib.request.urlopen(f"{host}/api/version", timeout=timeout) as reply:
            version = json.loads(reply.read(10_000)).get("version", "?")
    except (OSError, ValueError, AttributeError) as error:
        reason = getattr(error, "reason", error)
        return ("model: ollama:<tag>", "optional", f"no server answers at {host} ({reason})"[:160],
                "start `ollama serve` and `ollama pull qwen2.5:0.5b`, or set OLLAMA_HOST")
    return ("model: ollama:<tag>", "ok", f"Ollama {version} at {host}", "")


ROOM_FIX = ("in a room, set the address the instructor gives (`labkit serve` prints it): "
            "OPENAI_BASE_URL=http://HOST:8000/v1 and LABKIT_MODEL=openai:smollm2")


def room_server(base_url: str | None = None, model: str | None = None,
                timeout: float = OLLAMA_TIMEOUT) -> Row:
    """The room's model server: does the OpenAI-compatible server at `OPENAI_BASE_URL` answer
    `/v1/models`, and does it serve the model `LABKIT_MODEL=openai:<model>` names?

    "optional" when none is set, none answers, or it lacks the model (no lab needs one), with the
    fix; "ok" naming the server and its models. Waits at most `timeout` seconds; sends no key.
    """
    name = "room model server (openai:)"
    base = (base_url or os.environ.get("OPENAI_BASE_URL", "")).strip().rstrip("/")
    if model is None:
        kind, _, arg = os.environ.get("LABKIT_MODEL", "").strip().partition(":")
        model = arg.strip() if kind == "openai" else None
    if not base:
        return (name, "optional", "no room server set (OPENAI_BASE_URL is unset)", ROOM_FIX)
    if "://" not in base:
        base = f"http://{base}"
    try:
        with urllib.request.urlopen(f"{base}/models", timeout=timeout) as reply:
            listed = json.loads(reply.read(100_000))
        entries = listed.get("data") if isinstance(listed, dict) else None
        if not isinstance(entries, list):
            raise ValueError("its /models answer is not a model list")
        ids = [str(entry.get("id")) for entry in entries if isinstance(entry, dict)]
        owners = sorted({str(entry.get("owned_by")) for entry in entries if isinstance(entry, dict)})
    except (OSError, ValueError, AttributeError) as error:
        reason = getattr(error, "reason", error)
        return (name, "optional", f"no model server answers at {base} ({reason})"[:160],
                "ask the instructor whether the room's server runs; check OPENAI_BASE_URL (it ends in /v1)")
    served = ", ".join(ids[:5]) or "no model"
    by = " (llama-cpp-python)" if owners == ["me"] else ""
    if model is not None and model not in ids:
        return (name, "optional", f"{base} answers{by}, serving {served}, not {model!r}"[:160],
                f"set LABKIT_MODEL=openai:{ids[0] if ids else '<model>'}")
    chosen = f"; LABKIT_MODEL=openai:{model}" if model else ""
    if not model and ids:
        chosen = f"; set LABKIT_MODEL=openai:{ids[0]}"
    return (name, "ok", f"{base} answers{by}, serving {served}{chosen}"[:200], "")


def jupyter_news_off() -> Row:
    from labkit.course.jupyter_settings import installed

    if installed():
        return ("JupyterLab news popup off", "ok", "override installed in this environment", "")
    return ("JupyterLab news popup off", "optional", "JupyterLab may ask about news on first open",
            "python -m labkit.course.jupyter_settings, then reload the page")


CHECKS: tuple[Callable[[], Row], ...] = (python_version, environment, labkit_importable, fixtures, recordings,
                                         replay_backend, local_backend, ollama_backend, room_server,
                                         jupyter_news_off)


def report(checks: tuple[Callable[[], Row], ...] = CHECKS) -> pd.DataFrame:
    """Run every check; a check that fails unexpectedly is a FIX row naming the error, not a traceback."""
    rows = []
    for check in checks:
        try:
            rows.append(check())
        except Exception as error:  # noqa: BLE001 - the point of a setup check is to report, not to stop
            name = check.__name__.replace("_", " ")
            rows.append((name, "FIX", f"{type(error).__name__}: {error}"[:200], INSTALL))
    return pd.DataFrame(rows, columns=["check", "status", "found", "fix"]).set_index("check")


def ready(table: pd.DataFrame) -> str:
    """One sentence: every required check passed, or which did not."""
    failed = list(table.index[table["status"] == "FIX"])
    if failed:
        return f"not ready: fix {', '.join(failed)} (see the 'fix' column), then run this notebook again"
    return "ready: every required check passed"
