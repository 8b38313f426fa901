"""The `openai:` backend through the real `openai` client: faults against a loopback fake, and one
live test against llama-cpp-python's real OpenAI-compatible server.

The fault tests start `FakeOpenAI` (tests/fake_openai.py) on a free port: the client's own HTTP,
parsing and error paths run; nothing of the client is mocked. The live test (marked `live`)
starts `python -m llama_cpp.server` with SmolLM2 on a free loopback port and runs L3 episodes
through `LABKIT_MODEL=openai:<model>`; it is skipped without `make model`, and fails with CI=true.
"""

import json
import os
import subprocess
import urllib.request
import warnings

import pytest
from fake_ollama import FINAL, READ, SEARCH, TASK, docuctl_oracle, docuctl_policy, episode
from fake_openai import FINGERPRINT, FakeOpenAI

from labkit import LabError, docuctl
from labkit.model import Recorder, ReplayBackend, backend_from_env, parse_spec, read_records
from labkit.model.openai_chat import PLACEHOLDER_KEY, OpenAIBackend, SchemaIgnored, _validates

MODEL = "smollm2"


@pytest.fixture
def server():
    with FakeOpenAI(MODEL) as fake:
        yield fake


def backend(server, **options):
    return OpenAIBackend(MODEL, base_url=server.base_url, environ={}, **options)


def test_an_episode_over_the_wire(server):
    server.replies.extend([SEARCH, READ, FINAL])
    result = episode(backend(server), temperature=0.3, seed=7)
    assert (result["stop"], result["citation"]) == ("final", "deploy-v2")
    assert result["usage"]["prompt_tokens"] == 3 * 210


def test_the_request_sends_the_schema_temperature_and_seed(server):
    server.replies.append(SEARCH)
    policy = docuctl_policy(backend(server), temperature=0.3, seed=7, max_tokens=64)
    policy(TASK, [])
    (body,) = server.requests
    assert body["model"] == MODEL and body["stream"] is False
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.3, 7, 64)
    assert body["messages"][0] == {"role": "system", "content": "One JSON action."}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "decision", "schema": policy.schema},
    }


def test_llama_cpp_pythons_server_is_detected_and_sent_its_json_object_form():
    with FakeOpenAI(MODEL, [SEARCH], owned_by="me", takes=("text", "json_object")) as server:
        policy = docuctl_policy(backend(server), instructions="x")
        policy(TASK, [])
        (body,) = server.requests
        assert body["response_format"] == {"type": "json_object", "schema": policy.schema}


def test_a_server_that_refuses_json_schema_by_name_gets_json_object_instead():
    with FakeOpenAI(MODEL, [SEARCH, READ, FINAL], takes=("text", "json_object")) as server:
        model_backend = backend(server)
        result = episode(model_backend)
        assert result["stop"] == "final"
        kinds = [body["response_format"]["type"] for body in server.requests]
        assert kinds == ["json_schema", "json_object", "json_object", "json_object"]  # switched once
        assert model_backend.mode == "json_object"


def test_a_configured_schema_mode_is_not_second_guessed():
    with FakeOpenAI(MODEL, takes=("text", "json_object")) as server:
        result = episode(backend(server, schema_mode="json_schema"))
        assert result["stop"] == "provider_error"
        assert "HTTP 500" in result["detail"] and "json_schema" in result["detail"]
        assert len(server.requests) == 1


def test_schema_mode_none_sends_no_schema(server):
    server.replies.append(SEARCH)
    episode(OpenAIBackend(MODEL, base_url=server.base_url, environ={"LABKIT_OPENAI_SCHEMA": "none"}))
    assert "response_format" not in server.requests[0]


def test_recording_keeps_host_served_model_fingerprint_and_versions(server, tmp_path):
    server.replies.extend([SEARCH, READ, FINAL])
    path = tmp_path / "docuctl-openai.jsonl"
    episode(Recorder(backend(server), path))
    records = [record for _, record in read_records(path)]
    assert len(records) == 3
    for record in records:
        provenance = record["provenance"]
        assert provenance["backend"] == f"openai:{MODEL}" and provenance["host"] == server.host
        assert provenance["served_model"] == MODEL and provenance["system_fingerprint"] == FINGERPRINT
        assert provenance["schema_mode"] == "json_schema" and provenance["schema_honoured"] is True
        assert provenance["owned_by"] == "organization" and provenance["max_retries"] == 0
        assert provenance["versions"]["openai"] not in ("", "absent") and provenance["date"]


def test_an_openai_recording_replays(server, tmp_path):
    server.replies.extend([SEARCH, READ, FINAL])
    path = tmp_path / "docuctl-openai.jsonl"
    live = episode(Recorder(backend(server), path), temperature=0.3, seed=7)
    server.stop()  # the replay must not need the server
    replayed = episode(ReplayBackend([path]), temperature=0.3, seed=7)
    for field in ("stop", "answer", "citation", "turns", "usage"):
        assert replayed[field] == live[field]


def test_server_down_is_a_provider_error(server):
    base_url, host = server.base_url, server.host
    server.stop()
    result = episode(OpenAIBackend(MODEL, base_url=base_url, environ={}))
    assert (result["stop"], result["tool_calls"]) == ("provider_error", 0)
    assert f"cannot reach the server at {host} (" in result["detail"]
    assert "\n" not in result["detail"]


def test_a_server_down_is_one_attempt_not_three(server, tmp_path):
    """max_retries is 0: one refused connection, one recorded provider_error."""
    base_url = server.base_url
    server.stop()
    path = tmp_path / "down.jsonl"
    episode(Recorder(OpenAIBackend(MODEL, base_url=base_url, environ={}), path))
    (record,) = [record for _, record in read_records(path)]
    assert record["error"].startswith("cannot reach the server") and "unavailable" in record["provenance"]


def test_a_slow_server_is_a_provider_error(server):
    server.fault, server.delay = "slow", 1.0
    result = episode(backend(server, timeout=0.2))
    assert result["stop"] == "provider_error"
    assert "did not answer chat within 0.2 s" in result["detail"]


def test_a_dripping_server_is_stopped_by_the_whole_call_deadline(server):
    server.fault, server.delay = "drip", 0.05  # each read waits 0.05 s: the 5 s read timeout never trips
    result = episode(backend(server, timeout=5, deadline=0.5))
    assert result["stop"] == "provider_error"
    assert "did not finish chat within 0.5 s" in result["detail"]


def test_http_500_is_a_provider_error_with_the_servers_message(server):
    server.fault = "500"
    result = episode(backend(server))
    assert result["stop"] == "provider_error"
    assert "answered chat with HTTP 500: llama_decode returned -3: the KV cache is full" in result["detail"]
    assert len(server.requests) == 1  # not retried


@pytest.mark.parametrize("fault", ["not_json", "wrong_shape"])
def test_a_body_that_is_not_a_completion_is_a_provider_error(server, fault):
    server.fault = fault
    result = episode(backend(server))
    assert result["stop"] == "provider_error"
    assert f"the server at {server.host} answered chat with something that is not" in result["detail"]


def test_a_reply_without_usage_is_a_provider_error(server):
    server.fault = "no_usage"
    server.replies.append(SEARCH)
    result = episode(backend(server))
    assert result["stop"] == "provider_error"
    assert "without token usage, so the budget cannot be charged" in result["detail"]


def test_a_server_that_ignores_the_schema_is_named_and_recorded(server, tmp_path):
    server.replies.append(
        '{"action": "shell", "cmd": "rm -rf /"}'
    )  # accepted the schema, answered outside it
    path = tmp_path / "ignored.jsonl"
    with pytest.warns(SchemaIgnored, match=r"answered outside the decision schema .* seems to ignore it"):
        result = episode(Recorder(backend(server), path))
    assert (result["stop"], result["tool_calls"]) == ("invalid_decision", 0)  # the runtime still refuses it
    (record,) = [record for _, record in read_records(path)]
    assert record["provenance"]["schema_honoured"] is False


def test_content_that_is_not_json_is_an_invalid_decision(server):
    server.replies.append("Sure! To deploy, run docuctl ship.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemaIgnored)
        result = episode(backend(server))
    assert result["stop"] == "invalid_decision"


def test_a_model_the_server_lacks_is_the_users_mistake(server):
    with pytest.raises(LabError, match=r"has no model 'llama9:70b' .*/v1/models"):
        episode(OpenAIBackend("llama9:70b", base_url=server.base_url, environ={}, schema_mode="json_schema"))


def test_a_refused_key_is_the_users_mistake(server):
    server.fault = "401"
    with pytest.raises(LabError, match=r"refused the API key \(HTTP 401.*set OPENAI_API_KEY"):
        episode(backend(server, schema_mode="json_schema"))


def test_the_factory_reads_the_clients_own_environment(server):
    env = {"LABKIT_MODEL": f"openai:{MODEL}", "OPENAI_BASE_URL": server.base_url}
    made = backend_from_env(env)
    assert isinstance(made, OpenAIBackend) and made.name == f"openai:{MODEL}"
    assert made.base_url == server.base_url and made.api_key == PLACEHOLDER_KEY  # no key needed locally
    assert parse_spec("openai:x", {"OPENAI_API_KEY": "sk-test"}).api_key == "sk-test"
    with pytest.raises(LabError, match="needs a model name"):
        parse_spec("openai: ", {})
    with pytest.raises(LabError, match="LABKIT_OPENAI_SCHEMA='grammar' is not a schema mode"):
        parse_spec("openai:x", {"LABKIT_OPENAI_SCHEMA": "grammar"})


def test_scripted_trials_run_over_the_wire(tmp_path):
    """Whole L3 trials over the fake: the scripted answers pass the admissible-state schema."""
    from labkit.decision_loop.trials import run_trials

    corpus = docuctl()
    with FakeOpenAI(MODEL, answer=docuctl_oracle) as server:
        episodes = run_trials(
            backend(server), tmp_path / "t.jsonl", cases=corpus.cases[:2], k=1, rung="L3", prompt="example"
        )
    assert [e["stop"] for e in episodes] == ["final", "final"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--port", "0"], "argument --port: must be at least 1, got 0"),
    (["--port", "70000"], "argument --port: must be at most 65535, got 70000"),
    (["--threads", "257"], "argument --threads: must be at most 256, got 257"),
])
def test_serve_refuses_a_port_or_thread_count_out_of_range_in_one_line(cli, argv, message):
    code, out, err = cli("serve", *argv)  # refused while parsing: no server extra needed
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


# --- the live test: llama-cpp-python's real server ---------------------------------------------


def require_server_extra() -> None:
    """Skip (laptop) or fail (CI=true) without llama-cpp-python's server extra and the model file."""
    from labkit.course.commands.serve import require_server
    from labkit.model import local

    try:
        require_server()
        local.find_model_file()
    except LabError as error:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {error}: .ci/run must run `make model` before `make test`")
        pytest.skip(f"no live server test: {error}")  # the message says what to install


@pytest.fixture(scope="module")
def llama_server():
    """llama_cpp.server with SmolLM2 on a free loopback port, as `labkit serve` starts it."""
    require_server_extra()
    from labkit.course.commands.serve import free_port, server_command, wait_until_ready, warm_up

    port = free_port()
    process = subprocess.Popen(
        server_command("127.0.0.1", port, threads=1), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        try:
            wait_until_ready(process, f"{base_url}/models", limit=30)  # about 1 s on 2 cores
        except LabError as error:
            stderr = process.stderr.read().decode()[-500:] if process.poll() is not None else ""
            pytest.fail(f"{error} {stderr}")
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
            listed = json.load(reply)
        warm_up(base_url, MODEL, timeout=60)
        yield base_url, listed
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# The base prompt: the embedded backend's smoke test runs the example prompt, so both prompts meet
# a live model, and base's 239-token prompt costs the server half the 411 of example's (1.0 s
# against 1.9 s on one thread for an episode's first turn).
PROMPT = "base"


@pytest.mark.live
def test_live_llama_cpp_server_constrains_and_records(llama_server, tmp_path, monkeypatch):
    """One L3 episode through LABKIT_MODEL=openai:smollm2 against the real server (the embedded
    backend's live smoke test runs two; one here keeps `make test` within its time).

    Every finished reply validates against its own turn's schema (rebuilt by replaying the
    recording), the recording replays to the same stops, and one probe shows the server really
    constrains: an enum of made-up words the model never writes unconstrained.
    """
    import jsonschema

    from labkit.decision_loop.evaluation import replay_trials
    from labkit.decision_loop.model_policy import docuctl_policy
    from labkit.decision_loop.trials import limits_for, run_case, run_trials
    from labkit.model import Request

    base_url, listed = llama_server
    assert [m["id"] for m in listed["data"]] == [MODEL] and listed["data"][0]["owned_by"] == "me"
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("LABKIT_OPENAI_SCHEMA", raising=False)
    monkeypatch.setenv("LABKIT_MODEL", f"openai:{MODEL}")
    live = backend_from_env()
    assert isinstance(live, OpenAIBackend)

    # The constraint is real: free text never names these words; constrained, the reply is one of them.
    schema = {
        "type": "object",
        "properties": {"color": {"enum": ["zebra-42", "quux-7"]}},
        "required": ["color"],
        "additionalProperties": False,
    }
    messages = ({"role": "user", "content": "What is your favourite colour? One word."},)
    free = live.complete(Request("probe", "colour", 0, 1, messages, None, max_tokens=12, rung="L0"))
    assert not _validates(free.text, schema)  # unconstrained, SmolLM2 breaks this schema
    held = live.complete(Request("probe", "colour", 0, 1, messages, schema, max_tokens=24, rung="L3"))
    jsonschema.validate(json.loads(held.text), schema)
    assert live.mode == "json_object"  # detected from owned_by "me"

    corpus = docuctl()
    cases = [corpus.cases[0]]
    path = tmp_path / "docuctl-openai.jsonl"
    episodes = run_trials(
        live, path, cases=cases, k=1, max_tokens=48, budget_tokens=4000, rung="L3", prompt=PROMPT
    )
    calls = [record for _, record in read_records(path) if record["kind"] == "call"]
    assert len(calls) == sum(e["turns"] for e in episodes) >= 2
    for call in calls:
        provenance = call["provenance"]
        assert provenance["backend"] == f"openai:{MODEL}" and provenance["served_model"] == MODEL
        assert (
            provenance["host"] == base_url.removesuffix("/v1") and provenance["schema_mode"] == "json_object"
        )
        assert "error" not in call

    asked = []

    class Tap(ReplayBackend):
        def complete(self, request):
            reply = super().complete(request)
            asked.append((request, reply))
            return reply

    for case, record in zip(cases, episodes, strict=True):
        policy = docuctl_policy(PROMPT, backend=Tap([path]), rung="L3", max_tokens=48)
        result = run_case(case, policy, limits=limits_for(case, corpus), budget_tokens=4000, corpus=corpus)
        assert result["stop"] == record["stop"]
    assert len(asked) == len(calls)
    for request, reply in asked:
        if reply.finish_reason == "stop":
            jsonschema.validate(json.loads(reply.text), request.schema)
    assert [row["stop"] for row in replay_trials(path)] == [e["stop"] for e in episodes]
