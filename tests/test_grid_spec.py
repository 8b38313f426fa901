"""Grid specs: what a grid expands to, and one line with exit status 2 for every bad spec."""

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

GRIDS = Path(__file__).resolve().parents[1] / "fixtures" / "grids"
TRIALS = Path(__file__).resolve().parents[1] / "fixtures" / "trials"


def spec(tmp_path, text, name="grid.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_grid_expands_to_every_cell_trial_and_case_in_order(tmp_path):
    grid = load_spec(
        spec(
            tmp_path,
            'models = ["replay", "local"]\nrungs = ["L1", "L3"]\n'
            'temperatures = [0.7]\nseeds = [3, 9]\nk = 2\ncases = ["deploy-build", "logs-tail"]',
        )
    )
    episodes = grid.episodes()
    assert len(episodes) == 2 * 2 * 2 * 2 * 2  # models × rungs × seeds × k × cases (one prompt, one T)
    first = episodes[0]
    assert (
        first.model,
        first.prompt,
        first.rung,
        first.temperature,
        first.seed,
        first.case,
        first.trial,
    ) == ("replay", "base", "L1", 0.7, 3, "deploy-build", 0)
    assert [(e.case, e.trial) for e in episodes[:4]] == [
        ("deploy-build", 0),
        ("logs-tail", 0),
        ("deploy-build", 1),
        ("logs-tail", 1),
    ]
    # trials' default label, plus the seed because seeds vary; the local model's name as trials spells it
    assert first.label == "replay base L1 T=0.7 seed=3"
    assert episodes[-1].label == "SmolLM2-135M base L3 T=0.7 seed=9"
    # the key is the seed the episode runs with: the cell's seed + trial
    assert episodes[2].key() == ("docuctl", "replay", "base", "L1", 0.7, 4, "deploy-build", 1)
    assert len({e.key() for e in episodes}) == len({e.task_key() for e in episodes}) == len(episodes)


def test_defaults_and_case_sets(tmp_path):
    grid = load_spec(spec(tmp_path, '{"models": ["local"], "cases": "adaptive"}', "grid.json"))
    assert (grid.prompts, grid.rungs, grid.temperatures, grid.seeds, grid.k, grid.max_tokens) == (
        ("base",),
        ("L1",),
        (0.0,),
        (0,),
        1,
        160,
    )
    assert grid.cases == tuple(c["id"] for c in cases_of("adaptive"))
    assert grid.episodes()[0].label == "SmolLM2-135M base L1 T=0"  # exactly `labkit trials`' default


def test_a_grid_of_an_openai_compatible_model_loads_as_labkit_trials_takes_it(tmp_path):
    grid = load_spec(spec(tmp_path, 'models = ["openai:smollm2", "ollama:qwen2.5:0.5b"]\ncases = "adaptive"'))
    first = grid.episodes()[0]
    assert first.model == "openai:smollm2" and first.key()[1] == "openai:smollm2"
    assert first.label == "openai:smollm2 base L1 T=0"


def test_the_committed_example_grids_load():
    sizes = {path.name: len(load_spec(path).episodes()) for path in sorted(GRIDS.iterdir())}
    assert sizes == {"ladder-base-t07.toml": 2 * 5 * 24, "local-smoke.toml": 24, "replay-small.toml": 24,
                     "study.json": 2 * 2 * 4 * 2 * 5 * 24, "refunds-smollm2-l2.toml": 4 * 28,
                     "routing-smollm2-k5.toml": 3 * 2 * 2 * 5}


def local_example_l2(tmp_path, extra=""):
    """A grid of the local model with the example prompt at L2, T=0.7 (as one committed recording)."""
    text = 'models = ["local"]\nprompts = ["example"]\ntemperatures = [0.7]\n' + extra
    return load_spec(spec(tmp_path, text, f"grid{abs(hash(extra))}.toml"))


def recording(tmp_path):
    """A copy of the recording `labkit trials --model local --prompt example --rung L2 --k 5 -T 0.7` made."""
    record = tmp_path / "out.jsonl"
    shutil.copy(TRIALS / "docuctl-smollm2-example-l2-t07.jsonl", record)
    return record


def test_a_grid_of_the_local_model_resumes_a_trials_recording_as_complete(tmp_path):
    # The same model, prompt, rung, temperature and seeds give the same keys and labels as
    # `labkit trials` wrote: a grid finds nothing left to run in that recording.
    record = recording(tmp_path)
    work = plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 5'), record)
    assert (work.done, work.todo) == (120, [])
    more = plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 6'), record)
    assert len(more.todo) == 24 and {(e.trial, e.seed + e.trial) for e in more.todo} == {(5, 5)}


def test_resuming_another_grids_recording_is_refused(tmp_path):
    record = recording(tmp_path)
    with pytest.raises(
        FixtureError,
        match=r"out.jsonl: line 1: a call of run 'SmolLM2-135M example L2 T=0.7', "
        r"which is not in grid",
    ):
        plan(local_example_l2(tmp_path, 'rungs = ["L3"]\nk = 5'), record)
    with pytest.raises(FixtureError, match=r"out.jsonl: line \d+: case '\S+' trial 3 of .* is not in grid"):
        plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 3'), record)  # trials 3 and 4 are not
    with pytest.raises(FixtureError, match=r"recorded with run, max_tokens, budget_tokens .*160.*64"):
        plan(local_example_l2(tmp_path, 'rungs = ["L2"]\nk = 5\nmax_tokens = 64'), record)


def test_a_recording_of_calls_made_outside_the_grid_is_refused_and_left_as_it_is(tmp_path):
    # LABKIT_RECORD writes calls without a run label and no episodes: not a grid's recording.
    record = recording(tmp_path)
    calls = [line for line in record.read_text().splitlines() if '"kind":"call"' in line][:3]
    record.write_text("\n".join(line.replace('"run":', '"was":') for line in calls) + "\n")
    before = record.read_text()
    with pytest.raises(FixtureError, match=r"out.jsonl: line 1: a call of run None, which is not in grid"):
        plan(local_example_l2(tmp_path, 'rungs = ["L2"]'), record)
    assert record.read_text() == before


BAD = {
    "unknown axis": ('models = ["local"]\ncolours = ["red"]', "unknown axis 'colours'"),
    "no models": ('prompts = ["base"]', "field 'models': 'models' is a required property"),
    "bad type": ('models = ["local"]\nk = "5"', "field 'k': '5' is not of type 'integer'"),
    "float count": ('models = ["local"]\nk = 2.0', "field 'k': 2.0 is not an integer"),
    "k too small": ('models = ["local"]\nk = 0', "field 'k': 0 is less than the minimum of 1"),
    "k too large": ('models = ["local"]\nk = 21', "field 'k': 21 is greater than the maximum of 20"),
    "seed too large": (f'models = ["local"]\nseeds = [{SEED_MAX}]', "field 'seeds[0]'"),
    "temperature": (
        'models = ["local"]\ntemperatures = [0.0, 2.5]',
        "field 'temperatures[1]': 2.5 is greater",
    ),
    "same temperature": (
        'models = ["local"]\ntemperatures = [1, 1.0]',
        "'temperatures': [1, 1.0] has non-unique",
    ),
    "unknown model": ('models = ["gpt-4"]', "field 'models[0]': 'gpt-4' is not a backend"),
    "openai without a model": (
        'models = ["openai: "]', "field 'models[0]': 'openai: ': openai:<model> needs a model name"
    ),
    "missing replay file": ('models = ["replay:nowhere.jsonl"]', "nowhere.jsonl: trials file not found"),
    "models sharing a label": (
        'models = ["replay", "replay:fixtures/trials/docuctl-smollm2-base-t0.jsonl"]',
        "are both 'replay'",
    ),
    "unknown prompt": (
        'models = ["local"]\nprompts = ["terse"]',
        "field 'prompts[0]': 'terse' is not one of",
    ),
    "unknown rung": ('models = ["local"]\nrungs = ["L9"]', "field 'rungs[0]': 'L9' is not one of"),
    "unknown case set": (
        'models = ["local"]\ncases = "hard"',
        "field 'cases': must be one of base, adaptive",
    ),
    "unknown case": (
        'models = ["local"]\ncases = ["deploy-build", "fly"]',
        "field 'cases[1]': no docuctl case",
    ),
    "repeated value": ('models = ["local", "local"]', "field 'models': ['local', 'local'] has non-unique"),
    "not toml": ("models = [local", "not valid TOML"),
    "empty file": ("", "field 'models': 'models' is a required property"),
}


@pytest.mark.parametrize("name", BAD)
def test_a_bad_spec_is_one_line_and_exit_2_and_writes_nothing(cli, tmp_path, monkeypatch, name):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # replay:<file> paths are relative
    text, message = BAD[name]
    path = spec(tmp_path, text)
    record = tmp_path / "out.jsonl"
    code, out, err = cli("grid", str(path), "--record", str(record))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"labkit grid: error: {path}: ")
    assert message in err
    assert not record.exists()


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
    record = tmp_path / "out.jsonl"
    code, out, err = cli("grid", *argv, "--record", str(record))
    assert code == 2 and message in err and err.count("\n") == 1
    assert not record.exists()


def test_a_spec_in_json_reads_as_the_same_grid_in_toml(tmp_path):
    axes = {
        "models": ["replay"],
        "prompts": ["example"],
        "rungs": ["L2", "L3"],
        "temperatures": [0.7],
        "seeds": [0],
        "k": 2,
        "cases": "adaptive",
    }
    from_json = load_spec(spec(tmp_path, json.dumps(axes), "grid.json"))
    from_toml = load_spec(GRIDS / "replay-small.toml")
    assert from_json.episodes() == from_toml.episodes()


@pytest.mark.parametrize("content", ["my notes, no newline at the end", "", "line one\nline two"])
def test_grid_record_refuses_a_file_that_is_not_its_recording_and_leaves_it_whole(cli, tmp_path, content):
    # A one-line file without a trailing newline used to be cut to nothing as "an episode cut
    # off by an interrupted run".
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


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_grid_record_refuses_the_spec_itself(cli, tmp_path, suffix):
    text = ('{"models": ["replay"], "cases": "adaptive"}' if suffix == ".json"
            else 'models = ["replay"]\ncases = "adaptive"')
    path = spec(tmp_path, text, f"grid{suffix}")
    code, out, err = cli("grid", str(path), "--record", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "is the grid spec itself" in err
    assert path.read_text() == text


def test_grid_record_cuts_nothing_from_another_grids_recording(tmp_path):
    record = recording(tmp_path)
    with record.open("a") as handle:
        handle.write('{"kind":"call","run":"SmolLM2-135M example L2 T=0.7","cas')  # half a line
    before = record.read_bytes()
    with pytest.raises(FixtureError):
        plan(local_example_l2(tmp_path, 'rungs = ["L3"]\nk = 5'), record)
    assert record.read_bytes() == before


@pytest.mark.parametrize(("axes", "field"), [
    ('temperatures = [0.0, nan]', "temperatures[1]"),
    ('temperatures = [inf]', "temperatures[0]"),
    ('temperatures = [-inf, 0.5]', "temperatures[0]"),
    ('k = nan', "k"),
])
def test_a_spec_with_nan_or_infinity_is_refused_by_the_loader_naming_file_and_field(cli, tmp_path, axes,
                                                                                    field):
    path = spec(tmp_path, f'models = ["replay"]\n{axes}')
    with pytest.raises(FixtureError, match=re.escape(f"{path}: field '{field}': not a finite number")):
        load_spec(path)
    code, out, err = cli("grid", str(path), "--record", str(tmp_path / "out.jsonl"))
    assert code == 2 and err.startswith(f"labkit grid: error: {path}: field '{field}': not a finite number")


def test_a_spec_of_billions_of_episodes_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    from labkit.course.grid import spec as grid_spec

    models = json.dumps([f"ollama:m{i}" for i in range(100)])
    temperatures = json.dumps([round(i * 0.02, 2) for i in range(100)])
    seeds = json.dumps(list(range(100)))
    path = spec(tmp_path, f"models = {models}\ntemperatures = {temperatures}\nseeds = {seeds}\n"
                          'k = 20\ncases = "all"\nrungs = ["L1", "L2", "L3"]', "huge.toml")
    monkeypatch.setattr(grid_spec.Grid, "cells", lambda self: pytest.fail("the grid was built"))
    monkeypatch.setattr(grid_spec.Grid, "episodes", lambda self: pytest.fail("the grid was built"))
    with pytest.raises(FixtureError, match=rf"^{path}: 1,440,000,000 episodes; a grid holds at most 100,000"):
        load_spec(path)
