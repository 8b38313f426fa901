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


# -- intervals on every rate (issue 19) --------------------------------------------------------


def test_summary_gives_pass_at_1_and_pass_hat_k_their_bootstrap_intervals():
    # Two cases with per-case pass rates 1.0 and 0.5: a resample of 2 cases has mean 1, 0.75
    # or 0.5, so the 95% interval is [0.5, 1.0]; pass^2 per case is 1 and 0 -> [0, 1].
    line = summary(rows({"a": [True, True], "b": [False, True]}), k_max=2).loc["p"]
    assert (line["pass@1"], line["pass@1 low"], line["pass@1 high"]) == (0.75, 0.5, 1.0)
    assert (line["pass^2"], line["pass^2 low"], line["pass^2 high"]) == (0.5, 0.0, 1.0)


def test_rate_intervals_are_seeded_and_nan_beyond_the_trials_run():
    from labkit.decision_loop.tables import rate_intervals

    episodes = rows({f"c{i}": [i % 3 == 0, i % 2 == 0] for i in range(12)})
    assert rate_intervals(episodes, 2) == rate_intervals(episodes, 2)
    found = rate_intervals(episodes, 3)
    assert found["pass@1"].low < found["pass@1"].estimate < found["pass@1"].high
    assert all(math.isnan(v) for v in (found["pass^3"].estimate, found["pass^3"].low, found["pass^3"].high))


def test_a_share_of_episodes_is_wilson_at_one_trial_and_clustered_beyond():
    from labkit.core.intervals import wilson
    from labkit.decision_loop.tables import share_interval

    once = rows({"a": [True], "b": [False], "c": [False], "d": [False]})
    assert share_interval(once, lambda row: row["passed"]) == wilson(1, 4)
    twice = rows({"a": [True, True], "b": [False, False]})
    found = share_interval(twice, lambda row: row["passed"])
    assert (found.estimate, found.low, found.high) == (0.5, 0.0, 1.0)  # two cases, not four episodes


def test_a_paired_difference_compares_the_same_cases():
    from labkit.decision_loop.tables import paired_difference

    better = rows({"a": [True], "b": [True], "c": [True], "d": [False]})
    worse = rows({"a": [False], "b": [False], "c": [False], "d": [False], "e": [True]})  # e: not shared
    found = paired_difference(better, worse)
    assert found.estimate == 0.75 and found.excludes(0)
    same = paired_difference(better, better)
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0) and not same.excludes(0)
    with pytest.raises(ValueError, match="share none"):
        paired_difference(rows({"x": [True]}), rows({"y": [True]}))


def ladder_rows_of(outcomes, prompt="example", rung="L3", temperature=0.0, policy=None):
    return [
        row | {"prompt": prompt, "rung": rung, "temperature": temperature,
               "policy": policy or f"{prompt} {rung} T={temperature:g}"}
        for row in rows(outcomes)
    ]


def test_the_ladder_table_has_an_interval_beside_every_rate():
    from labkit.decision_loop.ladder import ladder_table

    greedy = ladder_rows_of({"a": [True], "b": [False]})
    sampled = ladder_rows_of({"a": [True] * 5, "b": [True, False, False, False, False]}, temperature=0.7)
    assert "pass^5 low" not in ladder_table(greedy + sampled).columns  # as lab 02's notebook checks it
    line = ladder_table(greedy + sampled, intervals=True).loc[("example", "L3")]
    assert (line["pass@1 T=0"], line["pass@1 T=0 low"], line["pass@1 T=0 high"]) == (0.5, 0.0, 1.0)
    assert (line["pass^1"], line["pass^1 low"], line["pass^1 high"]) == (0.6, 0.2, 1.0)
    assert (line["pass^5"], line["pass^5 low"], line["pass^5 high"]) == (0.5, 0.0, 1.0)


def test_the_ladder_chart_has_error_bars():
    from matplotlib.container import ErrorbarContainer

    from labkit.decision_loop.ladder import ladder_table, plot_ladder

    sampled = ladder_rows_of({"a": [True] * 5, "b": [True, False, False, False, False]}, temperature=0.7)
    fig = plot_ladder(ladder_table(sampled, intervals=True))
    bars = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1 and bars[0].has_yerr


def test_baselines_sit_beside_the_model_with_paired_comparisons():
    from labkit.decision_loop.ladder import ladder_with_baselines, plot_with_baselines

    cases = ["a", "b", "c", "d"]
    model = ladder_rows_of({"a": [True], "b": [True], "c": [False], "d": [False]})
    scripted = ladder_rows_of({c: [c != "d"] for c in cases}, policy="scripted loop")
    best = ladder_rows_of({c: [True] for c in cases}, policy="adaptive loop")
    chance = ladder_rows_of({c: [False, False] for c in cases}, policy="random L3")
    baselines = [r | {"baseline": r["policy"]} for r in scripted + best + chance]
    table = ladder_with_baselines(model, baselines)
    assert list(table.index) == ["example L3 T=0", "scripted loop", "adaptive loop", "random L3"]
    assert table.attrs["best baseline"] == "adaptive loop"
    assert list(table["kind"]) == ["model", "baseline", "baseline", "baseline"]
    line = table.loc["example L3 T=0"]
    assert (line["pass@1"], line["vs scripted"], line["vs best"]) == (0.5, -0.25, -0.5)
    # Four cases are few: even -0.5 has an interval reaching 0 (resamples of a and b only).
    assert line["vs scripted low"] < 0 and line["vs scripted high"] == 0.0
    assert (line["vs best low"], line["vs best high"]) == (-1.0, 0.0)
    assert math.isnan(table.loc["scripted loop", "vs scripted"])
    assert math.isnan(table.loc["adaptive loop", "vs best"])
    assert table.loc["random L3", "trials"] == 2 and table.loc["random L3", "pass@1 high"] == 0.0
    fig = plot_with_baselines(table)
    assert len(fig.axes[0].patches) == 4


def test_cli_evaluate_baselines_prints_every_row_with_its_interval(recording, capsys):
    assert main(["evaluate", "--trials", str(recording), "--baselines", "--seeds", "3"]) == 0
    out = capsys.readouterr().out
    model = f"ollama:{MODEL} base L1 T=0.5"
    for row in (model, "random L0", "random L3", "search, then answer L3", "scripted loop", "adaptive loop"):
        assert row in out
    assert "1.000 [1.000, 1.000]" in out  # the adaptive loop passes all 6 adaptive cases
    assert "vs best (adaptive loop)" in out and "not distinguishable" in out
    assert main(["evaluate", "--trials", str(recording), "--baselines", "--seeds", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["best baseline"] == "adaptive loop"
    line = report["ladder"][model]
    found = (line["kind"], line["cases"], line["trials"], line["pass@1"], line["vs best"])
    assert found == ("model", 6, 2, 0.0, -1.0)
    assert report["ladder"]["random L3"]["trials"] == 3


def test_cli_evaluate_refuses_a_seed_count_out_of_range(recording, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["evaluate", "--trials", str(recording), "--baselines", "--seeds", "0"])
    assert stop.value.code == 2 and "--seeds" in capsys.readouterr().err


def test_the_chart_of_endings_draws_each_rows_first_share_with_its_wilson_interval():
    import pandas as pd

    from labkit.core.intervals import wilson
    from labkit.decision_loop.ladder import plot_shares

    counts = pd.DataFrame({"final, correct": [3, 0], "tool_limit": [7, 10]}, index=["a", "b"])
    ax = plot_shares(counts, "t").axes[0]
    bars = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    assert len(bars) == 2 and "95% interval of the 'final, correct' share" in ax.get_xlabel()
    segments = {round(float(seg[0][1])): seg for bar in bars for seg in bar.lines[2][0].get_segments()}
    low, high = wilson(3, 10).low, wilson(3, 10).high
    assert [round(x, 6) for x in (segments[1][0][0], segments[1][1][0])] == [round(low, 6), round(high, 6)]
