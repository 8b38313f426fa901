"""`LABKIT_MODEL` to a backend, and `LABKIT_RECORD` wrapping it in a Recorder."""

import pytest

from labkit.core import LabError
from labkit.model import Recorder, ReplayBackend, backend_for, backend_from_env, parse_spec
from labkit.model.factory import backend_name
from labkit.model.local import LocalBackend
from labkit.model.ollama import OllamaBackend
from labkit.model.openai_chat import PLACEHOLDER_KEY, OpenAIBackend


def test_each_spec_makes_its_backend_with_its_servers_variables(tmp_path):
    assert isinstance(backend_from_env({}), ReplayBackend)
    assert isinstance(backend_from_env({"LABKIT_MODEL": "local"}), LocalBackend)
    ollama = backend_from_env({"LABKIT_MODEL": "ollama:qwen2.5:0.5b", "OLLAMA_HOST": "http://10.0.0.1:1"})
    assert isinstance(ollama, OllamaBackend)
    assert (ollama.tag, ollama.host) == ("qwen2.5:0.5b", "http://10.0.0.1:1")
    openai = backend_from_env({"LABKIT_MODEL": "openai:smollm2", "OPENAI_BASE_URL": "10.0.0.5:8000/v1"})
    assert isinstance(openai, OpenAIBackend) and openai.base_url == "http://10.0.0.5:8000/v1"
    assert openai.api_key == PLACEHOLDER_KEY  # a local server needs none
    assert parse_spec("openai:x", {"OPENAI_API_KEY": "sk-test"}).api_key == "sk-test"
    recorded = backend_from_env({"LABKIT_MODEL": "local", "LABKIT_RECORD": str(tmp_path / "r.jsonl")})
    assert isinstance(recorded, Recorder) and recorded.name == "local"
    specs = ("replay:f.jsonl", "local", "ollama:q:1", "openai: m")
    assert " ".join(map(backend_name, specs)) == "replay local ollama:q:1 openai:m"


def test_a_labs_model_parameter_wins_unless_left_at_replay():
    env = {"LABKIT_MODEL": "ollama:qwen2.5:0.5b"}
    assert backend_for("replay", env).name == "ollama:qwen2.5:0.5b"
    assert isinstance(backend_for("replay", {}), ReplayBackend)
    assert isinstance(backend_for("local", env), LocalBackend)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        *[
            ({"LABKIT_MODEL": spec}, "is not a backend: use replay")
            for spec in ("gpt-4", "ollama:", "local:big", "ollama:qwen 2.5", "ollama:q;rm")
        ],
        ({"LABKIT_MODEL": "openai: "}, "needs a model name"),
        ({"LABKIT_MODEL": "openai:x", "LABKIT_OPENAI_SCHEMA": "grammar"}, "'grammar' is not a schema mode"),
        ({"LABKIT_RECORD": "r.jsonl"}, "LABKIT_RECORD=r.jsonl needs a live model"),
    ],
)
def test_a_spec_that_names_no_backend_is_one_clear_error(env, message):
    with pytest.raises(LabError, match=message):
        backend_from_env(env)
