"""`labkit serve`: the course's SmolLM2 for the room behind an OpenAI-compatible server, until Ctrl-C:
llama.cpp's `llama-server` (`make room-server`: N slots, continuous batching, N x the local backend's
context) or, where it is not built or with `--parallel 0`, llama-cpp-python's (one request at a time)."""

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from labkit.core.errors import LabError
from labkit.course.argtypes import int_in
from labkit.course.commands import add_command

ALIAS = "smollm2"
PORT = 8000
THREADS = max(1, (os.cpu_count() or 2) // 2)  # llama-cpp-python's default; all cores stall when any is busy
# `--parallel`'s default: a slot per learner of a room of 30, whatever the cores. benchmarks/room.py: with
# fewer slots, learners take each other's and re-read their conversations (30 on 8 slots: 113 prompt
# tokens a decision, 1.3 decisions/s; on 32: 54, 2.0). 32 slots of 2,048 tokens hold 1.6 GB.
PARALLEL = 32
_BUILT = Path(__file__).resolve().parents[3] / "build" / "llama-server"  # `make room-server`
_SLOTS = Path(tempfile.gettempdir()) / "labkit-serve-slots"  # llama-server's saved slot states
_READY_S = 60.0  # the server loads the 98 MB model in about a second; give a slow disk a minute
_SERVER_MODULES = "llama_cpp fastapi uvicorn sse_starlette starlette_context pydantic_settings".split()


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "serve",
        handle,
        "Serve the course's SmolLM2 (needs `make model`) with llama.cpp's llama-server, --parallel slots, "
        "if `make room-server` built it, else llama-cpp-python's server (one request at a time); wait "
        "until it answers; print what each learner sets: OPENAI_BASE_URL and LABKIT_MODEL=openai:smollm2.",
    )
    add = parser.add_argument
    add("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0, the room's network)")
    add("--port", type=int_in(1, 65535), default=PORT, metavar="N", help=f"port (default {PORT})")
    add(
        "--threads",
        type=int_in(1, 256),
        metavar="N",
        help=f"CPU threads for the model (default {THREADS}, half this machine's cores)",
    )
    add(
        "--model-path",
        metavar="FILE",
        help="a GGUF file (default: the course's SmolLM2, as `local` finds it)",
    )
    add(
        "--parallel",
        type=int_in(0, 64),
        default=PARALLEL,
        metavar="N",
        help=f"llama-server's slots, one per learner (default {PARALLEL}); 0: llama-cpp-python's server",
    )


def llama_server() -> str | None:
    """`make room-server`'s build/llama-server, else a `llama-server` on PATH, else None."""
    return str(_BUILT) if _BUILT.is_file() else shutil.which("llama-server")


def require_server() -> None:
    """LabError naming what is missing when llama-cpp-python's server extra is not installed.
    (serves: environment)"""
    if missing := [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]:
        raise LabError(
            f"llama-cpp-python's server is not installed (missing {', '.join(missing)}): "
            "run `make model` on the machine that serves the room"
        )


def server_command(
    host: str,
    port: int,
    *,
    threads: int | None = None,
    model_path: str | Path | None = None,
    alias: str = ALIAS,
    parallel: int = 0,
) -> list[str]:
    """The command line `labkit serve` runs (the live tests too): `llama-server` with `parallel` slots,
    each the local backend's context, or for 0 `python -m llama_cpp.server`."""
    from labkit.model.local import N_CTX, find_model_file

    path = Path(model_path) if model_path else find_model_file()
    if not path.is_file():  # serves: user — a --model-path that is not there
        raise LabError(f"--model-path {path}: no such file")
    if parallel and (binary := llama_server()) is None:  # serves: environment
        raise LabError("llama-server is not built: run `make room-server`")
    if parallel:  # --threads-batch defaults to --threads
        _SLOTS.mkdir(exist_ok=True)
        head = [binary, "--cont-batching"]
        options = {
            "--ctx-size": N_CTX * parallel,
            "--parallel": parallel,
            "--alias": alias,
            "--slot-save-path": _SLOTS,
            "--threads": threads or THREADS,
        }
    else:
        head = [sys.executable, "-m", "llama_cpp.server"]
        options = {
            "--model_alias": alias,
            "--n_ctx": N_CTX,
            "--verbose": False,
            "--n_threads": threads,
            "--n_threads_batch": threads,
        }
    options |= {"--model": path, "--host": host, "--port": port}
    return head + [part for key, value in options.items() if value is not None for part in (key, str(value))]


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
    has not answered within `limit` seconds.
    (serves: environment — a port taken, a server that never answers)"""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            status = f"the server exited with status {process.returncode}"
            raise LabError(f"{status} before answering (is the port taken? try --port)")
        try:
            with urllib.request.urlopen(url, timeout=1) as reply:
                listed = json.loads(reply.read(100_000))
            return ", ".join(str(m.get("id")) for m in listed.get("data", []))
        except (OSError, ValueError):
            time.sleep(0.2)
    raise LabError(f"the server did not answer {url} within {limit:g} s")


def warm_up(base_url: str, alias: str = ALIAS, timeout: float = 120.0, slots: int = 0) -> None:
    """Ask the server for one token after lab 02's system prompt, so that a measured or tested request
    does not pay the first request's warm-up; for llama-server's `slots`, copy that prompt's state into
    each: a room's first decisions then start from it rather than all compute it at once."""
    from labkit.decision_loop.model_policy import docuctl_policy

    system = {"role": "system", "content": docuctl_policy("example").instructions}
    body = {"model": alias, "max_tokens": 1, "messages": [system, {"role": "user", "content": "Question:"}]}
    calls = [("/v1/chat/completions", body | ({"id_slot": 0} if slots else {}))]
    name = {"filename": f"primed-{urlsplit(base_url).port}.bin"}  # in _SLOTS, one per server
    calls += [(f"/slots/{slot}?action={'restore' if slot else 'save'}", name) for slot in range(slots)]
    root, headers = base_url.removesuffix("/v1"), {"Content-Type": "application/json"}
    for path, data in calls:
        request = urllib.request.Request(root + path, json.dumps(data).encode(), headers)
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            reply.read()
    (_SLOTS / name["filename"]).unlink(missing_ok=True)


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
    parallel = args.parallel if llama_server() else 0
    if not parallel:
        require_server()
    for name in ("SIGTERM", "SIGHUP"):  # Windows has no SIGHUP
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop_on)
    command = server_command(
        args.host, args.port, threads=args.threads, model_path=args.model_path, parallel=parallel
    )
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, env={**os.environ, "PYTHONWARNINGS": "ignore"}, **quiet)
    try:
        local = "127.0.0.1" if args.host in ("0.0.0.0", "", "::") else args.host
        served = wait_until_ready(process, f"http://{local}:{args.port}/v1/models")
        warm_up(f"http://{local}:{args.port}/v1", slots=parallel)
        how = f"llama-server on {args.host}:{args.port} ({parallel} slots, continuous batching)"
        if not parallel:
            why = "" if args.parallel == 0 else "; `make room-server` builds llama-server, which batches"
            how = f"llama_cpp.server on {args.host}:{args.port} (one request at a time{why})"
        print(
            f"serving {served} with {how}",
            "each learner sets, in the notebook's parameters cell or before starting Jupyter:",
            sep="\n",
        )
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
