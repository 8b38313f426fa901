"""Files the commands read are untrusted data: every malformed one is one line naming the file, exit 2.

A number with thousands of digits, arrays nested past the recursion limit, NaN, an empty case list,
numbers the runtime cannot run, a trials file given twice."""

import json
import shutil

import pytest

from labkit.baseline import Task, docuctl_tools
from labkit.baseline.corpus import DOCUCTL
from labkit.core import LabError, run
from labkit.decision_loop.model_policy import describe_docuctl
from labkit.model import ModelPolicy, ReplayBackend
from labkit.model.replay import TRIALS

BIG = "9" * 5000  # past Python's 4,300-digit limit for int(str)
DEEP = "[" * 100_000 + "]" * 100_000  # past the recursion limit of the C JSON parser
HOSTILE_JSON = {
    "huge int": f'[{{"id": {BIG}}}]',
    "deep": DEEP,
    "nan": '[{"id": NaN}]',
    "infinity": '[{"id": -Infinity}]',
    "overflowing float": '[{"id": 1e400}]',
}
LINES = (TRIALS / "docuctl-smollm2-example-t0.jsonl").read_text().splitlines()
EPISODE = next(line for line in LINES if '"kind":"episode"' in line)
CALL = next(line for line in LINES if '"kind":"call"' in line)


@pytest.fixture
def corpus_dir(tmp_path):
    shutil.copytree(DOCUCTL, tmp_path / "corpus")
    return tmp_path / "corpus"


@pytest.mark.parametrize("text", [*HOSTILE_JSON.values(), "[]"], ids=[*HOSTILE_JSON, "empty list"])
def test_compare_on_a_hostile_cases_file_is_one_line_and_exit_2(cli, corpus_dir, text):
    (corpus_dir / "cases.json").write_text(text)
    code, out, err = cli("compare", "--fixtures", str(corpus_dir))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"labkit compare: error: {corpus_dir / 'cases.json'}: ")
    assert ("non-empty" if text == "[]" else "not valid JSON (") in err


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ('"turns":', f'"turns":{BIG},"x":', "line 2: "),
        ('"kind":"episode"', f'"kind":"episode","x":{DEEP}', "line 2: "),
        ('"max_turns":', '"max_turns":99,"_":', "line 2 (episode): field 'limits.max_turns'"),
        ('"max_tools":', '"max_tools":-1,"_":', "line 2 (episode): field 'limits.max_tools'"),
        ('"turns":', f'"turns":{"1" + "0" * 400},"_":', "line 2 (episode): field 'turns'"),
    ],
    ids=["huge int", "deep", "max_turns out of the runtime's range", "negative max_tools", "401-digit count"],
)
def test_evaluate_on_a_hostile_trials_line_is_one_line_naming_file_and_line(tmp_path, cli, old, new, where):
    path = tmp_path / "docuctl-bad.jsonl"
    path.write_text(CALL + "\n" + EPISODE.replace(old, new, 1) + "\n")
    code, out, err = cli("evaluate", "--trials", str(path))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"labkit evaluate: error: {path}: {where}")


def test_a_hostile_line_in_a_replay_file_is_a_setup_error_not_the_models_invalid_decision(tmp_path):
    path = tmp_path / "docuctl-bad.jsonl"
    path.write_text(CALL + "\n" + CALL.replace('"turn":', f'"turn":{BIG},"z":', 1) + "\n")
    task = Task("deploy-build", "deploy", "How do I deploy the current build?", "v2")
    policy = ModelPolicy("docuctl", docuctl_tools(task), "x", describe_docuctl, backend=ReplayBackend([path]))
    with pytest.raises(LabError, match=f"{path.name}: line 2"):
        run(task, policy, tools=docuctl_tools(task))


def test_the_same_trials_file_twice_is_refused_not_counted_twice(cli):
    path = str(TRIALS / "docuctl-smollm2-example-t0.jsonl")
    code, out, err = cli("evaluate", "--trials", path, path)
    assert (code, out) == (2, "") and "recorded twice" in err and "counts once" in err
    assert err.count("\n") == 1


def test_evaluate_refuses_to_average_the_graded_and_the_rewrite_cases_in_one_row(cli):
    ladder, rewrite = (str(TRIALS / f"{name}-smollm2-example-l3-t0.jsonl") for name in ("docuctl", "rewrite"))
    code, out, err = cli("evaluate", "--trials", ladder, rewrite, "--baselines")
    assert (code, out) == (2, "") and "pass the files of one set at a time" in err and err.count("\n") == 1


def test_another_models_run_of_the_same_name_is_exploratory_not_a_second_declared_row(cli, tmp_path):
    ours = TRIALS / "docuctl-smollm2-example-l3-t0.jsonl"
    theirs = tmp_path / "other.jsonl"
    theirs.write_text(ours.read_text().replace('"run":"SmolLM2-135M ', '"run":"OtherModel '))
    code, out, err = cli("evaluate", "--trials", str(ours), str(theirs), "--baselines", "--json")
    assert code == 0, err
    comparisons = json.loads(out)["comparisons"]
    other = [name for name in comparisons if name.startswith("OtherModel")]
    assert other and all(comparisons[name]["question"] is None for name in other)
    assert comparisons["SmolLM2-135M example L3 T=0 − scripted loop"]["question"] == "lab02-ladder"
