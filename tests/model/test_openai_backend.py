"""The `openai:` backend through the real `openai` client against `FakeOpenAI` on a loopback port (its
failures: test_server_failures.py), and live tests against llama-cpp-python's real OpenAI-compatible
server (marked `live`; skipped without `make model`, failed with CI=true)."""

import signal
import threading
import time

import pytest
from fake_ollama import FINAL, READ, SEARCH, TASK, docuctl_policy, episode
from fake_openai import FINGERPRINT, FakeOpenAI
from test_local_backend import check_recording
from test_room_server import enum_probe, serve, stop, stops_and_frees_its_port

from labkit.baseline import docuctl, docuctl_tools
from labkit.model import Recorder, backend_from_env, read_records
from labkit.model.backend import ChatRequest
from labkit.model.constraints import decision_schema
from labkit.model.openai_chat import OpenAIBackend

MODEL = "smollm2"


@pytest.fixture
def server():
    with FakeOpenAI(MODEL) as fake:
        yield fake


def backend(server, **options):
    return OpenAIBackend(MODEL, base_url=server.base_url, environ={}, **options)


def test_an_episode_over_the_wire_sends_the_schema_and_options_and_records_the_served_model(server, tmp_path):
    server.replies.extend([SEARCH, READ, FINAL])
    path = tmp_path / "docuctl-openai.jsonl"
    result = episode(Recorder(backend(server), path), temperature=0.3, seed=7, max_tokens=64)
    assert (result["stop"], result["citation"]) == ("final", "deploy-v2")
    assert result["usage"]["prompt_tokens"] == 3 * 210
    body = server.requests[0]
    assert body["model"] == MODEL and body["stream"] is False and body["max_tokens"] == 64
    assert (body["temperature"], body["seed"]) == (0.3, 7)
    schema = decision_schema(docuctl_tools(TASK))
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "decision", "schema": schema},
    }
    for _, record in read_records(path):
        provenance = record["provenance"]
        assert (provenance["backend"], provenance["host"]) == (f"openai:{MODEL}", server.host)
        assert (provenance["served_model"], provenance["system_fingerprint"]) == (MODEL, FINGERPRINT)
        assert provenance["schema_mode"] == "json_schema" and provenance["owned_by"] == "organization"


@pytest.mark.parametrize(
    ("owned_by", "environ", "sent"),
    [
        ("me", {}, "json_object"),
        ("me", {"LABKIT_OPENAI_SCHEMA": "json_schema"}, "json_schema"),
        ("x", {"LABKIT_OPENAI_SCHEMA": "none"}, None),
    ],
)
def test_the_schema_goes_in_the_form_the_server_takes(owned_by, environ, sent):
    with FakeOpenAI(MODEL, [SEARCH], owned_by=owned_by) as server:
        policy = docuctl_policy(OpenAIBackend(MODEL, base_url=server.base_url, environ=environ))
        policy(TASK, [])
    body = server.requests[0]
    assert (body.get("response_format") or {}).get("type") == sent
    if sent == "json_object":  # llama-cpp-python's server, detected from owned_by "me"
        assert body["response_format"]["schema"] == policy.schema


def test_labkit_serve_gives_each_learner_of_a_room_of_30_a_slot_unless_told_otherwise():
    """With fewer slots than learners, llama-server hands a learner's slot to another and the first
    re-reads their whole conversation (benchmarks/room.py: 113 prompt tokens a decision on 8 slots)."""
    from labkit.course.cli import build_parser

    assert build_parser("serve").parse_args(["serve"]).parallel >= 30
    assert build_parser("serve").parse_args(["serve", "--parallel", "4"]).parallel == 4


@pytest.fixture(scope="module")
def llama_cpp_served():
    """llama_cpp.server through `labkit serve --parallel 0`, shared by this file's live tests: the
    recording and busy-server tests ask it, then the stopping test stops it (one server start, about
    5 s of CPU, for all three)."""
    process, port = serve("llama_cpp.server", 0)
    try:
        yield process, port
    finally:
        stop(process)


@pytest.mark.live
def test_live_llama_cpp_server_constrains_and_records(llama_cpp_served, tmp_path, monkeypatch):
    """One L3 episode through LABKIT_MODEL=openai:smollm2 against the real server, and a probe that
    the server really constrains: an enum of made-up words SmolLM2 never writes unconstrained."""
    from labkit.decision_loop.trials import run_trials

    base_url = f"http://127.0.0.1:{llama_cpp_served[1]}/v1"
    for name, value in (("OPENAI_BASE_URL", base_url), ("LABKIT_MODEL", f"openai:{MODEL}")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("LABKIT_OPENAI_SCHEMA", raising=False)
    live = backend_from_env()
    enum_probe(live)
    assert live.mode == "json_object"  # detected from owned_by "me"

    cases = [docuctl().cases[0]]
    path = tmp_path / "docuctl-openai.jsonl"
    episodes = run_trials(
        live, path, cases=cases, k=1, max_tokens=48, budget_tokens=4000, rung="L3", prompt="base"
    )
    calls = [record for _, record in read_records(path) if record["kind"] == "call"]
    assert len(calls) == sum(e["turns"] for e in episodes) >= 2 and not any("error" in c for c in calls)
    assert {(c["provenance"]["served_model"], c["provenance"]["schema_mode"]) for c in calls} == {
        (MODEL, "json_object")
    }
    check_recording(path, episodes, cases, "base", 48)


@pytest.mark.live
def test_a_busy_llama_cpp_server_still_answers_the_probe(llama_cpp_served):
    """While llama_cpp.server generates for one learner (holding its lock), another learner's probe is
    answered: that learner's late decision waits its turn instead of ending as a hung server's error."""
    live = OpenAIBackend(MODEL, base_url=f"http://127.0.0.1:{llama_cpp_served[1]}/v1", environ={})
    # About 300 prompt tokens: a second or more of prompt evaluation on one thread, the lock held throughout.
    messages = ({"role": "user", "content": "release notes " * 150 + "Summarise."},)
    request = ChatRequest("probe", "long", 0, 1, messages, None, max_tokens=1)
    busy = threading.Thread(target=live.complete, args=(request,))
    busy.start()
    time.sleep(0.2)
    try:
        assert busy.is_alive() and live._answers() and busy.is_alive()
    finally:
        busy.join(60)


@pytest.mark.live
def test_stopping_labkit_serve_stops_its_server_and_frees_the_port(llama_cpp_served):
    """A closed terminal's SIGHUP (test_room_server.py: a supervisor's SIGTERM, for llama-server).
    Runs after the recording and busy-server tests (file order), which share llama_cpp.server's start."""
    stops_and_frees_its_port(*llama_cpp_served, signal.SIGHUP)
