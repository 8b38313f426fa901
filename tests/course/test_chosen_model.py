"""Lab 00 says "not ready" when the model the labs would use is misnamed, down or not installed: labs
02-04 use `LABKIT_MODEL`, so a learner must hear about it before a live cell, not in one."""

import socket

import pytest

from labkit.course import setup_check
from labkit.course.setup_check import chosen_model, ready, report


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed once the block ends: nothing listens there


@pytest.mark.parametrize(
    ("spec", "found"),
    [
        ("olama", "'olama' is not a backend"),
        ("ollama:qwen2.5:0.5b", "cannot reach Ollama at http://127.0.0.1:"),
        ("openai:smollm2", "cannot reach the server at http://127.0.0.1:"),
    ],
    ids=["misspelt", "ollama down", "room server down"],
)
def test_a_chosen_model_that_cannot_answer_is_a_fix_and_lab_00_is_not_ready(monkeypatch, spec, found):
    port = closed_port()
    monkeypatch.setenv("LABKIT_MODEL", spec)
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    status, seen, fix = chosen_model()
    assert status == "FIX" and found in seen and "unset LABKIT_MODEL" in fix
    assert ready(report()).startswith("not ready: fix the model the labs use (LABKIT_MODEL)")


def test_the_default_and_a_server_that_answers_are_ready(monkeypatch):
    monkeypatch.delenv("LABKIT_MODEL", raising=False)
    assert chosen_model() == ("ok", "LABKIT_MODEL=replay: the recorded runs", "")
    monkeypatch.setenv("LABKIT_MODEL", "openai:smollm2")
    monkeypatch.setattr(
        setup_check, "room_server", lambda **_: ("ok", "http://h/v1 answers, serving smollm2", "")
    )
    assert chosen_model()[0] == "ok"
