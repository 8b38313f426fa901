"""Running grids: the same records in-process and on a real Dask LocalCluster (two worker processes,
one per module), each key exactly once. Episodes replay the committed recordings or call the real
Ollama client against tests/fake_ollama.py, whose `docuctl_oracle` plays the scripted policy over
the wire; records are compared without timings and dates."""

import contextlib
import json
import os
from pathlib import Path

import pytest
from fake_ollama import FakeOllama, docuctl_oracle

from labkit.core.errors import LabError
from labkit.course.grid import run as grid_run
from labkit.course.grid.run import execute, local_cluster, plan
from labkit.course.grid.spec import load_spec, record_key
from labkit.model.replay import ReplayMiss

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "fixtures" / "trials" / "docuctl-smollm2-example-l2-t07.jsonl"
MODEL = "qwen2.5:0.5b"


def comparable(path):
    """The file's records as sorted JSON strings, without timings and dates."""
    out = []
    for line in Path(path).read_text().splitlines():
        record = json.loads(line)
        record.pop("elapsed_s", None)
        if record["kind"] == "call" and record["provenance"]["backend"] != "replay":
            record.pop("latency_s")
        record.get("provenance", {}).pop("date", None)
        out.append(json.dumps(record, sort_keys=True))
    return sorted(out)


def episode_keys(path):
    """The keys of the episodes in a recording, in file order (a line still being written is skipped)."""
    lines = Path(path).read_text().split("\n")[:-1]
    return [record_key(r) for r in map(json.loads, lines) if r["kind"] == "episode"]


@pytest.fixture(scope="module")
def ollama():
    """A fake Ollama for the whole module; OLLAMA_HOST set before the cluster's workers start."""
    with FakeOllama(MODEL, answer=docuctl_oracle) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OLLAMA_HOST", server.host)
        yield server


@pytest.fixture(scope="module")
def client(ollama):
    import distributed  # here, not at collection: only the worker that runs this file pays its 0.4 s

    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture
def replay_grid(tmp_path):
    """12 recorded episodes, replayed from one pinned file (each worker reads only that one)."""
    path = tmp_path / "replay.toml"
    path.write_text(
        f'models = ["replay:{RECORDING}"]\nprompts = ["example"]\nrungs = ["L2"]\n'
        'temperatures = [0.7]\nk = 2\ncases = "adaptive"'
    )
    return load_spec(path)


@pytest.fixture
def ollama_grid(tmp_path, ollama):
    path = tmp_path / "ollama.toml"
    path.write_text(
        f'models = ["ollama:{MODEL}"]\nrungs = ["L1", "L2"]\ntemperatures = [0.5]\nk = 2\ncases = "adaptive"'
    )
    return load_spec(path)  # 2 rungs × 2 trials × 6 cases = 24 episodes


def run(grid, record, client=None, **options):
    return execute(plan(grid, record), client=client, **options)


def test_the_command_on_an_existing_cluster_records_what_it_records_in_process(
    tmp_path, cli, client, replay_grid
):
    here, there = tmp_path / "here.jsonl", tmp_path / "there.jsonl"
    assert cli("grid", replay_grid.path, "--record", str(here), "--json")[0] == 0
    code, out, err = cli(
        "grid", replay_grid.path, "--record", str(there), "--scheduler", client.scheduler.address
    )
    assert code == 0, err
    assert "0 already in" in err and "12 episodes recorded" in err
    assert "replay example L2 T=0.7" in out  # the evaluation table
    assert comparable(here) == comparable(there)
    assert sorted(episode_keys(there)) == sorted(e.key() for e in replay_grid.episodes)


def test_a_grid_episode_is_the_record_labkit_trials_writes(tmp_path, cli, ollama):
    path = tmp_path / "one.toml"
    path.write_text(
        f'models = ["ollama:{MODEL}"]\nrungs = ["L3"]\ntemperatures = [0.5]\nseeds = [7]\n'
        'k = 2\ncases = "adaptive"'
    )
    grid_file, trials_file = tmp_path / "grid.jsonl", tmp_path / "trials.jsonl"
    assert cli("grid", str(path), "--record", str(grid_file))[0] == 0
    options = "--rung L3 --temperature 0.5 --seed 7 --k 2 --cases adaptive".split()
    code, _, err = cli("trials", "--model", f"ollama:{MODEL}", *options, "--record", str(trials_file))
    assert code == 0, err
    assert comparable(grid_file) == comparable(trials_file)


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path, client, ollama, ollama_grid):
    ollama.fault, ollama.delay = "slow", 0.01  # every reply takes 10 ms: episodes are in flight
    killed = []

    def kill_a_busy_worker(record):
        if not killed:
            busy = [worker for worker, keys in client.processing().items() if keys]
            killed.append(busy[0])
            try:
                client.run(os._exit, 1, workers=busy[:1])
            except Exception:  # noqa: BLE001 - the worker dies before it can answer
                pass

    record = tmp_path / "killed.jsonl"
    try:
        assert run(ollama_grid, record, client, on_episode=kill_a_busy_worker) == 24
    finally:
        ollama.fault = None
    assert killed and killed[0] not in client.scheduler_info()["workers"]  # it died; the nanny replaced it
    keys = episode_keys(record)
    assert len(keys) == len(set(keys)) == 24
    here = tmp_path / "here.jsonl"
    run(ollama_grid, here)
    assert comparable(record) == comparable(here)


def test_resume_after_an_interrupted_run_records_every_key_exactly_once(tmp_path, client, replay_grid):
    grid = replay_grid
    record = tmp_path / "out.jsonl"

    def stop_after_five(episode):
        if len(episode_keys(record)) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(grid, record, client, on_episode=stop_after_five)
    assert len(episode_keys(record)) == 5
    # A run killed while writing an episode leaves its calls and half a line: resume drops them.
    lines = record.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"kind":"episode"' in line)
    with record.open("a") as handle:
        handle.write("\n".join(lines[:first]) + "\n" + lines[first][:40])
    work = plan(grid, record)
    assert (work.done, len(work.todo), work.cut) == (5, 7, first + 1)
    assert execute(work, client=client) == 7
    keys = episode_keys(record)
    assert len(keys) == len(set(keys)) == 12
    clean = tmp_path / "clean.jsonl"
    run(grid, clean)
    assert comparable(record) == comparable(clean)
    assert plan(grid, record).todo == []


def test_a_provider_that_goes_down_stops_the_run_and_records_none_of_its_failures(
    tmp_path, ollama, ollama_grid
):
    record = tmp_path / "out.jsonl"

    def fail_after_four(episode):
        if len(episode_keys(record)) == 4:
            ollama.fault = "500"

    try:
        with pytest.raises(
            LabError,
            match=r"ollama:qwen2.5:0.5b: 3 episodes in a row ended in provider_error "
            r"\(last: .*HTTP 500.*\); stopped with 4 new episode\(s\)",
        ):
            run(ollama_grid, record, on_episode=fail_after_four)
    finally:
        ollama.fault = None
    assert len(episode_keys(record)) == 4
    assert len(plan(ollama_grid, record).todo) == 20  # the failed three run again on resume


def test_an_unrecorded_replay_request_is_one_line_and_keeps_nothing_half_done(tmp_path, cli, client):
    path = tmp_path / "miss.toml"
    path.write_text(
        'models = ["replay"]\nprompts = ["base"]\nrungs = ["L2"]\ntemperatures = [0.3]\ncases = "adaptive"'
    )  # base L2 was recorded at T=0 and T=0.7 only
    record = tmp_path / "out.jsonl"
    code, out, err = cli("grid", str(path), "--record", str(record))
    assert code == 2 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        "labkit grid: error: the recording for lab 'docuctl', case 'typo-rollback', "
        "trial 0, turn 1 was asked something else: temperature is 0.3, recorded 0.0"
    )
    assert not record.exists()
    # raised on a worker, it comes back as the same error
    with pytest.raises(ReplayMiss, match="temperature is 0.3, recorded 0.0"):
        run(load_spec(path), record, client)
    assert not record.exists()


def test_the_command_on_two_workers_prints_the_evaluation_of_a_grid_of_two_models(
    tmp_path, cli, client, monkeypatch
):
    # `--workers 2` asks local_cluster for two workers; the module's cluster (made by the same
    # local_cluster(2)) stands in, so the suite starts one cluster, not two (4 processes, ~3 CPU-s).
    asked = []

    def module_cluster(workers):
        asked.append(workers)
        return contextlib.nullcontext(client.cluster)

    monkeypatch.setattr(grid_run, "local_cluster", module_cluster)
    # Both models are asked the same first question; each episode replays from its own run's calls.
    path = tmp_path / "two.toml"
    path.write_text(
        f'models = ["replay:{RECORDING}", "ollama:{MODEL}"]\nprompts = ["example"]\n'
        'rungs = ["L2"]\ntemperatures = [0.7]\ncases = "adaptive"'
    )
    code, out, err = cli(
        "grid", str(path), "--record", str(tmp_path / "out.jsonl"), "--workers", "2", "--json"
    )
    assert code == 0, err
    summary = json.loads(out)["summary"]
    oracle = f"ollama:{MODEL} example L2 T=0.7"
    assert list(summary) == ["scripted loop", "adaptive loop", "replay example L2 T=0.7", oracle]
    # the oracle plays the scripted loop over the wire, so it scores what the scripted loop scores
    assert summary[oracle]["pass@1"] == summary["scripted loop"]["pass@1"]
    assert summary["replay example L2 T=0.7"]["cases"] == 6
    assert "12 episodes recorded" in err
    assert asked == [2]
