"""Lab 02: the Ollama backend through the real `ollama` client, against a loopback server.

Every test starts `FakeOllama` (tests/fake_ollama.py) on a free port and stops it: the
client's own HTTP, parsing and error paths run; nothing of the client is mocked.
"""

import pytest
from fake_ollama import DIGEST, FINAL, READ, SEARCH, TASK, FakeOllama, docuctl_policy, episode

from labkit import LabError
from labkit.model import Recorder, read_records
from labkit.model.ollama import OllamaBackend

MODEL = "qwen2.5:0.5b"


@pytest.fixture
def server():
    with FakeOllama(MODEL) as fake:
        yield fake


def test_an_episode_over_the_wire(server):
    server.replies.extend([SEARCH, READ, FINAL])
    result = episode(OllamaBackend(MODEL, host=server.host), temperature=0.3, seed=7)
    assert (result["stop"], result["citation"]) == ("final", "deploy-v2")
    assert result["usage"]["prompt_tokens"] == 3 * 210  # prompt_eval_count of each reply
    assert [entry["tokens"] for entry in result["trace"]] == [228, 228, 228]


def test_the_request_is_ollamas_documented_chat_format(server):
    server.replies.append(SEARCH)
    policy = docuctl_policy(OllamaBackend(MODEL, host=server.host), temperature=0.3, seed=7, max_tokens=64)
    policy(TASK, [])
    (body,) = server.requests
    assert body["model"] == MODEL and body["stream"] is False
    assert body["messages"][0] == {"role": "system", "content": "One JSON action."}
    assert body["format"] == policy.schema  # schema-constrained output
    assert body["options"] == {"temperature": 0.3, "seed": 7, "num_predict": 64}


def test_recording_an_ollama_call_keeps_its_digest_and_server_version(server, tmp_path):
    server.replies.extend([SEARCH, READ, FINAL])
    path = tmp_path / "docuctl-ollama.jsonl"
    episode(Recorder(OllamaBackend(MODEL, host=server.host), path))
    records = [record for _, record in read_records(path)]
    assert len(records) == 3
    provenance = records[0]["provenance"]
    assert provenance["backend"] == f"ollama:{MODEL}"
    assert provenance["digest"] == DIGEST and provenance["server_version"] == "0.5.1"
    assert provenance["versions"]["ollama"] == "0.6.3"


def test_server_down_is_a_provider_error(server):
    host = server.host
    server.stop()
    result = episode(OllamaBackend(MODEL, host=host))
    assert (result["stop"], result["tool_calls"]) == ("provider_error", 0)
    assert f"cannot reach Ollama at {host} (is `ollama serve` running?)" in result["detail"]


def test_a_slow_server_is_a_provider_error(server):
    server.fault, server.delay = "slow", 1.0
    result = episode(OllamaBackend(MODEL, host=server.host, timeout=0.2))
    assert result["stop"] == "provider_error"
    assert "did not answer chat within 0.2 s" in result["detail"]


def test_http_500_is_a_provider_error(server):
    server.fault = "500"
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert result["stop"] == "provider_error"
    assert "answered chat with HTTP 500: llama runner process has terminated" in result["detail"]


@pytest.mark.parametrize("fault", ["not_json", "wrong_shape"])
def test_a_body_that_is_not_a_chat_reply_is_a_provider_error(server, fault):
    server.fault = fault
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert result["stop"] == "provider_error"
    assert "answered chat with something that is not a chat reply" in result["detail"]


def test_content_that_is_not_json_is_an_invalid_decision(server):
    server.replies.append("Sure! To deploy, run docuctl ship.")
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert result["stop"] == "invalid_decision"
    assert result["detail"].startswith("model reply is not JSON: 'Sure!")


def test_json_that_violates_the_schema_is_an_invalid_decision(server):
    server.replies.append('{"action": "shell", "cmd": "rm -rf /"}')
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert (result["stop"], result["tool_calls"]) == ("invalid_decision", 0)


def test_a_model_the_server_lacks_is_the_users_mistake(server):
    with pytest.raises(LabError, match=r"has no model 'llama9:70b': run `ollama pull llama9:70b`"):
        episode(OllamaBackend("llama9:70b", host=server.host))


def test_a_recorded_outage_keeps_what_provenance_it_can(server, tmp_path):
    host = server.host
    server.stop()
    path = tmp_path / "docuctl-down.jsonl"
    result = episode(Recorder(OllamaBackend(MODEL, host=host), path))
    assert result["stop"] == "provider_error"
    (record,) = [record for _, record in read_records(path)]
    assert record["error"].startswith("cannot reach Ollama")
    assert "unavailable" in record["provenance"] and "date" in record["provenance"]
