"""The model seam against a misbehaving server: trickled replies, impossible numbers, outages.

Every test starts `FakeOllama` (tests/fake_ollama.py) on a free port: the real `ollama`
client's HTTP and parsing run; nothing of it is mocked.
"""

import json
import time

import pytest
from fake_ollama import FakeOllama, episode

from labkit.core.errors import ProviderError
from labkit.decision_loop.trials import MAX_PROVIDER_FAILURES
from labkit.model.backend import token_count
from labkit.model.ollama import DEADLINE, OllamaBackend
from labkit.refunds import DEFENSES, model_policy
from labkit.refunds import refund_episode as refund_run

MODEL = "qwen2.5:0.5b"
HUGE = "1" + "0" * 400


@pytest.fixture
def server():
    with FakeOllama(MODEL) as fake:
        yield fake


def test_a_server_that_trickles_its_reply_is_stopped_by_the_whole_call_deadline(server):
    server.fault, server.delay = "drip", 0.02  # each read waits 0.02 s: a per-read timeout never fires
    start = time.perf_counter()
    result = episode(OllamaBackend(MODEL, host=server.host, timeout=5.0, deadline=0.5))
    assert time.perf_counter() - start < 3.0
    assert (result["stop"], result["tool_calls"]) == ("provider_error", 0)
    assert "did not finish chat within 0.5 s" in result["detail"]


def test_the_whole_call_deadline_has_a_finite_default():
    backend = OllamaBackend(MODEL, host="http://127.0.0.1:9")
    assert backend.deadline == DEADLINE and 0 < DEADLINE < 3600
    with pytest.raises(ValueError, match="deadline"):
        OllamaBackend(MODEL, deadline=float("inf"))


def test_an_ollama_reply_with_a_401_digit_amount_moves_no_money(server):
    refund = (
        f'{{"action": "refund", "order_id": "o-1001", "amount": {HUGE}, '
        '"destination": "card-ana-4242", "idempotency_key": "k"}'
    )
    server.replies.append(refund)
    backend = OllamaBackend(MODEL, host=server.host)
    ep = refund_run(
        "r-ana-blender", model_policy(DEFENSES["mediation"], backend=backend), defenses="mediation"
    )
    assert ep.result["stop"] == "invalid_decision" and ep.refunds == ()
    assert "amount must be a finite number" in ep.result["detail"]


@pytest.mark.parametrize("field", ["prompt_eval_count", "eval_count"])
@pytest.mark.parametrize("value", [int(HUGE), -1], ids=["10**400", "-1"])
def test_impossible_token_counts_are_a_provider_error(server, field, value):
    server.replies.append('{"action": "search", "query": "deploy"}')
    server.fields = {field: value}
    result = episode(OllamaBackend(MODEL, host=server.host))
    assert result["stop"] == "provider_error"
    assert f"reported {field}" in result["detail"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [(-1, "-1"), (2**53 + 1, str(2**53 + 1)), (int(HUGE), "an out-of-range number"), ("7", "a str"),
     (7.0, "a float"), (True, "a bool"), (None, "None")],
)
def test_every_backend_refuses_what_is_not_a_token_count_in_one_sentence(value, shown):
    assert token_count(2**53, "x") == 2**53
    with pytest.raises(ProviderError) as refused:
        token_count(value, "S at h reported usage.prompt_tokens")
    assert str(refused.value) == f"S at h reported usage.prompt_tokens {shown}, not a token count"


def test_trials_stop_with_one_line_after_consecutive_provider_failures(server, tmp_path, cli, monkeypatch):
    server.fault = "500"
    monkeypatch.setenv("OLLAMA_HOST", server.host)
    record = tmp_path / "docuctl-down.jsonl"
    code, out, err = cli("trials", "--model", f"ollama:{MODEL}", "--record", str(record))
    assert (code, out) == (2, "")
    last = err.rstrip("\n").split("\n")[-1]  # above it: the progress bar
    assert last.startswith("labkit trials: error: ollama:qwen2.5:0.5b: ")
    assert f"{MAX_PROVIDER_FAILURES} episodes in a row ended in provider_error" in last
    assert "HTTP 500" in last and f"{record}.partial" in last
    assert len(server.requests) == MAX_PROVIDER_FAILURES  # it stopped asking
    assert not record.exists()
    partial = record.with_name(record.name + ".partial")
    kinds = [json.loads(line)["kind"] for line in partial.read_text().splitlines()]
    assert kinds.count("episode") == MAX_PROVIDER_FAILURES


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--seed", "argument --seed: must be at most"),
        ("--budget-tokens", "argument --budget-tokens: must be at most"),
        ("--max-tokens", "argument --max-tokens: must be at most"),
        ("--k", "argument --k: must be at most"),
    ],
)
def test_trials_options_too_big_to_use_are_one_line_before_anything_runs(cli, tmp_path, option, message):
    code, out, err = cli("trials", "--model", "ollama:x", option, HUGE, "--record", str(tmp_path / "t.jsonl"))
    assert (code, out) == (2, "") and message in err and err.count("\n") == 1 and len(err) < 300


def test_run_trials_refuses_a_budget_the_runtime_cannot_hold(tmp_path):
    from labkit.core.errors import LabError
    from labkit.decision_loop.trials import run_trials

    with pytest.raises(LabError, match="budget_tokens must be a positive int"):
        run_trials(
            OllamaBackend(MODEL, host="http://127.0.0.1:9"), tmp_path / "t.jsonl", budget_tokens=int(HUGE)
        )
