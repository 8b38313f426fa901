"""00_start_here's setup check: each row says ok, FIX with a one-line fix, or optional."""

import sys

from fake_ollama import FakeOllama

from labkit.core.paths import CHECKOUT
from labkit.course import setup_check
from labkit.course.commands.serve import free_port
from labkit.course.setup_check import environment, ollama_backend, ready, report, room_server


def test_the_course_environment_passes_every_required_check(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    table = report()
    assert list(table.columns) == ["status", "found", "fix"]
    assert set(table["status"]) <= {"ok", "FIX", "optional"}
    assert ready(table) == "ready: every required check passed"
    assert table.loc["model: replay (default)", "status"] == "ok"
    assert table.loc["room model server (openai:)", "status"] == "optional"  # no lab needs one
    # what the notebook shows names no folder of this machine (it is committed with its output)
    assert str(CHECKOUT) not in table.to_string() and sys.prefix not in table.to_string()
    assert table.loc["labkit importable", "found"].endswith(" from this checkout")


def test_a_fresh_checkout_without_the_model_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr("labkit.model.local.MODELS", tmp_path)
    status, found, fix = setup_check.local_backend()
    assert (status, found) == ("optional", "not installed") and "make model" in fix


def test_an_ollama_server_that_answers_is_usable():
    with FakeOllama("qwen2.5:0.5b") as server:
        status, found, fix = ollama_backend(server.host)
    assert (status, found, fix) == ("ok", f"Ollama at {server.host}, serving qwen2.5:0.5b", "")


def test_no_ollama_server_is_optional_with_a_fix():
    port = free_port()
    status, found, fix = ollama_backend(f"127.0.0.1:{port}")
    assert status == "optional" and "ollama serve" in fix
    assert found == f"cannot reach Ollama at 127.0.0.1:{port} (is `ollama serve` running?)"


def test_a_kernel_with_other_pinned_versions_is_told_to_switch(monkeypatch):
    monkeypatch.setattr(setup_check.metadata, "version", lambda name: "0.0.1")
    status, found, fix = environment()
    assert status == "FIX" and "pandas 0.0.1 (course: 3.1.1)" in found and "make lab" in fix


def test_a_check_that_crashes_is_a_fix_row_not_a_traceback():
    def broken():
        raise OSError("disk on fire")

    table = report({"Python": setup_check.python_version, "broken": broken})
    assert table.loc["broken", "status"] == "FIX" and "OSError: disk on fire" in table.loc["broken", "found"]
    assert ready(table).startswith("not ready: fix broken")


def test_the_room_server_row_names_the_model_to_set(monkeypatch):
    from fake_openai import FakeOpenAI

    monkeypatch.setenv("LABKIT_MODEL", "openai:smollm2")
    with FakeOpenAI("smollm2", owned_by="me") as server:
        answers = room_server(server.base_url)
    served = f"{server.base_url} answers (llama-cpp-python), serving smollm2; LABKIT_MODEL=openai:smollm2"
    assert answers == ("ok", served, "")
    with FakeOpenAI("qwen2.5:0.5b", owned_by="library") as server:
        status, found, fix = room_server(server.base_url, model="smollm2")
    assert status == "optional" and "serving qwen2.5:0.5b, not 'smollm2'" in found
    assert fix == "set LABKIT_MODEL=openai:qwen2.5:0.5b"
    status, found, fix = room_server(f"127.0.0.1:{free_port()}/v1")
    assert status == "optional" and found.startswith("cannot reach the server at http://127.0.0.1:")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    status, found, fix = room_server()
    assert status == "optional" and "OPENAI_BASE_URL is unset" in found and "labkit serve" in fix
