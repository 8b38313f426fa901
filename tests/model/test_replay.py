"""Recording live calls and replaying them: exactly the questions recorded, at the rung recorded."""

import json

import pytest
from fake_ollama import FINAL, READ, SEARCH, TASK, episode
from test_policy import Scripted

from labkit.baseline import docuctl, docuctl_tools, task_from
from labkit.core import FixtureError, ProviderError, run
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.model import ChatRequest, Recorder, ReplayBackend, ReplayMiss, read_records, trial_files
from labkit.model.local import MODEL_SHA256


@pytest.fixture
def recorded(tmp_path):
    """One live-like episode recorded to docuctl-test.jsonl, and its result."""
    path = tmp_path / "docuctl-test.jsonl"
    return path, episode(Recorder(Scripted(SEARCH, READ, FINAL), path, run="test run"))


def test_recording_writes_every_call_with_its_provenance(recorded):
    path, _ = recorded
    records = [record for _, record in read_records(path)]
    assert [r["turn"] for r in records] == [1, 2, 3]
    first = records[0]
    assert (first["reply"], first["run"], first["rung"]) == (SEARCH, "test run", "L1")
    assert first["usage"] == {"prompt_tokens": 100, "completion_tokens": 15}
    assert first["options"] == {"temperature": 0.0, "seed": 0, "max_tokens": 160}
    assert set(first["provenance"]) >= {"backend", "versions", "date"}


def test_replay_reproduces_the_recorded_episode(recorded):
    path, live = recorded
    replayed = episode(ReplayBackend([path]))
    for key in ("stop", "answer", "citation", "turns", "tool_calls", "usage"):
        assert replayed[key] == live[key]
    assert [e["decision"] for e in replayed["trace"]] == [e["decision"] for e in live["trace"]]


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        ({"trial": 1}, "no recorded reply for lab 'docuctl', case 'deploy-build', trial 1, turn 1"),
        ({"temperature": 0.5}, "turn 1 was asked something else: temperature is 0.5, recorded 0.0"),
        ({"instructions": "Be brief."}, r"message 0 \(system\) differs from the recording"),
    ],
)
def test_a_request_never_recorded_is_a_miss_naming_lab_case_trial_and_turn(recorded, asked, message):
    path, _ = recorded
    with pytest.raises(ReplayMiss, match=message):
        episode(ReplayBackend([path]), **asked)


def test_a_lab_never_recorded_is_a_miss_naming_the_lab():
    with pytest.raises(ReplayMiss, match="no recorded trials for lab 'orders'"):
        ReplayBackend().complete(ChatRequest("orders", "c", 0, 1, messages=(), schema={}))


def test_a_recorded_provider_failure_replays_as_the_same_stop(tmp_path):
    path = tmp_path / "docuctl-fail.jsonl"
    live = episode(Recorder(Scripted(SEARCH, ProviderError("HTTP 500: boom")), path))
    replayed = episode(ReplayBackend([path]))
    assert live["stop"] == replayed["stop"] == "provider_error"
    assert replayed["detail"] == live["detail"] == "ProviderError: HTTP 500: boom"


def test_two_different_replies_to_one_request_are_ambiguous_unless_a_run_is_named(tmp_path):
    path = tmp_path / "docuctl-twice.jsonl"
    episode(Recorder(Scripted(SEARCH, READ, FINAL), path, run="a"))
    episode(Recorder(Scripted(READ), path, run="b"))
    with pytest.raises(ReplayMiss, match="2 different recorded replies .* pin one file"):
        episode(ReplayBackend([path]))
    assert episode(ReplayBackend([path], run="a"))["stop"] == "final"


def test_default_replay_reads_the_labs_files_only(tmp_path):
    for name in ("docuctl.jsonl", "docuctl-a.jsonl", "docuctlx.jsonl", "refunds-a.jsonl"):
        (tmp_path / name).write_text("")
    assert [p.name for p in trial_files("docuctl", tmp_path)] == ["docuctl-a.jsonl", "docuctl.jsonl"]
    # the listing is kept until the folder changes: a recording added or removed is seen at once
    (tmp_path / "docuctl-b.jsonl").write_text("")
    (tmp_path / "docuctl.jsonl").unlink()
    assert [p.name for p in trial_files("docuctl", tmp_path)] == ["docuctl-a.jsonl", "docuctl-b.jsonl"]
    assert trial_files("docuctl", tmp_path / "absent") == []
    with pytest.raises(FixtureError, match="nope.jsonl: trials file not found"):
        ReplayBackend([tmp_path / "nope.jsonl"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"kind": "call", "lab": "docuctl"', "line 2: not a complete JSON record"),
        ('{"kind": "note"}', "line 2: field 'kind' must be 'call' or 'episode'"),
        ('{"kind": "episode", "run": "r"}', r"line 2 \(episode\): .*required"),
        ("TURN", r"line 2 \(call\): field 'turn'"),
    ],
)
def test_a_damaged_trials_file_is_one_error_naming_the_line(recorded, line, message):
    path, _ = recorded
    lines = path.read_text().splitlines()
    if line == "TURN":
        line = json.dumps(json.loads(lines[0]) | {"turn": "one"})
    path.write_text("\n".join([lines[0], line, *lines[1:]]) + "\n")
    with pytest.raises(FixtureError, match=message):
        list(read_records(path))


def test_a_recording_made_at_one_rung_is_refused_at_another(tmp_path):
    path = tmp_path / "docuctl-l2.jsonl"
    live = Scripted('{"action": "search", "query": "q"}')
    docuctl_policy("base", backend=Recorder(live, path), rung="L2")(TASK, [])
    ((_, record),) = list(read_records(path))
    assert record["rung"] == "L2"
    assert docuctl_policy("base", backend=ReplayBackend([path]), rung="L2")(TASK, [])["action"] == "search"
    with pytest.raises(ReplayMiss, match="made at rung L2, and this request is at rung L1"):
        docuctl_policy("base", backend=ReplayBackend([path]))(TASK, [])


def test_recordings_from_before_rungs_replay_as_l1_only():
    legacy = [p for p in trial_files("docuctl") if p.name == "docuctl-smollm2-base-t0.jsonl"]
    assert legacy and all("rung" not in r for _, r in read_records(legacy[0]))
    corpus = docuctl()
    task = task_from(corpus.cases[0])
    tools = docuctl_tools(task, corpus.docs)
    assert run(
        task, docuctl_policy("base", backend=ReplayBackend(legacy)), tools=tools, max_turns=3, max_tools=2
    )
    with pytest.raises(ReplayMiss, match="rung L1, and this request is at rung L2"):
        run(task, docuctl_policy("base", backend=ReplayBackend(legacy), rung="L2"), tools=tools)


def test_the_committed_recordings_are_smollm2_on_every_case():
    corpus = docuctl()
    files = trial_files("docuctl")
    records = [record for path in files for _, record in read_records(path)]
    cases = {record["case"] for record in records if record["kind"] == "episode"}
    assert cases == {case["id"] for case in corpus.cases + corpus.adaptive_cases}
    for record in records:
        if record["kind"] == "call":
            provenance = record["provenance"]
            assert (provenance["backend"], provenance["model_sha256"]) == ("local", MODEL_SHA256)
            assert provenance["versions"]["llama_cpp_python"] == "0.3.36"
