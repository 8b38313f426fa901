"""Grid specs: what a grid expands to, what it resumes, and one line with exit status 2 for every bad spec."""

import json
import re
import shutil
from pathlib import Path

import pytest

from labkit.core.errors import FixtureError
from labkit.course.argtypes import SEED_MAX
from labkit.course.grid.run import plan
from labkit.course.grid.spec import load_spec
from labkit.decision_loop.trials import cases_of

ROOT = Path(__file__).resolve().parents[2]
GRIDS, TRIALS = ROOT / "fixtures" / "grids", ROOT / "fixtures" / "trials"


def spec(tmp_path, text, name="grid.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_grid_expands_to_every_cell_trial_and_case_in_order(tmp_path):
    text = 'models = ["replay", "local"]\nrungs = ["L1", "L3"]\ntemperatures = [0.7]\nseeds = [3, 9]\nk = 2\n'
    grid = load_spec(spec(tmp_path, text + 'cases = ["deploy-build", "logs-tail"]'))
    episodes = grid.episodes
    assert len(episodes) == 2 * 2 * 2 * 2 * 2 and grid.cells == 8  # models × rungs × seeds (× k × cases)
    first = episodes[0]
    assert (first.model, first.prompt, first.rung, first.temperature) == ("replay", "base", "L1", 0.7)
    cases = [(e.seed, e.case, e.trial) for e in episodes[:4]]
    assert cases == [(3, "deploy-build", 0), (3, "logs-tail", 0), (3, "deploy-build", 1), (3, "logs-tail", 1)]
    # trials' default label, plus the seed because seeds vary; the local model's name as trials spells it
    assert first.label == "replay base L1 T=0.7 seed=3"
    assert episodes[-1].label == "SmolLM2-135M base L3 T=0.7 seed=9"
    # the key is the seed the episode runs with: the cell's seed + trial
    assert episodes[2].key() == ("docuctl", "replay", "base", "L1", 0.7, 4, "deploy-build", 1)
    assert len({e.key() for e in episodes}) == len(episodes)


def test_defaults_case_sets_and_json_read_as_toml(tmp_path):
    grid = load_spec(spec(tmp_path, '{"models": ["local"], "cases": "adaptive"}', "grid.json"))
    assert [e.case for e in grid.episodes] == [c["id"] for c in cases_of("adaptive")]
    first = grid.episodes[0]
    assert (first.prompt, first.rung, first.temperature, first.max_tokens) == ("base", "L1", 0, 160)
    assert first.label == "SmolLM2-135M base L1 T=0"  # exactly `labkit trials`' default
    axes = {"models": ["replay"], "prompts": ["example"], "rungs": ["L2", "L3"], "temperatures": [0.7]}
    axes |= {"seeds": [0], "k": 2, "cases": "adaptive"}
    from_json = load_spec(spec(tmp_path, json.dumps(axes), "grid.json"))
    assert from_json.episodes == load_spec(GRIDS / "replay-small.toml").episodes


def test_the_committed_example_grids_load():
    sizes = {path.name: len(load_spec(path).episodes) for path in sorted(GRIDS.iterdir())}
    assert sizes == {
        "ladder-base-t07.toml": 2 * 5 * 24,
        "local-smoke.toml": 24,
        "replay-small.toml": 24,
        "study.json": 2 * 2 * 4 * 2 * 5 * 24,
        "refunds-smollm2-l2.toml": 3 * 154,
        "refunds-smollm2-l2-requests.toml": 3 * 280,
        "refunds-smollm2-l2-spotlighting.toml": 82,
        "routing-smollm2-k50.toml": 3 * 2 * 50,
        "routing-smollm2-t0.toml": 3 * 2,
        "rewrite-smollm2-base-l3-t0.toml": 40,
        "rewrite-smollm2-example-l3-t0.toml": 40,
        "rewrite-smollm2-example-l3-t07.toml": 5 * 40,
    }


def local_example_l2(tmp_path, extra=""):
    """A grid of the local model with the example prompt, T=0.7 (as one committed recording)."""
    text = 'models = ["local"]\nprompts = ["example"]\ntemperatures = [0.7]\n' + extra
    return load_spec(spec(tmp_path, text, f"grid{abs(hash(extra))}.toml"))


def recording(tmp_path):
    """A copy of what `labkit trials --model local --prompt example --rung L2 --k 5 -T 0.7` recorded."""
    record = tmp_path / "out.jsonl"
    shutil.copy(TRIALS / "docuctl-smollm2-example-l2-t07.jsonl", record)
    return record


def test_a_grid_of_the_same_settings_resumes_a_trials_recording_as_complete(tmp_path):
    record = recording(tmp_path)
    work = plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 5'), record)
    assert (work.done, work.todo) == (120, [])
    more = plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 6'), record)
    assert len(more.todo) == 24 and {(e.trial, e.seed + e.trial) for e in more.todo} == {(5, 5)}


def test_resuming_another_grids_recording_is_refused_and_cuts_nothing(tmp_path):
    record = recording(tmp_path)
    with record.open("a") as handle:
        handle.write('{"kind":"call","run":"SmolLM2-135M example L2 T=0.7","cas')  # half a line
    before = record.read_bytes()
    with pytest.raises(FixtureError, match="line 401: not a complete JSON record"):
        plan(local_example_l2(tmp_path, 'rungs = ["L3"]\nk = 5'), record)
    assert record.read_bytes() == before
    record = recording(tmp_path)
    with pytest.raises(FixtureError, match=r"line 1: a call of run 'SmolLM2-135M example L2 T=0.7', which"):
        plan(local_example_l2(tmp_path, 'rungs = ["L3"]\nk = 5'), record)
    with pytest.raises(FixtureError, match=r"out.jsonl: line \d+: case '\S+' trial 3 of .* is not in grid"):
        plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 3'), record)  # trials 3 and 4 are not
    with pytest.raises(FixtureError, match=r"recorded with run, max_tokens, budget_tokens .*160.*64"):
        plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 5\nmax_tokens = 64'), record)
    # LABKIT_RECORD writes calls without a run label and no episodes: not a grid's recording
    calls = [line for line in record.read_text().splitlines() if '"kind":"call"' in line][:3]
    record.write_text("\n".join(line.replace('"run":', '"was":') for line in calls) + "\n")
    before = record.read_text()
    with pytest.raises(FixtureError, match=r"out.jsonl: line 1: a call of run None, which is not in grid"):
        plan(local_example_l2(tmp_path, 'rungs = ["L2"]'), record)
    assert record.read_text() == before


LOCAL = 'models = ["local"]\n'
BAD = [  # (the spec, what its one line says)
    (LOCAL + 'colours = ["red"]', "('colours' was unexpected)"),
    ('prompts = ["base"]', "'models' is a required property"),
    (LOCAL + 'k = "5"', "field 'k': '5' is not of type 'integer'"),
    (LOCAL + "k = 101", "field 'k': 101 is greater than the maximum of 100"),
    (LOCAL + f"seeds = [{SEED_MAX}]", "field 'seeds[0]'"),
    (LOCAL + "temperatures = [0.0, 2.5]", "field 'temperatures[1]': 2.5 is greater"),
    (LOCAL + "temperatures = [0.0, nan]", "field 'temperatures[1]': not a finite number"),
    (LOCAL + "k = inf", "field 'k': inf is not of type 'integer'"),
    (LOCAL + "k = 1.0", "field 'k': must be a whole number written without a decimal point, got 1.0"),
    (LOCAL + "seeds = [0, 1.0]", "field 'seeds[1]': must be a whole number written without a decimal"),
    (LOCAL + "max_tokens = 64.0", "field 'max_tokens': must be a whole number"),
    (LOCAL + "temperatures = [1, 1.0]", "'temperatures': [1, 1.0] has non-unique"),
    ('models = ["gpt-4"]', "field 'models[0]': 'gpt-4' is not a backend"),
    ('models = ["openai: "]', "field 'models[0]': 'openai: ': openai:<model> needs"),
    ('models = ["replay:nowhere.jsonl"]', "nowhere.jsonl: trials file not found"),
    ('models = ["replay", "replay:fixtures/trials/docuctl-smollm2-base-t0.jsonl"]', "are both 'replay'"),
    (LOCAL + 'prompts = ["terse"]', "field 'prompts[0]': 'terse' is not one of"),
    (LOCAL + 'cases = "hard"', "field 'cases': must be one of base, adaptive"),
    (LOCAL + 'cases = ["deploy-build", "fly"]', "field 'cases[1]': no docuctl case"),
    ("models = [local", "not valid TOML"),
    (LOCAL + 'lab = "cooking"', "field 'lab': must be one of docuctl, refunds"),
    (LOCAL + 'lab = "refunds"\ncases = ["r-nobody"]', "field 'cases[0]'"),
    (LOCAL + 'lab = "refunds"\ncases = ["r-ana-blender+manager-goodwill"]', "field 'cases[0]'"),
    (LOCAL + 'lab = "refunds"\ndefenses = ["wishful"]', "field 'defenses[0]'"),
    (LOCAL + 'lab = "refunds"\nrungs = ["L3"]', "field 'rungs[0]'"),
    (LOCAL + 'lab = "routing"\ncontrols = ["L9"]', "field 'controls[0]'"),
    (LOCAL + 'lab = "routing"\nprompts = ["base"]', "('prompts' was unexpected)"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_spec_is_one_line_and_exit_2_and_writes_nothing(cli, tmp_path, monkeypatch, text, message):
    monkeypatch.chdir(ROOT)  # replay:<file> paths are relative
    path = spec(tmp_path, text)
    code, out, err = cli("grid", str(path), "--record", str(tmp_path / "out.jsonl"))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"labkit grid: error: {path}: ") and message in err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nowhere.toml"], "nowhere.toml: grid spec not found"),
        ([str(GRIDS / "study.json"), "--workers", "0"], "--workers: must be at least 1"),
        ([str(GRIDS / "study.json"), "--workers", "2", "--scheduler", "tcp://x:1"], "not allowed with"),
        ([str(GRIDS / "replay-small.toml"), "--colour"], "unrecognized arguments: --colour"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(cli, tmp_path, argv, message):
    code, out, err = cli("grid", *argv, "--record", str(tmp_path / "out.jsonl"))
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("content", ["my notes, no newline at the end", "", "line one\nline two"])
def test_grid_record_refuses_a_file_that_is_not_its_recording_and_leaves_it_whole(cli, tmp_path, content):
    replay = TRIALS / "docuctl-smollm2-base-t0.jsonl"
    path = spec(tmp_path, f'models = ["replay:{replay}"]\ncases = "adaptive"')
    notes = tmp_path / "notes.txt"
    notes.write_text(content)
    code, out, err = cli("grid", str(path), "--record", str(notes))
    if content == "":  # an empty file is an empty recording: nothing to refuse
        assert code == 0, err
        return
    assert code == 2 and out == "" and err.count("\n") == 1 and "removed" not in err
    assert f"not a recording of grid {path}; it was left as it is" in err
    assert notes.read_text() == content
    code, out, err = cli("grid", str(path), "--record", str(path))
    assert code == 2 and "is the grid spec itself" in err and path.read_text().startswith("models")


def test_a_spec_of_billions_of_episodes_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    from labkit.course.grid import spec as grid_spec

    models = json.dumps([f"ollama:m{i}" for i in range(100)])
    temperatures = json.dumps([round(i * 0.02, 2) for i in range(100)])
    text = f"models = {models}\ntemperatures = {temperatures}\nseeds = {json.dumps(list(range(100)))}\n"
    path = spec(tmp_path, text + 'k = 20\ncases = "all"\nrungs = ["L1", "L2", "L3"]', "huge.toml")
    monkeypatch.setattr(grid_spec, "_episode", lambda *a: pytest.fail("an episode was built"))
    message = f"{path}: 1,440,000,000 episodes; a grid holds at most 100,000"
    with pytest.raises(FixtureError, match=re.escape(message)):
        load_spec(path)
