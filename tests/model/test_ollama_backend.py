"""The Ollama backend through the real `ollama` client, against `FakeOllama` on a loopback port:
the client's own HTTP, parsing and error paths run; nothing of it is mocked."""

import json

import pytest
from fake_ollama import DIGEST, FINAL, READ, SEARCH, TASK, FakeOllama, docuctl_policy, episode

from labkit import LabError
from labkit.decision_loop.trials import MAX_PROVIDER_FAILURES
from labkit.model import Recorder, read_records
from labkit.model.ollama import OllamaBackend

MODEL = "qwen2.5:0.5b"
HUGE = "1" + "0" * 400


@pytest.fixture
def server():
    with FakeOllama(MODEL) as fake:
        yield fake


def test_an_episode_over_the_wire_in_ollamas_documented_chat_format(server):
    server.replies.extend([SEARCH, READ, FINAL])
    policy = docuctl_policy(OllamaBackend(MODEL, host=server.host), temperature=0.3, seed=7, max_tokens=64)
    policy(TASK, [])
    body = server.requests[0]
    assert body["model"] == MODEL and body["stream"] is False and body["format"] == policy.schema
    assert body["messages"][0] == {"role": "system", "content": "One JSON action."}
    assert body["options"] == {"temperature": 0.3, "seed": 7, "num_predict": 64}
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert (result["stop"], result["citation"]) == ("final", "deploy-v2")
    assert [entry["tokens"] for entry in result["trace"]] == [228, 228]  # prompt_eval_count + eval_count


def test_recording_an_ollama_call_keeps_the_models_digest(server, tmp_path):
    server.replies.extend([SEARCH, READ, FINAL])
    path = tmp_path / "docuctl-ollama.jsonl"
    episode(Recorder(OllamaBackend(MODEL, host=server.host), path))
    provenance = next(read_records(path))[1]["provenance"]
    assert (provenance["backend"], provenance["digest"]) == (f"ollama:{MODEL}", DIGEST)
    assert provenance["versions"]["ollama"] == "0.6.3"


def test_a_server_that_is_down_is_one_clear_provider_error_and_recorded(server, tmp_path):
    host = server.host
    server.stop()
    path = tmp_path / "docuctl-down.jsonl"
    result = episode(Recorder(OllamaBackend(MODEL, host=host), path))
    assert (result["stop"], result["tool_calls"]) == ("provider_error", 0)
    assert result["detail"] == f"ProviderError: cannot reach Ollama at {host} (is `ollama serve` running?)"
    ((_, record),) = list(read_records(path))
    assert "unavailable" in record["provenance"] and "date" in record["provenance"]


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("slow", "did not answer chat within 0.2 s"),
        ("500", "answered chat with HTTP 500: llama runner process has terminated"),
        ("not_json", "answered chat with something that is not a chat reply"),
        ("wrong_shape", "answered chat with something that is not a chat reply"),
    ],
)
def test_a_failing_server_is_a_counted_provider_error_naming_it(server, fault, message):
    server.fault, server.delay = fault, 1.0
    result = episode(OllamaBackend(MODEL, host=server.host, timeout=0.2))
    assert (
        result["stop"] == "provider_error" and message in result["detail"] and server.host in result["detail"]
    )


@pytest.mark.parametrize("field", ["prompt_eval_count", "eval_count"])
@pytest.mark.parametrize("value", [int(HUGE), -1], ids=["10**400", "-1"])
def test_impossible_token_counts_are_a_provider_error(server, field, value):
    server.replies.append(SEARCH)
    server.fields = {field: value}
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert result["stop"] == "provider_error" and f"reported {field}" in result["detail"]


def test_content_that_is_not_json_is_an_invalid_decision(server):
    server.replies.append("Sure! To deploy, run docuctl ship.")
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert result["stop"] == "invalid_decision" and result["detail"].startswith(
        "model reply is not JSON: 'Sure!"
    )


def test_an_ollama_reply_with_a_401_digit_amount_moves_no_money(server):
    from labkit.refunds import DEFENSES, model_policy
    from labkit.refunds.episode import refund_episode as refund_run

    server.replies.append(
        f'{{"action": "refund", "order_id": "o-1001", "amount": {HUGE}, '
        '"destination": "card-ana-4242", "idempotency_key": "k"}'
    )
    policy = model_policy(DEFENSES["mediation"], backend=OllamaBackend(MODEL, host=server.host))
    ep = refund_run("r-ana-blender", policy, defenses="mediation")
    assert ep.result["stop"] == "invalid_decision" and ep.refunds == ()
    assert "amount must be a finite number" in ep.result["detail"]


def test_a_model_the_server_lacks_is_the_users_mistake(server):
    with pytest.raises(LabError, match=r"HTTP 404 .*: run `ollama pull llama9:70b`"):
        episode(OllamaBackend("llama9:70b", host=server.host))


def test_trials_stop_with_one_line_after_consecutive_provider_failures(server, tmp_path, cli, monkeypatch):
    server.fault = "500"
    monkeypatch.setenv("OLLAMA_HOST", server.host)
    record = tmp_path / "docuctl-down.jsonl"
    code, out, err = cli("trials", "--model", f"ollama:{MODEL}", "--record", str(record))
    assert (code, out) == (2, "")
    last = err.rstrip("\n").split("\n")[-1]  # above it: the progress bar
    assert last.startswith(f"labkit trials: error: ollama:{MODEL}: ") and "HTTP 500" in last
    assert f"{MAX_PROVIDER_FAILURES} episodes in a row ended in provider_error" in last
    assert len(server.requests) == MAX_PROVIDER_FAILURES and not record.exists()
    partial = record.with_name(record.name + ".partial")
    kinds = [json.loads(line)["kind"] for line in partial.read_text().splitlines()]
    assert kinds.count("episode") == MAX_PROVIDER_FAILURES
