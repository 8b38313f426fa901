"""Lab 02: pass@1 and pass^k, stop distributions, replayed evaluation, and the two CLI commands."""

import json
import math
import os
import subprocess
import sys

import pytest
from fake_ollama import FakeOllama, docuctl_oracle

from labkit import LabError, docuctl
from labkit.core.display import result_html, trace_text
from labkit.course.cli import main
from labkit.decision_loop.evaluation import (
    evaluate_trials,
    replay_case,
    replay_trials,
    scripted_trials,
    under_limits,
)
from labkit.decision_loop.tables import pass_hat_k, reliability, stop_counts, summary
from labkit.decision_loop.trials import run_trials
from labkit.model.ollama import OllamaBackend

MODEL = "qwen2.5:0.5b"


@pytest.mark.parametrize(
    ("c", "n", "k", "expected"),
    [
        (5, 5, 5, 1.0),
        (0, 5, 1, 0.0),
        (3, 5, 1, 0.6),
        (3, 5, 2, 0.3),
        (3, 5, 3, 0.1),
        (3, 5, 4, 0.0),
        (4, 5, 4, 0.2),
    ],
)
def test_pass_hat_k(c, n, k, expected):
    assert pass_hat_k(c, n, k) == pytest.approx(expected)


def test_pass_hat_k_is_undefined_beyond_the_trials_run():
    assert math.isnan(pass_hat_k(1, 1, 2))


@pytest.mark.parametrize(("c", "n", "k"), [(6, 5, 1), (-1, 5, 1), (1, 5, 0), (1.0, 5, 1)])
def test_pass_hat_k_refuses_impossible_counts(c, n, k):
    with pytest.raises(ValueError, match="need ints 0 <= c <= n and k >= 1"):
        pass_hat_k(c, n, k)


def rows(outcomes):
    """Episode rows from {case: [passed, ...]}."""
    return [
        {
            "policy": "p",
            "case": case,
            "trial": t,
            "passed": ok,
            "stop": "final" if ok else "tool_limit",
            "turns": 3,
            "tool_calls": 2,
            "decisions": 3,
            "prompt_tokens": 300,
            "completion_tokens": 30,
            "reused_tokens": 150,
            "latency_s": 0.9,
        }
        for case, results in outcomes.items()
        for t, ok in enumerate(results)
    ]


def test_reliability_is_a_mean_over_cases():
    # τ-bench's definition: a case that passes 4 of 5 trials contributes C(4,k)/C(5,k).
    found = reliability(rows({"a": [True] * 5, "b": [True, True, True, True, False], "c": [False] * 5}))
    assert found["pass@1"] == pytest.approx((1 + 0.8 + 0) / 3)
    assert found["pass^1"] == pytest.approx(found["pass@1"])
    assert found["pass^4"] == pytest.approx((1 + 0.2 + 0) / 3)
    assert found["pass^5"] == pytest.approx(1 / 3)


def test_summary_and_stop_counts():
    episodes = rows({"a": [True, True], "b": [False, True]})
    table = summary(episodes, k_max=2)
    line = table.loc["p"].to_dict()
    assert (line["cases"], line["trials"], line["pass@1"], line["pass^2"]) == (2, 2, 0.75, 0.5)
    assert line["tools/success"] == round(8 / 3, 2)  # 4 episodes x 2 tools / 3 successes
    assert (line["tokens/decision"], line["reused %"]) == (110, 50)
    stops = stop_counts(episodes)
    assert stops.to_dict("index") == {"p": {"final, correct": 3, "tool_limit": 1}}


def test_stop_counts_split_a_final_by_its_grade():
    episodes = rows({"a": [True], "b": [False]})
    episodes[1]["stop"] = "final"  # ended final, but with the wrong answer
    assert stop_counts(episodes).to_dict("index") == {"p": {"final, correct": 1, "final, wrong": 1}}


def test_under_limits_is_the_knob_of_the_lab():
    # Lab 01's budgets (3 tools on the adaptive cases) let the adaptive loop pass 23 of 24.
    table = under_limits(4, 3)
    assert table.loc["adaptive loop"].to_dict() == {
        "passed": 23, "tool calls": 54, "final, correct": 23, "final, wrong": 1
    }
    # Two tools for every case: the six adaptive cases end at the tool limit.
    table = under_limits(3, 2)
    assert table.loc["adaptive loop", "tool_limit"] == 6 and table.loc["adaptive loop", "passed"] == 17
    # A turn fewer than search, read and answer take: nothing passes, everything hits turn_limit.
    table = under_limits(2, 2)
    assert table.loc["adaptive loop", "turn_limit"] == 24 and table["passed"].sum() == 0


def test_replay_case_is_graded_and_times_the_replay_not_the_file():
    result = replay_case("deploy-build")
    assert (result["stop"], result.correct, result["tool_calls"]) == ("tool_limit", False, 2)
    assert [e["tokens"] for e in result["trace"]] == [255, 326, 411]
    # Each decision carries the live call's latency; the runtime only waited on a lookup.
    assert all(e["recorded_s"] > 0.1 for e in result["trace"])
    expected = "outcome: no answer, expected 'docuctl ship --env staging' citing 'deploy-v2'"
    assert trace_text(result).endswith(expected)
    assert "s recorded" in result_html(result)
    solved = replay_case("deploy-build", "example", rung="L3")
    assert solved.correct and "stop: final, correct" in result_html(solved)
    assert set(solved) == set(result)  # grading adds no key to the runtime's result


def test_replay_case_of_an_unknown_case_names_the_known_ones():
    with pytest.raises(LabError, match="unknown docuctl case 'nope' \\(known: deploy-build,"):
        replay_case("nope")


def test_summary_of_a_policy_that_never_succeeds():
    line = summary(rows({"a": [False]}), k_max=2).loc["p"]
    assert line["pass@1"] == 0 and math.isnan(line["pass^2"]) and math.isnan(line["tools/success"])


def test_scripted_policies_are_run_not_assumed():
    corpus = docuctl()
    found = scripted_trials("scripted loop", corpus.cases, k=2, corpus=corpus)
    assert len(found) == 36
    assert summary(found).loc["scripted loop", "pass@1"] == round(17 / 18, 3)  # lab 01's 17/18


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 21}, "k must be an int in 1..20, got 21"),
        ({"k": 0}, "k must be an int in 1..20, got 0"),
        ({"max_tokens": 8193}, "max_tokens must be an int in 1..8192, got 8193"),
        ({"max_tokens": 0}, "max_tokens must be an int in 1..8192, got 0"),
    ],
)
def test_run_trials_refuses_limits_past_the_commands_before_recording(tmp_path, options, message):
    path = tmp_path / "docuctl-refused.jsonl"
    with pytest.raises(LabError, match=message):
        run_trials(OllamaBackend(MODEL, host="http://127.0.0.1:9"), path, **options)
    assert not path.exists() and not path.with_name(path.name + ".partial").exists()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """Two trials of the adaptive cases, recorded over the wire from an oracle 'model'."""
    path = tmp_path_factory.mktemp("trials") / "docuctl-oracle.jsonl"
    with FakeOllama(MODEL, answer=docuctl_oracle) as server:
        run_trials(OllamaBackend(MODEL, host=server.host), path, cases="adaptive", k=2, temperature=0.5)
    return path


def test_recorded_trials_replay_and_grade(recording):
    found = replay_trials(recording)
    assert len(found) == 12 and {row["policy"] for row in found} == {f"ollama:{MODEL} base L1 T=0.5"}
    assert sum(row["passed"] for row in found) == 0  # search-read-answer fails every adaptive case
    assert all(row["decisions"] == row["turns"] for row in found)


def test_evaluation_puts_the_scripted_policies_beside_the_model(recording):
    table = summary(evaluate_trials([recording], scripted_k=2))
    assert list(table.index) == ["scripted loop", "adaptive loop", f"ollama:{MODEL} base L1 T=0.5"]
    assert table.loc["adaptive loop", "pass@1"] == 1.0 and table.loc["scripted loop", "pass@1"] == 0.0
    assert table.loc[f"ollama:{MODEL} base L1 T=0.5", "tokens/decision"] == 210 + 18


def test_a_recording_that_no_longer_replays_is_refused(recording, tmp_path):
    lines = recording.read_text().splitlines()
    episode = next(i for i, line in enumerate(lines) if '"kind":"episode"' in line)
    changed = json.loads(lines[episode]) | {"stop": "budget"}
    lines[episode] = json.dumps(changed)
    path = tmp_path / "docuctl-edited.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        LabError,
        match=r"case 'typo-rollback' trial 0 no longer replays as recorded: "
        r"stop 'final' \(recorded 'budget'\)",
    ):
        replay_trials(path)


def test_calls_without_episodes_cannot_be_evaluated(recording, tmp_path):
    path = tmp_path / "docuctl-calls.jsonl"
    path.write_text(
        "".join(line + "\n" for line in recording.read_text().splitlines() if '"kind":"call"' in line)
    )
    with pytest.raises(LabError, match="no episode records"):
        replay_trials(path)


def test_committed_recordings_replay_as_recorded():
    from labkit.model import trial_files

    for path in trial_files("docuctl"):
        found = replay_trials(path)
        assert len({row["policy"] for row in found}) == 1
        assert all(row["decisions"] == row["turns"] for row in found)


# -- the CLI ------------------------------------------------------------------------------


def test_cli_evaluate_prints_the_table(recording, capsys):
    assert main(["evaluate", "--trials", str(recording)]) == 0
    out = capsys.readouterr().out
    assert "pass^5" in out and "adaptive loop" in out and "tools/success" in out and "seconds/decision" in out


def test_cli_evaluate_json(recording, capsys):
    assert main(["evaluate", "--trials", str(recording), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    model = report["summary"][f"ollama:{MODEL} base L1 T=0.5"]
    assert model["trials"] == 2 and model["pass^3"] is None  # undefined beyond 2 trials
    assert report["stops"]["adaptive loop"]["final, correct"] == 30


def test_cli_trials_end_to_end_over_the_wire(tmp_path, capsys):
    path = tmp_path / "docuctl-cli.jsonl"
    with FakeOllama(MODEL, answer=docuctl_oracle) as server:
        env = os.environ | {"OLLAMA_HOST": server.host}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "labkit",
                "trials",
                "--model",
                f"ollama:{MODEL}",
                "--cases",
                "base",
                "--k",
                "1",
                "--record",
                str(path),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert "18 episodes, 17 passed" in done.stdout  # the oracle is lab 01's scripted loop
    assert "18/18" in done.stderr  # the progress bar
    assert not path.with_name(path.name + ".partial").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evaluate", "--trials", "nope.jsonl"], "labkit evaluate: error: nope.jsonl: trials file not found"),
        (["trials", "--model", "replay", "--record", "x.jsonl"], "trials are recorded from a live model"),
        (["trials", "--model", "gpt-4", "--record", "x.jsonl"], "LABKIT_MODEL='gpt-4' is not a backend"),
        (
            ["trials", "--model", "local", "--k", "0", "--record", "x.jsonl"],
            "argument --k: must be at least 1",
        ),
        (
            ["trials", "--model", "local", "--temperature", "hot", "--record", "x"],
            "argument --temperature: not a number",
        ),
        (
            ["trials", "--model", "local", "--cases", "some", "--record", "x"],
            "argument --cases: invalid choice",
        ),
        (["trials", "--model", "local"], "the following arguments are required: --record"),
        (["evaluate", "--trials", "x", "--color"], "unrecognized arguments: --color"),
    ],
)
def test_cli_mistakes_get_one_line_and_exit_2(argv, message, capsys):
    try:
        status = main(argv)
    except SystemExit as exit:  # argparse's own errors
        status = exit.code
    err = capsys.readouterr().err
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_trials_never_overwrites_a_recording(tmp_path, capsys):
    path = tmp_path / "docuctl-x.jsonl"
    path.write_text("keep me\n")
    assert main(["trials", "--model", f"ollama:{MODEL}", "--record", str(path)]) == 2
    assert "exists: recordings are never overwritten" in capsys.readouterr().err
    assert path.read_text() == "keep me\n"


def test_cli_trials_with_the_server_down_is_one_message_and_no_file(tmp_path, capsys, monkeypatch):
    with FakeOllama(MODEL) as server:
        host = server.host
    path = tmp_path / "docuctl-down.jsonl"
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert main(["trials", "--model", f"ollama:{MODEL}", "--cases", "adaptive", "--record", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"labkit trials: error: ollama:{MODEL}: cannot reach Ollama at {host} "
        "(is `ollama serve` running?); nothing was recorded\n"
    )
    assert not path.exists() and not path.with_name(path.name + ".partial").exists()


# -- traces that tell a correct final from a wrong one -------------------------------------


def _scripted_loop(case):
    from labkit import docuctl_tools, run, scripted, task_from

    task = task_from(case)
    return run(task, scripted, tools=docuctl_tools(task), max_turns=3, max_tools=2)


def test_a_graded_trace_says_final_correct_or_final_wrong():
    from labkit.baseline.grading import graded
    from labkit.core.colours import OUTCOMES

    corpus = docuctl()
    wrong_case = next(c for c in corpus.cases if c["id"] == "rollback-restore")
    right_case = next(c for c in corpus.cases if c["id"] == "deploy-build")
    wrong = graded(_scripted_loop(wrong_case), wrong_case)
    right = graded(_scripted_loop(right_case), right_case)
    assert wrong["stop"] == right["stop"] == "final"
    assert repr(wrong).endswith(
        "outcome: wrong answer, expected 'docuctl release revert --env staging' citing 'rollback-v2'"
    )
    assert repr(right).endswith("outcome: correct")
    assert f"color:{OUTCOMES['wrong']}'>stop: final, wrong" in result_html(wrong)
    assert f"color:{OUTCOMES['correct']}'>stop: final, correct" in result_html(right)
    # Ungraded, a final is neither: no green, no "correct".
    bare = result_html(_scripted_loop(wrong_case))
    assert ">stop: final</b>" in bare and OUTCOMES["correct"] not in bare


def test_html_trace_keeps_times_and_commands_whole_and_text_left():
    case = docuctl().cases[0]
    page = result_html(_scripted_loop(case))
    # The command is one unbreakable piece (a break inside "--env" reads as another flag).
    assert "<span style='white-space:nowrap'>docuctl ship --env staging</span>" in page
    assert "nowrap'>final(answer=&#x27;docuctl ship --env staging&#x27;</span>, <span" in page
    assert page.count("<td style='white-space:nowrap;vertical-align:top'>") == 3  # the time column
    assert page.count("<td style='text-align:left;vertical-align:top'>") == 9  # turn, decision, observation
