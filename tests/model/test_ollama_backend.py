"""The Ollama backend through the real `ollama` client, against `FakeOllama` on a loopback port
(its failures: test_server_failures.py)."""

import json

import pytest
from fake_ollama import DIGEST, FINAL, READ, SEARCH, TASK, FakeOllama, docuctl_policy, episode

from labkit.baseline import docuctl_tools
from labkit.decision_loop.trials import MAX_PROVIDER_FAILURES
from labkit.model import Recorder, read_records
from labkit.model.constraints import decision_schema
from labkit.model.ollama import OllamaBackend

MODEL = "qwen2.5:0.5b"
HUGE = "1" + "0" * 400


@pytest.fixture
def server():
    with FakeOllama(MODEL) as fake:
        yield fake


def test_an_episode_over_the_wire_in_ollamas_chat_format_records_the_models_digest(server, tmp_path):
    server.replies.extend([f"Sure! {SEARCH}", SEARCH, READ, FINAL])
    backend, path = OllamaBackend(MODEL, host=server.host), tmp_path / "docuctl-ollama.jsonl"
    assert docuctl_policy(backend, rung="L0")(TASK, [])["action"] == "search"
    assert server.requests[0].get("format") is None  # L0: no schema
    result = episode(Recorder(backend, path), temperature=0.3, seed=7, max_tokens=64)
    assert (result["stop"], result["citation"]) == ("final", "deploy-v2")
    assert [entry["tokens"] for entry in result["trace"]] == [228] * 3  # prompt_eval_count + eval_count
    body = server.requests[1]
    assert body["model"] == MODEL and body["stream"] is False
    assert body["format"] == decision_schema(docuctl_tools(TASK))
    assert body["messages"][0] == {"role": "system", "content": "One JSON action."}
    assert body["options"] == {"temperature": 0.3, "seed": 7, "num_predict": 64}
    provenance = next(read_records(path))[1]["provenance"]
    assert (provenance["backend"], provenance["digest"]) == (f"ollama:{MODEL}", DIGEST)
    assert provenance["versions"]["ollama"] == "0.6.3"


def test_an_ollama_reply_with_a_401_digit_amount_moves_no_money(server):
    from labkit.refunds.defenses import DEFENSES
    from labkit.refunds.episode import refund_episode as refund_run
    from labkit.refunds.policies import model_policy

    server.replies.append(
        f'{{"action": "refund", "order_id": "o-1001", "amount": {HUGE}, '
        '"destination": "card-ana-4242", "idempotency_key": "k"}'
    )
    policy = model_policy(DEFENSES["mediation"], backend=OllamaBackend(MODEL, host=server.host))
    ep = refund_run("r-ana-blender", policy, defenses="mediation")
    assert ep.result["stop"] == "invalid_decision" and ep.refunds == ()
    assert "amount must be a finite number" in ep.result["detail"]


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
