"""Every way a model server fails one call, for both server backends through their real clients
(`ollama`, `openai`) against `FakeOllama` and `FakeOpenAI` on a loopback port: one ProviderError
naming the server (a counted `provider_error`, never retried), or the user's LabError with the fix."""

import time

import pytest
from fake_ollama import SEARCH, FakeOllama, episode
from fake_openai import FakeOpenAI

from labkit.core import LabError, ProviderError
from labkit.model import ChatRequest, Recorder, read_records
from labkit.model.backend import PROBE_S
from labkit.model.ollama import OllamaBackend
from labkit.model.openai_chat import OpenAIBackend

MODELS = {"ollama": "qwen2.5:0.5b", "openai": "smollm2"}
HI = ({"role": "user", "content": "hi"},)
HUGE = 10**400
DOWN = {
    "ollama": "cannot reach Ollama at {host} (is `ollama serve` running?)",
    "openai": "cannot reach the server at {host} (",
}


def backend(kind, server, model=None, **options):
    if kind == "ollama":
        return OllamaBackend(model or MODELS[kind], host=server.host, **options)
    return OpenAIBackend(model or MODELS[kind], base_url=server.base_url, environ={}, **options)


@pytest.fixture(params=["ollama", "openai"])
def served(request):
    with (FakeOllama if request.param == "ollama" else FakeOpenAI)(MODELS[request.param]) as server:
        yield request.param, server


def test_a_server_that_is_down_is_one_attempt_one_line_and_recorded(served, tmp_path):
    kind, server = served
    server.stop()
    path = tmp_path / "docuctl-down.jsonl"
    result = episode(Recorder(backend(kind, server), path))
    assert (result["stop"], result["tool_calls"]) == ("provider_error", 0)
    assert result["detail"].startswith("ProviderError: " + DOWN[kind].format(host=server.host))
    assert "\n" not in result["detail"]
    ((_, record),) = list(read_records(path))  # one call: not retried
    assert "unavailable" in record["provenance"] and "date" in record["provenance"]


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("slow", "did not answer chat within 0.2 s"),
        ("trickle", "did not answer chat within 0.2 s"),  # a byte each 0.1 s: no read waits 0.2 s
        ("500", "answered chat with HTTP 500: "),
        ("not_json", "answered chat with something that is not a chat"),
        ("wrong_shape", "answered chat with something that is not a chat"),
    ],
)
def test_a_failing_server_is_a_counted_provider_error_naming_it(served, fault, message):
    kind, server = served
    server.fault, server.delay = fault, 0.1 if fault == "trickle" else 5.0
    server.replies.append(SEARCH)
    # Only a server too slow meets the 0.2 s limit: one that answers at once has 30 s, so a busy machine
    # (a fake server's thread waiting for a core) never turns a wrong reply into a timeout.
    slow = fault in ("slow", "trickle")
    start = time.perf_counter()
    result = episode(backend(kind, server, timeout=0.2 if slow else 30.0))
    assert result["stop"] == "provider_error" and message in result["detail"]
    # within 3 s: the 0.2 s limit with room for a busy machine; waiting for the server takes 5 s or forever
    assert not slow or time.perf_counter() - start < 3.0
    assert "\n" not in result["detail"]
    assert server.host in result["detail"] and len(server.requests) == 1  # not retried


@pytest.mark.parametrize(
    ("kind", "fields", "message"),
    [
        ("ollama", {"prompt_eval_count": HUGE}, "reported prompt_eval_count 1000"),
        ("ollama", {"eval_count": -1}, "reported eval_count -1, not a token count"),
        ("openai", {"usage": {"prompt_tokens": HUGE, "completion_tokens": 1}}, "usage.prompt_tokens 1000"),
        ("openai", {"usage": {"prompt_tokens": 1, "completion_tokens": -1}}, "completion_tokens -1, not a"),
        ("openai", {"usage": None}, "answered chat with something that is not a chat completion"),
    ],
)
def test_a_reply_without_possible_token_counts_is_a_provider_error(kind, fields, message):
    with (FakeOllama if kind == "ollama" else FakeOpenAI)(MODELS[kind], [SEARCH]) as server:
        server.fields = fields
        result = episode(backend(kind, server))
    assert result["stop"] == "provider_error" and message in result["detail"]


@pytest.mark.parametrize(
    ("kind", "model", "fault", "message"),
    [
        ("ollama", "llama9:70b", None, r"HTTP 404 .*: run `ollama pull llama9:70b`"),
        ("openai", "llama9:70b", None, r"HTTP 404 .* is 'llama9:70b' in its /v1/models"),
        ("openai", MODELS["openai"], "401", r"HTTP 401 .*set OPENAI_API_KEY"),
    ],
)
def test_a_missing_model_or_a_refused_key_is_the_users_mistake(kind, model, fault, message):
    with (FakeOllama if kind == "ollama" else FakeOpenAI)(MODELS[kind]) as server:
        server.fault = fault
        options = {"schema_mode": "json_schema"} if kind == "openai" else {}
        with pytest.raises(LabError, match=message):
            episode(backend(kind, server, model, **options))


@pytest.mark.parametrize(("fault", "delay"), [("slow", 1.0), ("hung", 3.0)])
def test_a_late_decision_waits_while_the_server_answers_and_is_held_to_the_deadline_when_it_answers_nothing(
    served, monkeypatch, capsys, fault, delay
):
    # The first call may load the model (the backend's timeout, 5 s here); later ones get the room's
    # deadline, 0.3 s, unless the server still answers "are you there?": then it is busy with other
    # learners, and the decision waits (a hung server answers nothing, not even that, within PROBE_S).
    kind, server = served
    monkeypatch.setenv("LABKIT_DECISION_TIMEOUT", "0.3")
    # The probe a hung server never answers: 0.3 s instead of PROBE_S's 2 (a shorter wait for an answer
    # that never comes can only end sooner); a slow server's probe keeps all of PROBE_S on a busy machine.
    probe_s = 0.3 if fault == "hung" else PROBE_S
    monkeypatch.setattr(f"labkit.model.{'ollama' if kind == 'ollama' else 'openai_chat'}.PROBE_S", probe_s)
    live = backend(kind, server, timeout=5.0)
    server.replies += [SEARCH, SEARCH]
    live.complete(ChatRequest("docuctl", "deploy-build", 0, 1, HI, None))
    server.fault, server.delay = fault, delay
    start = time.perf_counter()
    if fault == "slow":
        assert "search" in live.complete(ChatRequest("docuctl", "deploy-build", 0, 2, HI, None)).text
        assert f"labkit: waiting for {live.where}: it is busy" in capsys.readouterr().err
    else:
        with pytest.raises(ProviderError, match=r"0.3 s \(a slower model: set LABKIT_DECISION_TIMEOUT=60\)"):
            live.complete(ChatRequest("docuctl", "deploy-build", 0, 2, HI, None))
    assert time.perf_counter() - start < 4.5  # waited for the reply, or the deadline and one probe


def test_a_decision_timeout_that_is_not_seconds_is_the_users_one_line(served, monkeypatch):
    kind, server = served
    monkeypatch.setenv("LABKIT_DECISION_TIMEOUT", "soon")
    live = backend(kind, server)
    live._answered = True
    with pytest.raises(LabError, match="LABKIT_DECISION_TIMEOUT='soon' is not a number of seconds"):
        live.complete(ChatRequest("docuctl", "deploy-build", 0, 1, HI, None))
