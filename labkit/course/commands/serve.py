"""`labkit serve`: the course's SmolLM2 for the room, behind llama-cpp-python's OpenAI-compatible server
(`python -m llama_cpp.server`, the local backend's model and context size), until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from labkit.core.errors import LabError
from labkit.course.argtypes import int_in
from labkit.course.commands import add_command

ALIAS = "smollm2"
PORT = 8000
_READY_S = 60.0  # the server loads the 98 MB model in about a second; give a slow disk a minute
_SERVER_MODULES = "llama_cpp fastapi uvicorn sse_starlette starlette_context pydantic_settings".split()


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "serve",
        handle,
        "Start llama-cpp-python's OpenAI-compatible server with the course's SmolLM2 model "
        "(needs `make model`), wait until it answers, and print what each learner sets: "
        "OPENAI_BASE_URL and LABKIT_MODEL=openai:smollm2. It answers one request at a time; "
        "for a room of 30 see the README's 'One model for the room'.",
    )
    add = parser.add_argument
    add("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0, the room's network)")
    add("--port", type=int_in(1, 65535), default=PORT, metavar="N", help=f"port (default {PORT})")
    threads = "CPU threads for the model (default: llama.cpp's)"
    add("--threads", type=int_in(1, 256), metavar="N", help=threads)
    gguf = "a GGUF file (default: the course's SmolLM2, as `local` finds it)"
    add("--model-path", metavar="FILE", help=gguf)


def require_server() -> None:
    """LabError naming what is missing when llama-cpp-python's server extra is not installed."""
    if missing := [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]:
        raise LabError(
            f"llama-cpp-python's server is not installed (missing {', '.join(missing)}): "
            "run `make model` on the machine that serves the room"
        )


def server_command(
    host: str, port: int, *, threads: int | None = None, model_path: str | Path | None = None
) -> list[str]:
    """The `python -m llama_cpp.server` command line `labkit serve` runs (the live test runs it too)."""
    from labkit.model.local import N_CTX, find_model_file

    path = Path(model_path) if model_path else find_model_file()
    if not path.is_file():
        raise LabError(f"--model-path {path}: no such file")
    options = {"--model": str(path), "--model_alias": ALIAS, "--n_ctx": str(N_CTX), "--host": host}
    options |= {"--port": str(port), "--verbose": "False"}
    if threads is not None:
        options |= {"--n_threads": str(threads), "--n_threads_batch": str(threads)}
    return [sys.executable, "-m", "llama_cpp.server", *(part for item in options.items() for part in item)]


def _addresses(host: str) -> list[str]:
    """The addresses learners can reach this server at: the one it listens on, or for 0.0.0.0
    this machine's outgoing address on the room's network (found without sending anything)."""
    if host not in ("0.0.0.0", "", "::"):
        return [host]
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe, contextlib.suppress(OSError):
        probe.connect(("10.255.255.255", 1))  # UDP connect: picks a route, sends no packet
        found.append(probe.getsockname()[0])
    return [address for address in found if not address.startswith("127.")] or ["127.0.0.1"]


def wait_until_ready(process: subprocess.Popen, url: str, limit: float = _READY_S) -> str:
    """The model id `url` (/v1/models) lists once it answers; LabError if the server exits or
    has not answered within `limit` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            status = f"llama_cpp.server exited with status {process.returncode}"
            raise LabError(f"{status} before answering (is the port taken? try --port)")
        try:
            with urllib.request.urlopen(url, timeout=1) as reply:
                listed = json.loads(reply.read(100_000))
            return ", ".join(str(m.get("id")) for m in listed.get("data", []))
        except (OSError, ValueError):
            time.sleep(0.2)
    raise LabError(f"llama_cpp.server did not answer {url} within {limit:g} s")


def warm_up(base_url: str, alias: str = ALIAS, timeout: float = 120.0) -> None:
    """Ask the server for one token, so that a measured or tested request does not pay its
    first-request warm-up (seconds on a busy machine)."""
    body = {"model": alias, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
    request = urllib.request.Request(f"{base_url}/chat/completions", json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        reply.read()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (released just before the server takes it)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def _stop_on(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP (a supervisor, a closed terminal): leave through `handle`'s cleanup,
    which stops the server too; the default action would leave it running, holding the port."""
    raise SystemExit(128 + signum)


def handle(args: argparse.Namespace) -> int:
    require_server()
    for name in ("SIGTERM", "SIGHUP"):  # Windows has no SIGHUP
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop_on)
    command = server_command(args.host, args.port, threads=args.threads, model_path=args.model_path)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, env={**os.environ, "PYTHONWARNINGS": "ignore"}, **quiet)
    try:
        local = "127.0.0.1" if args.host in ("0.0.0.0", "", "::") else args.host
        served = wait_until_ready(process, f"http://{local}:{args.port}/v1/models")
        print(f"serving {served} with llama_cpp.server on {args.host}:{args.port} (one request at a time)")
        print("each learner sets, in the notebook's parameters cell or before starting Jupyter:")
        for address in _addresses(args.host):
            print(f"    OPENAI_BASE_URL=http://{address}:{args.port}/v1   LABKIT_MODEL=openai:{ALIAS}")
        print("00_start_here.ipynb's setup check shows whether it answers. Ctrl-C stops it.", flush=True)
        return process.wait()
    except KeyboardInterrupt:
        print("stopping the server")
        return 0
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
