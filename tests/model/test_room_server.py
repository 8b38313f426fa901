"""The room's batching server, live: `labkit serve` running llama.cpp's llama-server (`make room-server`)
with several slots on a loopback port, the constrained-decoding probe, lab 02's episode from concurrent
learners with every reply inside its turn's schema, and the server stopped with `labkit serve` (marked
`live`; skipped without the build, failed with CI=true)."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading

import jsonschema
import pytest
from test_local_backend import skip_or_fail

from labkit.baseline import docuctl
from labkit.core import LabError
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.trials import limits_for, run_case
from labkit.model import ChatRequest
from labkit.model.backend import DECISION_TIMEOUT_ENV, TIMEOUT
from labkit.model.openai_chat import OpenAIBackend

# Two learners, each in a slot of their own: every decode step batches both slots' sequences, each under
# its own turn's grammar, as it batches a room's 30 (slots are alike: a third or fourth learner adds
# episodes to decode, 2.9 CPU-s of them, but no path through the server that two do not take).
LEARNERS = 2
MODEL = "smollm2"
# Seconds a decision waits on the server, sized for a loaded machine (learners decoding on 2 busy
# cores), not an idle one: the backend's own 120 s, not the room's 15 s (the lab's deadline); each
# returns as soon as the server answers, so an idle run pays nothing. `labkit serve` gives the server's
# start a minute.
DECISION_S = TIMEOUT


def missing(problem: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {problem}: .ci/run must run `make model` and `make room-server` first")
    pytest.skip(f"{problem}: run `make model` and `make room-server` to include the live test")


def serve(server: str, parallel: int) -> tuple[subprocess.Popen, int]:
    """`labkit serve` with SmolLM2 on a free loopback port, started as a room starts it, once it says
    it serves `server`; its later output is drained (a full pipe would stall the server)."""
    from labkit.course.commands.serve import free_port, llama_server, require_server
    from labkit.model.local import find_model_file

    try:
        find_model_file()
        require_server() if server == "llama_cpp.server" else None
    except LabError as error:
        skip_or_fail(error)
    if server == "llama-server" and llama_server() is None:
        missing("llama-server is not built")
    port = free_port()
    command = [sys.executable, "-m", "labkit", "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--threads", "1", "--parallel", str(parallel)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = process.stdout.readline()
    if not first.startswith(f"serving {MODEL} with {server} "):
        stop(process)
        pytest.fail(f"labkit serve did not come up: {first}{process.stdout.read()[-500:]}")
    threading.Thread(target=process.stdout.read, daemon=True).start()
    return process, port


def stop(process: subprocess.Popen) -> None:
    """Stop `labkit serve` as a supervisor would (SIGTERM: it stops its server too), killing it only if
    it has not ended in 15 s; a SIGKILL alone would leave its server running, orphaned."""
    process.terminate()
    try:
        process.wait(15)
    finally:
        process.kill()


def stops_and_frees_its_port(process: subprocess.Popen, port: int, signum: int) -> None:
    """`labkit serve` sent `signum` ends within 15 s, and its server with it: the port refuses."""
    try:
        process.send_signal(signum)
        process.wait(15)
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    finally:
        stop(process)


@pytest.fixture(scope="module")
def room():
    """`labkit serve` with llama-server's LEARNERS slots, as a room runs it: (process, port, base URL). This
    file's last test stops it (one server start, model load and warm-up for the file)."""
    process, port = serve("llama-server", LEARNERS)
    try:
        yield process, port, f"http://127.0.0.1:{port}/v1"
    finally:
        stop(process)


def enum_probe(live):
    """The server really constrains: an enum of made-up words SmolLM2 never writes unconstrained."""
    schema = {
        "type": "object",
        "properties": {"color": {"enum": ["zebra-42", "quux-7"]}},
        "required": ["color"],
    }
    messages = ({"role": "user", "content": "What is your favourite colour? One word."},)
    free = live.complete(ChatRequest("probe", "colour", 0, 1, messages, None, max_tokens=12))
    assert "zebra-42" not in free.text and "quux-7" not in free.text
    held = live.complete(ChatRequest("probe", "colour", 0, 1, messages, schema, max_tokens=24))
    jsonschema.validate(json.loads(held.text), schema)
    return held


@pytest.mark.live
def test_llama_server_enforces_the_schema_the_openai_backend_sends(room):
    """An enum of made-up words SmolLM2 never writes unconstrained, sent as the backend sends a rung's."""
    live = OpenAIBackend(MODEL, base_url=room[2], environ={})
    held = enum_probe(live)
    assert live.schema_mode() == "json_schema" and live.owned_by != "me"  # llama-server's own form
    assert held.extra["call_provenance"]["schema_mode"] == "json_schema"


@pytest.mark.live
def test_concurrent_learners_each_get_replies_inside_their_turns_schema(room, monkeypatch):
    """Every learner's episode ends on its own terms, every reply inside its turn's schema. A decision
    gets DECISION_S, not the room's 15 s: on a busy machine a slow decode is not the server failing."""
    monkeypatch.setenv(DECISION_TIMEOUT_ENV, str(DECISION_S))
    corpus = docuctl()
    case = corpus.cases[0]
    asked, errors, lock = [], [], threading.Lock()

    class Tap(OpenAIBackend):
        def complete(self, request):
            reply = super().complete(request)
            with lock:
                asked.append((request, reply))
            return reply

    def learner(results: list) -> None:
        try:
            policy = docuctl_policy(
                "base", backend=Tap(MODEL, base_url=room[2], environ={}), rung="L3", max_tokens=48
            )
            results.append(
                run_case(case, policy, limits=limits_for(case, corpus), budget_tokens=4000, corpus=corpus)
            )
        except Exception as error:  # noqa: BLE001 - reported below, with the thread's name
            errors.append(repr(error))

    results: list = []
    threads = [threading.Thread(target=learner, args=(results,)) for _ in range(LEARNERS)]
    for thread in threads:
        thread.start()
    episode_s = limits_for(case, corpus)["max_turns"] * DECISION_S + 30  # each of its calls is bounded
    for thread in threads:
        thread.join(episode_s)
    assert not any(thread.is_alive() for thread in threads), f"an episode outlived {episode_s:g} s"
    assert not errors and len(results) == LEARNERS, errors
    assert all(result["stop"] not in ("provider_error", "invalid_decision") for result in results), results
    assert len(asked) == sum(result["turns"] for result in results) >= 2 * LEARNERS
    for request, reply in asked:
        assert request.schema is not None and reply.extra["call_provenance"]["schema_mode"] == "json_schema"
        if reply.finish_reason == "stop":
            jsonschema.validate(json.loads(reply.text), request.schema)
    assert sum(reply.finish_reason == "stop" for _, reply in asked) >= len(asked) - LEARNERS


@pytest.mark.live
def test_stopping_labkit_serve_stops_its_llama_server_and_frees_the_port(room):
    """A supervisor's SIGTERM (test_openai_backend.py: a closed terminal's SIGHUP, for llama_cpp.server).
    Runs after this file's other tests (file order), which share the room's start."""
    stops_and_frees_its_port(room[0], room[1], signal.SIGTERM)
