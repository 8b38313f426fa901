"""Lab 02: the model seam — schema, policy, replay, recording — with an in-test backend.

`Scripted` below is a backend, not a mock of any client: it answers requests from a list,
the way a model would, so the seam's own code (prompting, parsing, recording, replaying)
runs for real.
"""

import json
import time

import jsonschema
import pytest

from labkit import FixtureError, LabError, ProviderError, Task, docuctl, docuctl_tools, run, task_from
from labkit.core.runtime import Tool
from labkit.decision_loop.model_policy import describe_docuctl
from labkit.model import (
    ModelPolicy,
    Recorder,
    ReplayBackend,
    ReplayMiss,
    Reply,
    Request,
    backend_for,
    backend_from_env,
    decision_schema,
    parse_reply,
    read_records,
    trial_files,
)
from labkit.model.local import LocalBackend
from labkit.model.ollama import OllamaBackend

TASK = Task("deploy-build", "deploy", "How do I deploy the current build?", "v2")
SEARCH = '{"action": "search", "query": "deploy build"}'
READ = '{"action": "read", "id": "deploy-v2"}'
FINAL = '{"action": "final", "answer": "docuctl ship --env staging", "citation": "deploy-v2"}'


class Scripted:
    """A backend that answers each request with the next queued text (or raises it)."""

    name = "scripted"

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests = []

    def provenance(self):
        return {"backend": self.name, "versions": {"python": "3"}}

    def complete(self, request):
        self.requests.append(request)
        item = self.replies.pop(0)
        if isinstance(item, BaseException):
            raise item
        return Reply(text=item, prompt_tokens=100 * request.turn, completion_tokens=15, latency_s=0.25)


def policy(backend, **options):
    return ModelPolicy(
        lab="docuctl",
        tools=docuctl_tools(TASK),
        instructions="Answer with one JSON action.",
        describe=describe_docuctl,
        backend=backend,
        **options,
    )


def episode(backend, task=TASK, **options):
    return run(task, policy(backend, **options), tools=docuctl_tools(task), max_turns=3, max_tools=2)


# -- the decision schema ------------------------------------------------------------------


def test_schema_has_one_shape_per_tool_plus_final():
    schema = decision_schema(docuctl_tools(TASK))
    actions = [shape["properties"]["action"]["const"] for shape in schema["anyOf"]]
    assert actions == ["search", "read", "final"]
    final = schema["anyOf"][2]
    assert final["required"] == ["action", "answer", "citation"]
    assert final["additionalProperties"] is False
    assert list(final["properties"]) == ["action", "answer", "citation"]  # action first


def test_schema_types_follow_param_kinds():
    tools = {"refund": Tool("refund", {"order": "str", "amount": "number"}, lambda order, amount: None)}
    shape = decision_schema(tools, max_chars=None)["anyOf"][0]
    assert shape["properties"]["order"] == {"type": "string"}
    assert shape["properties"]["amount"] == {"type": "number"}


@pytest.mark.parametrize(
    ("decision", "ok"),
    [
        ({"action": "search", "query": "deploy"}, True),
        ({"action": "final", "answer": "x", "citation": ""}, True),
        ({"action": "read"}, False),
        ({"action": "read", "id": "a", "extra": 1}, False),
        ({"action": "delete", "id": "a"}, False),
        ({"action": "search", "query": "x" * 101}, False),
    ],
)
def test_schema_accepts_exactly_the_decision_shapes(decision, ok):
    validator = jsonschema.Draft202012Validator(decision_schema(docuctl_tools(TASK)))
    assert validator.is_valid(decision) is ok


def test_a_tool_named_final_is_refused():
    with pytest.raises(LabError, match="may not be called 'final'"):
        ModelPolicy(
            lab="x", tools={"final": Tool("final", {}, lambda: None)}, instructions="", describe=str,
            backend=Scripted(),
        )


def test_parse_reply():
    assert parse_reply(SEARCH) == {"action": "search", "query": "deploy build"}
    with pytest.raises(ValueError, match="model reply is not JSON: '```json"):
        parse_reply('```json\n{"action": "search"}\n```')


# -- the policy ---------------------------------------------------------------------------


def test_a_model_episode_through_the_runtime():
    backend = Scripted(SEARCH, READ, FINAL)
    result = episode(backend)
    assert (result["stop"], result["answer"], result["citation"]) == (
        "final",
        "docuctl ship --env staging",
        "deploy-v2",
    )
    assert [entry["tokens"] for entry in result["trace"]] == [115, 215, 315]
    assert result["usage"]["prompt_tokens"] == 600


def test_the_model_sees_its_own_replies_and_each_result():
    backend = Scripted(SEARCH, READ, FINAL)
    episode(backend)
    third = [(m["role"], m["content"]) for m in backend.requests[2].messages]
    assert third[0] == ("system", "Answer with one JSON action.")
    assert third[1] == ("user", "Question: How do I deploy the current build?\nDocumentation version: v2")
    assert third[2] == ("assistant", SEARCH)
    assert third[3][1].startswith('Result of search: [{"id": "deploy-v2"')
    assert third[4] == ("assistant", READ)
    assert third[5][1].startswith('Result of read: {"id": "deploy-v2"')
    # Each prompt extends the previous one: what lets a backend reuse its cached tokens.
    assert backend.requests[1].messages == backend.requests[2].messages[:4]
    assert [r.turn for r in backend.requests] == [1, 2, 3]


def test_a_new_episode_forgets_the_last_one():
    backend = Scripted(SEARCH, READ, FINAL, SEARCH)
    shared = policy(backend)
    run(TASK, shared, tools=docuctl_tools(TASK))
    shared(TASK, [])
    assert len(backend.requests[-1].messages) == 2


def test_request_carries_options_and_replay_key():
    backend = Scripted(SEARCH)
    policy(backend, temperature=0.7, seed=3, trial=2, max_tokens=64)(TASK, [])
    request = backend.requests[0]
    assert (request.lab, request.case, request.trial, request.turn) == ("docuctl", "deploy-build", 2, 1)
    assert request.options() == {"temperature": 0.7, "seed": 3, "max_tokens": 64}


def test_last_usage_is_set_after_every_reply():
    shared = policy(Scripted(SEARCH))
    shared(TASK, [])
    assert shared.last_usage == {"prompt_tokens": 100, "completion_tokens": 15}


def test_unparseable_reply_is_a_counted_invalid_decision_with_its_tokens():
    result = episode(Scripted('{"action": "search", "query": "dep'))
    assert result["stop"] == "invalid_decision"
    assert result["detail"].startswith("model reply is not JSON")
    assert result["usage"]["completion_tokens"] == 15


def test_schema_violating_reply_is_an_invalid_decision():
    result = episode(Scripted('{"action": "delete", "id": "deploy-v2"}'))
    assert (result["stop"], result["tool_calls"]) == ("invalid_decision", 0)
    assert "unknown action 'delete'" in result["detail"]


def test_provider_failure_is_a_counted_provider_error():
    result = episode(Scripted(SEARCH, ProviderError("cannot reach Ollama at http://127.0.0.1:9")))
    assert (result["stop"], result["turns"]) == ("provider_error", 2)
    assert "cannot reach Ollama" in result["detail"]


def test_the_seam_must_be_told_how_a_task_is_shown():
    # labkit.model knows no lab, so it has no default way to show a task to the model.
    with pytest.raises(TypeError, match="describe"):
        ModelPolicy(lab="docuctl", tools=docuctl_tools(TASK), instructions="x", backend=Scripted())


def test_describe_and_observe_can_be_replaced():
    backend = Scripted(SEARCH, FINAL)
    shared = policy(backend, observe=lambda o: f"{o['action']} done")
    shared.describe = lambda task: f"Q: {task.question}"
    run(TASK, shared, tools=docuctl_tools(TASK))
    assert backend.requests[1].messages[1]["content"] == "Q: How do I deploy the current build?"
    assert backend.requests[1].messages[3]["content"] == "search done"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": -1}, "temperature must be a number in 0..2"),
        ({"seed": 1.5}, "seed must be an int"),
        ({"trial": -1}, "trial must be an int >= 0"),
        ({"max_tokens": 0}, "max_tokens must be an int >= 1"),
    ],
)
def test_bad_policy_options_are_lab_errors(options, message):
    with pytest.raises(LabError, match=message):
        policy(Scripted(), **options)


# -- choosing a backend -------------------------------------------------------------------


def test_backend_from_env(tmp_path):
    assert isinstance(backend_from_env({}), ReplayBackend)
    assert isinstance(backend_from_env({"LABKIT_MODEL": "local"}), LocalBackend)
    ollama = backend_from_env({"LABKIT_MODEL": "ollama:qwen2.5:0.5b", "OLLAMA_HOST": "http://10.0.0.1:1"})
    assert (
        isinstance(ollama, OllamaBackend)
        and ollama.tag == "qwen2.5:0.5b"
        and ollama.host == "http://10.0.0.1:1"
    )
    recorded = backend_from_env({"LABKIT_MODEL": "local", "LABKIT_RECORD": str(tmp_path / "r.jsonl")})
    assert isinstance(recorded, Recorder) and recorded.name == "local"


def test_a_labs_model_parameter_wins_unless_left_at_replay(tmp_path):
    env = {"LABKIT_MODEL": "ollama:qwen2.5:0.5b"}
    # Left at its default, the environment decides.
    assert backend_for("replay", env).name == "ollama:qwen2.5:0.5b"
    assert isinstance(backend_for("replay", {}), ReplayBackend)
    assert isinstance(backend_for("local", env), LocalBackend)
    assert isinstance(backend_for("local", env | {"LABKIT_RECORD": str(tmp_path / "r.jsonl")}), Recorder)
    with pytest.raises(LabError, match="is not a backend"):
        backend_for("gpt-4", {})


@pytest.mark.parametrize("spec", ["gpt-4", "ollama", "ollama:", "local:big", "replays"])
def test_unknown_model_spec_is_one_clear_error(spec):
    with pytest.raises(LabError, match="is not a backend: use replay"):
        backend_from_env({"LABKIT_MODEL": spec})


def test_recording_a_replay_is_refused(tmp_path):
    with pytest.raises(LabError, match="LABKIT_RECORD=.* needs a live model"):
        backend_from_env({"LABKIT_RECORD": str(tmp_path / "r.jsonl")})


# -- recording and replaying --------------------------------------------------------------


@pytest.fixture
def recorded(tmp_path):
    """One live-like episode recorded to docuctl-test.jsonl, and its result."""
    path = tmp_path / "docuctl-test.jsonl"
    result = episode(Recorder(Scripted(SEARCH, READ, FINAL), path, run="test run"))
    return path, result


def test_recording_writes_every_call_with_provenance(recorded):
    path, _ = recorded
    records = [record for _, record in read_records(path)]
    assert [r["turn"] for r in records] == [1, 2, 3]
    first = records[0]
    assert first["reply"] == SEARCH and first["run"] == "test run"
    assert first["usage"] == {"prompt_tokens": 100, "completion_tokens": 15}
    assert first["options"] == {"temperature": 0.0, "seed": 0, "max_tokens": 160}
    assert set(first["provenance"]) >= {"backend", "versions", "date"}
    assert first["messages"][1]["content"].startswith("Question: How do I deploy")


def test_replay_reproduces_the_recorded_episode(recorded):
    path, live = recorded
    replayed = episode(ReplayBackend([path]))
    for key in ("stop", "answer", "citation", "turns", "tool_calls", "usage"):
        assert replayed[key] == live[key]
    assert [e["decision"] for e in replayed["trace"]] == [e["decision"] for e in live["trace"]]


def test_replay_miss_names_lab_case_trial_and_turn(recorded):
    path, _ = recorded
    with pytest.raises(
        ReplayMiss, match="no recorded reply for lab 'docuctl', case 'deploy-build', trial 1, turn 1"
    ):
        episode(ReplayBackend([path]), trial=1)
    other = Task("deploy-service", "deploy", "Deploy a single service", "v1")
    with pytest.raises(ReplayMiss, match="case 'deploy-service', trial 0, turn 1"):
        episode(ReplayBackend([path]), task=other)


def test_replay_refuses_a_changed_request(recorded):
    path, _ = recorded
    with pytest.raises(ReplayMiss, match="turn 1 was asked something else: temperature is 0.5, recorded 0.0"):
        episode(ReplayBackend([path]), temperature=0.5)
    changed = ModelPolicy(
        lab="docuctl", tools=docuctl_tools(TASK), instructions="Be brief.", describe=describe_docuctl,
        backend=ReplayBackend([path]),
    )
    with pytest.raises(ReplayMiss, match=r"message 0 \(system\) differs from the recording"):
        run(TASK, changed, tools=docuctl_tools(TASK))


def test_a_recorded_provider_failure_replays_as_the_same_stop(tmp_path):
    path = tmp_path / "docuctl-fail.jsonl"
    live = episode(
        Recorder(Scripted(SEARCH, ProviderError("Ollama answered chat with HTTP 500: boom")), path)
    )
    replayed = episode(ReplayBackend([path]))
    assert live["stop"] == replayed["stop"] == "provider_error"
    assert replayed["detail"] == live["detail"] == "ProviderError: Ollama answered chat with HTTP 500: boom"


def test_two_different_replies_to_one_request_are_ambiguous(tmp_path):
    path = tmp_path / "docuctl-twice.jsonl"
    episode(Recorder(Scripted(SEARCH, READ, FINAL), path))
    episode(Recorder(Scripted(READ), path))
    with pytest.raises(ReplayMiss, match="2 different recorded replies .* pin one file"):
        episode(ReplayBackend([path]))


def test_default_replay_reads_lab_named_files_only(tmp_path):
    for name in ("docuctl.jsonl", "docuctl-a.jsonl", "docuctlx.jsonl", "refunds-a.jsonl"):
        (tmp_path / name).write_text("")
    assert [p.name for p in trial_files("docuctl", tmp_path)] == ["docuctl-a.jsonl", "docuctl.jsonl"]
    with pytest.raises(ReplayMiss, match="no recorded trials for lab 'orders'"):
        ReplayBackend(folder=tmp_path).complete(Request("orders", "c", 0, 1, messages=(), schema={}))


def test_replay_of_a_missing_file_is_a_fixture_error(tmp_path):
    with pytest.raises(FixtureError, match="nope.jsonl: trials file not found"):
        ReplayBackend([tmp_path / "nope.jsonl"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"kind": "call", "lab": "docuctl"', "line 2: not a complete JSON record"),
        ('{"kind": "note"}', "line 2: field 'kind' must be 'call' or 'episode'"),
        ('{"kind": "episode", "run": "r"}', r"line 2 \(episode\): .*required"),
    ],
)
def test_a_damaged_trials_file_names_the_line(recorded, line, message):
    path, _ = recorded
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], line, *lines[1:]]) + "\n")
    with pytest.raises(FixtureError, match=message):
        list(read_records(path))


def test_a_call_record_with_a_wrong_field_type_is_refused(recorded):
    path, _ = recorded
    record = json.loads(path.read_text().splitlines()[0])
    record["turn"] = "one"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(FixtureError, match=r"line 1 \(call\): field 'turn'"):
        list(read_records(path))


def test_the_committed_recordings_cover_every_case():
    corpus = docuctl()
    files = trial_files("docuctl")
    assert files, "fixtures/trials/docuctl-*.jsonl are missing"
    cases = {
        record["case"] for path in files for _, record in read_records(path) if record["kind"] == "episode"
    }
    assert cases == {case["id"] for case in corpus.cases + corpus.adaptive_cases}
    for path in files:
        for _, record in read_records(path):
            if record["kind"] == "call":
                provenance = record["provenance"]
                assert provenance["backend"] == "local"
                assert (
                    provenance["model_sha256"]
                    == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
                )
                assert provenance["versions"]["llama_cpp_python"] == "0.3.36"


def test_a_replayed_model_episode_on_a_real_case():
    corpus = docuctl()
    case = corpus.cases[0]
    from labkit.decision_loop.model_policy import docuctl_policy

    result = run(
        task_from(case),
        docuctl_policy("base"),
        tools=docuctl_tools(task_from(case), corpus.docs),
        max_turns=3,
        max_tools=2,
    )
    assert result["stop"] in ("final", "tool_limit", "unread_citation", "invalid_decision", "turn_limit")
    assert all("tokens" in entry for entry in result["trace"])


def test_a_late_reply_from_an_abandoned_episode_does_not_leak_into_the_next():
    late = '{"action": "search", "query": "late"}'

    class ByTurn(Scripted):
        def complete(self, request):
            self.requests.append(request)
            if request.case == "slow":
                time.sleep(0.2)  # arrives while the next episode is at its second turn
                return Reply(text=late)
            if request.turn == 2:
                time.sleep(0.4)
            return Reply(text=[SEARCH, READ, FINAL][request.turn - 1])

    backend = ByTurn()
    shared = policy(backend)
    slow_task = Task("slow", "deploy", "How do I deploy the current build?", "v2")
    assert run(slow_task, shared, tools=docuctl_tools(slow_task), step_timeout=0.05)["stop"] == "step_timeout"
    result = run(TASK, shared, tools=docuctl_tools(TASK))
    assert result["stop"] == "final"
    third = backend.requests[-1].messages
    assert (third[2]["content"], third[4]["content"]) == (SEARCH, READ)
