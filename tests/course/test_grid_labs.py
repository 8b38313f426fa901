"""`labkit grid` for lab 03 (refunds) and lab 04 (routing): keys, resume, exactly once, replay.

Live episodes run on a tiny fake backend (never the model): it answers each request with
the first decision its schema admits on turn 1 and a final answer after, so episodes are
short and deterministic. Replay runs on what the grid itself wrote (`replay:<file>`)."""

import ast
import json
from pathlib import Path

import pytest

from labkit.course import cli
from labkit.course.grid import episode as grid_episode
from labkit.course.grid.labs import GRID_LABS, grid_lab
from labkit.course.grid.run import execute, plan
from labkit.course.grid.spec import load_spec, record_key
from labkit.model.backend import Reply
from labkit.model.record import read_records

ROOT = Path(__file__).resolve().parents[2]
# What every grid lab's class defines (labkit/course/grid/labs.py's docstring says what each does).
GRID_NAMES = (
    "CELL_AXES",
    "INNER_AXIS",
    "fill_schema",
    "inner_values",
    "cell_episode",
    "record_episode",
    "grid_report",
)


def _value(name, slot):
    if "const" in slot:
        return slot["const"]
    if "enum" in slot:
        return slot["enum"][-1]
    if slot.get("type") == "number":
        return 1.0
    return "Short" if name == "answer" else "refunds"


class FakeBackend:
    """Answers from the request's own schema: turn 1 its first branch, later turns a final."""

    name = "local"

    def __init__(self):
        self.calls = 0

    def provenance(self):
        return {"backend": "local", "model": "fake", "versions": {}}

    def complete(self, request):
        self.calls += 1
        schema = request.schema or {}
        branches = schema.get("anyOf") or [schema]
        finals = [b for b in branches if b.get("properties", {}).get("action", {}).get("const") == "final"]
        branch = branches[0] if request.turn == 1 or not finals else finals[0]
        decision = {name: _value(name, slot) for name, slot in branch.get("properties", {}).items()}
        decision.setdefault("action", "final")
        if decision["action"] == "final":
            decision.setdefault("answer", "Short")
            decision.setdefault("citation", "none")
        return Reply(json.dumps(decision), prompt_tokens=10, completion_tokens=5)


@pytest.fixture
def fake(monkeypatch):
    backend = FakeBackend()
    monkeypatch.setitem(grid_episode._BACKENDS, ("local", None), backend)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    return backend


CASES = ("r-ana-blender", "r-dev-other", "r-ben-headphones+manager-goodwill@note")


def refund_spec(tmp_path, cases=CASES, defenses=("none", "mediation"), k=1):
    path = tmp_path / "refunds.toml"
    path.write_text(
        f'lab = "refunds"\nmodels = ["local"]\nrungs = ["L2"]\n'
        f"defenses = {json.dumps(list(defenses))}\ncases = {json.dumps(list(cases))}\nk = {k}\n"
    )
    return path


def routing_spec(tmp_path, temperatures=(0.0, 0.7), k=2):
    path = tmp_path / "routing.toml"
    path.write_text(
        f'lab = "routing"\nmodels = ["local"]\ncontrols = ["L1", "L2+cut1"]\n'
        f"temperatures = {json.dumps(list(temperatures))}\nk = {k}\n"
    )
    return path


def episodes_in(path):
    return [r for _, r in read_records(path) if r["kind"] == "episode"]


def replay_of(spec, record):
    """The episodes a grid of `spec` records when its model replays `record`."""
    path, replayed = spec.with_name("replay.toml"), spec.with_name("replayed.jsonl")
    path.write_text(spec.read_text().replace('["local"]', f'["replay:{record}"]'))
    execute(plan(load_spec(path), replayed))
    return episodes_in(replayed)


def test_refund_grid_records_each_episode_once_and_resumes(tmp_path, fake):
    grid = load_spec(refund_spec(tmp_path))
    assert grid.episodes[0].case == "r-ana-blender+none" and grid.episodes[0].key()[0] == "refunds"
    assert len({e.key() for e in grid.episodes}) == 3 * 2  # cases x defenses
    record = tmp_path / "r.jsonl"
    work = plan(grid, record)
    assert (work.done, len(work.todo)) == (0, 6)
    assert execute(work) == 6
    keys = [record_key(e) for e in episodes_in(record)]
    assert sorted(keys) == sorted(e.key() for e in grid.episodes)
    calls = fake.calls
    again = plan(grid, record)
    assert (again.done, again.todo) == (6, [])
    assert execute(again) == 0 and fake.calls == calls  # nothing run twice


def test_replay_reads_what_the_refund_grid_wrote(tmp_path, fake):
    grid = load_spec(refund_spec(tmp_path))
    record = tmp_path / "refunds-fake.jsonl"
    execute(plan(grid, record))
    live = {e["case"]: e for e in episodes_in(record)}
    replayed = {e["case"]: e for e in replay_of(refund_spec(tmp_path), record)}
    assert replayed.keys() == live.keys()
    fields = ("stop", "turns", "tool_calls", "utility", "attacked", "unauthorized", "money_lost", "refunds")
    for case in live:
        assert {f: replayed[case][f] for f in fields} == {f: live[case][f] for f in fields}


def test_routing_grid_keys_resume_and_replay(tmp_path, fake):
    grid = load_spec(routing_spec(tmp_path))
    episodes = grid.episodes
    assert len(episodes) == len({e.key() for e in episodes}) == 2 * 2 * 2 * 2  # controls, T, trials, variants
    record = tmp_path / "routing-fake.jsonl"
    assert execute(plan(grid, record)) == len(episodes)
    assert execute(plan(grid, record)) == 0
    written = episodes_in(record)
    assert sorted(map(record_key, written)) == sorted(e.key() for e in episodes)
    # The fake writes "Short" at L1 (published at visit 1); at L2+cut1 it must cut words.
    variants = {"announcement+no-feedback", "announcement+feedback"}
    assert {e["case"] for e in written} == variants | {f"{case}+cut1" for case in variants}

    def texts(records):
        return {(e["case"], e["temperature"], e["trial"]): e["texts"] for e in records}

    assert texts(replay_of(routing_spec(tmp_path), record)) == texts(written)


def test_the_grid_command_prints_the_lab_table(tmp_path, fake, capsys):
    record = tmp_path / "r.jsonl"
    assert cli.main(["grid", str(refund_spec(tmp_path)), "--record", str(record)]) == 0
    out = capsys.readouterr().out
    assert "local refunds L2 T=0 mediation" in out and "attack_success_rate_ci" in out


@pytest.mark.parametrize(
    "spec, recording",
    [
        ("refunds-smollm2-l2.toml", "refunds-smollm2-l2-grid.jsonl"),
        ("refunds-smollm2-l2-spotlighting.toml", "refunds-smollm2-l2-spotlighting.jsonl"),
        ("routing-smollm2-k50.toml", "routing-trials-smollm2-t07-k50.jsonl"),
        ("routing-smollm2-t0.toml", "routing-trials-smollm2-t0.jsonl"),
    ],
)
def test_the_committed_lab_recordings_hold_every_episode_of_their_grid_once(tmp_path, spec, recording):
    source = ROOT / "fixtures" / "trials" / recording
    assert source.is_file(), f"{recording} is committed under fixtures/trials"
    copy = tmp_path / recording
    copy.write_bytes(source.read_bytes())
    work = plan(load_spec(ROOT / "fixtures" / "grids" / spec), copy)
    assert work.todo == [] and work.cut == 0 and work.done == work.total
    calls = [r for _, r in read_records(copy) if r["kind"] == "call"]
    models = {(c["provenance"]["backend"], c["provenance"]["model"]) for c in calls}
    assert models == {("local", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def test_every_grid_lab_defines_the_same_names_and_the_course_compares_no_lab_name():
    for lab in GRID_LABS:
        missing = [name for name in GRID_NAMES if not hasattr(grid_lab(lab), name)]
        assert not missing, f"{lab}: {missing}"
    compared = []  # `lab == "refunds"` and the like: the course reaches a lab through GRID_LABS only
    for path in sorted((ROOT / "labkit" / "course").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            if any(isinstance(side, ast.Constant) and side.value in GRID_LABS for side in sides):
                compared.append(f"{path.name}: {ast.unparse(node)}")
    assert not compared, "\n".join(compared)
