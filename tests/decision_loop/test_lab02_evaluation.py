"""Lab 02's evaluation: pass@1 and pass^k with their intervals, replayed and recorded trials, the
ladder's tables and charts, and the `labkit evaluate` and `labkit trials` commands."""

import json
import math
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
from fake_ollama import FakeOllama, docuctl_oracle

from labkit.baseline import docuctl
from labkit.core import LabError, questions, stats
from labkit.core.stats import exact
from labkit.decision_loop import ladder, tables
from labkit.decision_loop.evaluation import (
    evaluate_trials,
    replay_case,
    replay_trials,
    scripted_trials,
    under_limits,
)
from labkit.decision_loop.trials import run_trials
from labkit.model import trial_files
from labkit.model.ollama import OllamaBackend
from labkit.model.replay import TRIALS

MODEL = "qwen2.5:0.5b"
RUN = f"ollama:{MODEL} base L1 T=0.5"


def test_pass_hat_k_is_the_chance_that_k_trials_drawn_without_replacement_all_pass():
    cases = [(5, 5, 5, 1.0), (0, 5, 1, 0.0), (3, 5, 1, 0.6), (3, 5, 2, 0.3), (3, 5, 4, 0.0), (4, 5, 4, 0.2)]
    assert [tables.pass_hat_k(c, n, k) for c, n, k, _ in cases] == pytest.approx([p for *_, p in cases])
    assert math.isnan(tables.pass_hat_k(1, 1, 2))  # more trials asked than were run


@pytest.mark.parametrize(("c", "n", "k"), [(6, 5, 1), (-1, 5, 1), (1, 5, 0), (1.0, 5, 1)])
def test_pass_hat_k_refuses_impossible_counts(c, n, k):
    with pytest.raises(ValueError, match="need ints 0 <= c <= n and k >= 1"):
        tables.pass_hat_k(c, n, k)


COSTS = {"turns": 3, "tool_calls": 2, "decisions": 3, "prompt_tokens": 300, "completion_tokens": 30}
COSTS |= {"reused_tokens": 150, "latency_s": 0.9}


def rows(outcomes, **labels):
    """Episode rows from {case: [passed, ...]}."""
    return [
        {"policy": "p", "case": case, "trial": t, "passed": ok, "stop": "final" if ok else "tool_limit"}
        | COSTS
        | labels
        for case, results in outcomes.items()
        for t, ok in enumerate(results)
    ]


def test_summary_is_a_mean_over_cases_with_intervals_and_costs():
    # τ-bench's definition: a case that passes 4 of 5 trials contributes C(4,k)/C(5,k).
    line = tables.summary(rows({"a": [True] * 5, "b": [True] * 4 + [False], "c": [False] * 5})).loc["p"]
    assert (line["pass@1"], line["pass^1"], line["pass^4"], line["pass^5"]) == (0.6, 0.6, 0.4, 0.333)
    line = tables.summary(rows({"a": [True, True], "b": [False, True]}), k_max=2).loc["p"]
    # Per-case rates 1.0 and 0.5: Wilson over the 2 cases at 0.75; pass^2 is 1 and 0: exact, 1 of 2.
    assert (line["pass@1"], line["pass@1 low"], line["pass@1 high"]) == (0.75, 0.198, 0.973)
    assert (line["pass^2"], line["pass^2 low"], line["pass^2 high"]) == (0.5, 0.013, 0.987)
    assert (line["tools/success"], line["tokens/decision"], line["reused %"]) == (round(8 / 3, 2), 110, 50)
    never = tables.summary(rows({"a": [False]}), k_max=2).loc["p"]
    assert never["pass@1"] == 0 and math.isnan(never["pass^2"]) and math.isnan(never["tools/success"])


def test_stop_counts_split_a_final_by_its_grade():
    episodes = rows({"a": [True, True], "b": [False, False]})
    episodes[3]["stop"] = "final"  # ended final, but with the wrong answer
    assert tables.stop_counts(episodes).to_dict("index") == {
        "p": {"final, correct": 2, "final, wrong": 1, "tool_limit": 1}
    }


def test_a_rate_is_over_cases_wilson_where_each_case_agrees_with_itself():
    once = rows({"a": [True], "b": [False], "c": [False], "d": [False]})
    assert tables.rate_intervals(once, 1)["pass@1"] == exact(1, 4)  # one trial a case: exact
    agreeing = tables.rate_intervals(rows({"a": [True] * 3, "b": [False] * 3}), 3)
    assert agreeing["pass@1"] == agreeing["pass^3"] == exact(1, 2)  # two cases, not six episodes
    never = tables.rate_intervals(rows({c: [False] * 5 for c in "abcdef"}))["pass^5"]
    assert (never.estimate, never.low, round(never.high, 3)) == (0.0, 0.0, 0.459)  # never zero width


def test_a_paired_comparison_is_newcombe_and_mcnemar_at_one_trial_and_names_its_mde():
    better = rows({"a": [True], "b": [True], "c": [True], "d": [False]})
    worse = rows({"a": [False], "b": [False], "c": [False], "d": [False], "e": [True]})  # e: not shared
    found = tables.compare_runs("better − worse", better, worse)
    assert (found.n, found.test, found.p, found.interval.method) == (
        4,
        "exact McNemar",
        0.25,
        "MOVER over units",
    )
    assert found.interval.estimate == 0.75 and not found.interval.excludes(0)  # and 3-0 cannot reject
    assert found.verdict == "not distinguishable (no detectable gain fits: b leaves 1.00)"
    against = tables.compare_runs("better − a coin", better, dict.fromkeys("abcd", 0.5))  # an exact baseline
    assert (against.test, against.interval.estimate) == ("sign-flip permutation", 0.25)
    with pytest.raises(ValueError, match="share no unit"):
        tables.compare_runs("x", rows({"x": [True]}), rows({"y": [True]}))


# -- the ladder --------------------------------------------------------------------------------


def on_ladder(outcomes, temperature=0.0, policy=None):
    policy = policy or f"example L3 T={temperature:g}"
    return rows(outcomes, prompt="example", rung="L3", temperature=temperature, policy=policy)


def test_the_ladder_table_gives_every_rate_its_interval_over_cases():
    greedy = on_ladder({"a": [True], "b": [False]})
    sampled = on_ladder({"a": [True] * 5, "b": [True, False, False, False, False]}, temperature=0.7)
    assert "pass^5 low" not in ladder.ladder_table(greedy + sampled).columns
    table = ladder.ladder_table(greedy + sampled, intervals=True)
    line = table.loc[("example", "L3")]
    assert (line["pass@1 T=0"], line["pass@1 T=0 low"], line["pass@1 T=0 high"]) == (0.5, 0.013, 0.987)
    assert (line["pass^1"], line["pass^1 low"], line["pass^1 high"]) == (0.6, 0.132, 0.937)
    assert (line["pass^5"], line["trials"], line["s/decision"]) == (0.5, 5, 0.3)


def test_baselines_sit_beside_the_model_at_their_exact_expectation_with_one_family():
    model = on_ladder({c: [c in "ab"] for c in "abcdefgh"})
    baselines = {
        "scripted loop": {c: float(c != "h") for c in "abcdefgh"},
        "adaptive loop": dict.fromkeys("abcdefgh", 1.0),
        "random L3": dict.fromkeys("abcdefgh", 0.125),
    }
    table = ladder.ladder_with_baselines(model, baselines)
    assert (
        list(table.index) == ["example L3 T=0", *baselines]
        and table.attrs["best baseline"] == "adaptive loop"
    )
    assert list(table["trials"]) == [1, "exact", "exact", "exact"] and list(table["passes"]) == [2, 7, 8, 1]
    assert table.loc["random L3", "pass@1"] == 0.125 and math.isnan(table.loc["random L3", "pass^5"])
    found = ladder.run_comparisons(model, baselines)
    assert [c.name for c in found] == ["example L3 T=0 − scripted loop", "example L3 T=0 − adaptive loop"]
    assert [(c.interval.estimate, c.p) for c in found] == [(-0.625, 0.0625), (-0.75, 0.03125)]
    assert ladder.run_comparisons(model, baselines)[0].verdict == "not distinguishable (MDE 0.81)"
    fig = ladder.plot_with_baselines(table, ["random L3", "scripted loop"], mde=0.5)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["example L3 T=0"]
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert len(fig.axes[0].patches) == 2 and "MDE 0.50: more than the 0.12 left" in labels  # stops at 1
    shown = ladder.baseline_table(table)
    assert list(shown["passes"]) == [7, 8, 1] and set(shown["cases"]) == {8}
    assert shown.loc["random L3", "pass@1"] == str(stats.rate(baselines["random L3"]))


def test_the_chart_of_endings_stacks_each_rows_shares():
    counts = pd.DataFrame({"final, correct": [3, 0], "tool_limit": [7, 10]}, index=[("a", "L1"), ("a", "L3")])
    ax = ladder.plot_ladder_stops(counts).axes[0]
    assert [round(p.get_width(), 2) for p in ax.patches] == [0.0, 0.3, 1.0, 0.7]  # last row at the bottom


# -- lab 02's evidence, from the committed recordings ---------------------------------------------


@pytest.fixture(scope="module")
def evidence():
    rows = ladder.ladder_rows()
    return rows, ladder.exact_baselines("all")


def intervals_of(frame):
    """Every (estimate, low, high) a table prints, from its `low`/`high` columns."""
    names = [c for c in frame.columns if f"{c} low" in frame.columns]
    return [tuple(frame[[n, f"{n} low", f"{n} high"]].iloc[i]) for n in names for i in range(len(frame))]


def test_lab02s_rung_rows_and_verdicts_are_what_the_notebook_prints(evidence):
    rows, baselines = evidence
    line = ladder.ladder_table(rows, intervals=True).loc[("example", "L3")]
    rates = [line[[r, f"{r} low", f"{r} high"]].tolist() for r in ("pass@1 T=0", "pass^1", "pass^5")]
    assert rates == [[0.667, 0.447, 0.844], [0.633, 0.435, 0.795], [0.333, 0.156, 0.553]]
    by_policy = {}
    for row in rows:
        by_policy.setdefault(row["policy"], []).append(row)
    pairs = [("example L3 T=0", "scripted loop"), ("example L3 T=0", "adaptive loop"),
             ("example L3 T=0", "search, then answer L3"), ("example L3 T=0", "example L1 T=0"),
             ("example L2 T=0", "example L1 T=0"), ("example L3 T=0", "base L3 T=0"),
             ("example L3 T=0.7", "scripted loop"), ("example L3 T=0.7", "example L3 T=0"),
             ("example L2 T=0.7", "example L1 T=0.7")]  # fmt: skip
    found = [
        tables.compare_runs(f"{a} − {b}", by_policy[a], baselines.get(b) or by_policy[b]) for a, b in pairs
    ]
    answered = {c.name: c for c in questions.answer("lab02-ladder", found)}
    rung, loop = answered["example L3 T=0 − example L1 T=0"], answered["example L3 T=0 − scripted loop"]
    assert (str(rung.interval), rung.verdict) == ("0.625 [0.371, 0.784]", "a difference")
    assert str(loop.interval) == "-0.042 [-0.262, 0.135]" and loop.p_adjusted == 1.0
    # The scripted loop passes 17 of 24: the 0.29 it leaves is less than the 0.45 these cases detect.
    assert loop.verdict == "not distinguishable (no detectable gain fits: b leaves 0.29)"
    others = [c for c in answered.values() if c.exploratory]
    assert len(others) == 7 and {c.verdict for c in others} == {"exploratory: no verdict"}
    assert (stats.mde(24), round(stats.power(len(docuctl().rewrite_cases), 0.2), 2)) == (0.31, 0.84)
    rewrite = [
        row for path in sorted(TRIALS.glob("rewrite-smollm2-example-*.jsonl")) for row in replay_trials(path)
    ]
    loop = ladder.exact_baselines("rewrite", rungs=["L3"])["scripted loop"]
    found = [
        tables.compare_runs(
            f"SmolLM2-135M example L3 T={t:g} − scripted loop",
            [r for r in rewrite if r["temperature"] == t],
            loop,
        )
        for t in (0.0, 0.7)
    ]
    assert [(str(c.interval), c.verdict) for c in questions.answer("lab02-rewrite", found)] == [
        ("0.080 [0.028, 0.205]", "a difference"), ("0.100 [0.028, 0.237]", "exploratory: no verdict")
    ]  # fmt: skip


def test_no_interval_lab02_prints_has_zero_width_and_every_not_distinguishable_has_an_mde(evidence):
    rows, baselines = evidence
    table = ladder.ladder_with_baselines(rows, baselines)
    printed = intervals_of(ladder.ladder_table(rows, intervals=True)) + intervals_of(table)
    found = ladder.run_comparisons(rows, baselines)
    printed += [(c.interval.estimate, round(c.interval.low, 3), round(c.interval.high, 3)) for c in found]
    assert len(printed) > 100 and all(low < high for _, low, high in printed if not math.isnan(low))
    verdicts = [c.verdict for c in questions.answer("02", found) if not c.exploratory]
    assert verdicts and all(
        v == "a difference" or re.fullmatch(r"not distinguishable \((MDE 0\.\d\d|no detectable gain .*)\)", v)
        for v in verdicts
    )


# -- episodes run and replayed ------------------------------------------------------------------


def test_the_scripted_loops_are_run_under_the_lab_knob_not_assumed():
    twice = tables.summary(scripted_trials("scripted loop", docuctl().cases, k=2))
    assert twice.loc["scripted loop", "pass@1"] == round(17 / 18, 3)  # lab 01's 17 of 18
    # Lab 01's budgets (3 tools on the adaptive cases) let the adaptive loop pass 23 of 24.
    table = under_limits(4, 3)
    expected = {"passed": 23, "tool calls": 54, "final, correct": 23, "final, wrong": 1}
    assert table.loc["adaptive loop"].to_dict() == expected
    assert under_limits(3, 2).loc["adaptive loop", "tool_limit"] == 6  # two tools: the adaptive cases run out
    table = under_limits(2, 2)  # a turn fewer than search, read and answer take
    assert table.loc["adaptive loop", "turn_limit"] == 24 and table["passed"].sum() == 0


def test_a_replayed_case_is_graded_and_times_the_replay_not_the_file():
    result = replay_case("deploy-build")
    assert (result["stop"], result.correct, result["tool_calls"]) == ("tool_limit", False, 2)
    assert [e["tokens"] for e in result["trace"]] == [255, 326, 411]
    assert all(e["recorded_s"] > 0.1 for e in result["trace"])  # the live call's latency, kept apart
    assert replay_case("deploy-build", "example", rung="L3").correct
    with pytest.raises(LabError, match="unknown docuctl case 'nope' \\(known: deploy-build,"):
        replay_case("nope")


def test_committed_recordings_replay_as_recorded():
    for path in trial_files("docuctl"):
        found = replay_trials(path)
        assert len({row["policy"] for row in found}) == 1
        assert all(row["decisions"] == row["turns"] for row in found)


def test_run_trials_refuses_more_trials_than_the_commands_allow_before_recording(tmp_path):
    path = tmp_path / "docuctl-refused.jsonl"
    with pytest.raises(LabError, match="k must be an int in 1..100, got 101"):
        run_trials(OllamaBackend(MODEL, host="http://127.0.0.1:9"), path, k=101)
    assert not path.exists() and not path.with_name(path.name + ".partial").exists()


def test_run_trials_makes_a_missing_folder_once_the_model_answers(tmp_path):
    # `runs/` is not in a fresh clone: `labkit trials --record runs/x.jsonl` must work there.
    down = tmp_path / "down" / "x.jsonl"
    with pytest.raises(LabError, match="nothing was recorded"):
        run_trials(OllamaBackend(MODEL, host="http://127.0.0.1:9"), down, cases="adaptive")
    assert not down.parent.exists()
    made = tmp_path / "runs" / "new" / "x.jsonl"
    with FakeOllama(MODEL, answer=docuctl_oracle) as server:
        run_trials(OllamaBackend(MODEL, host=server.host), made, cases="adaptive")
    assert made.is_file() and not made.with_name(made.name + ".partial").exists()


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """Two trials of the adaptive cases, recorded over the wire from an oracle 'model'."""
    path = tmp_path_factory.mktemp("trials") / "docuctl-oracle.jsonl"
    with FakeOllama(MODEL, answer=docuctl_oracle) as server:
        run_trials(OllamaBackend(MODEL, host=server.host), path, cases="adaptive", k=2, temperature=0.5)
    return path


def test_recorded_trials_replay_and_sit_beside_the_scripted_loops(recording):
    found = replay_trials(recording)
    assert len(found) == 12 and {row["policy"] for row in found} == {RUN}
    assert sum(row["passed"] for row in found) == 0  # search-read-answer fails every adaptive case
    table = tables.summary(evaluate_trials([recording], scripted_k=2))
    assert list(table.index) == ["scripted loop", "adaptive loop", RUN]
    assert table.loc["adaptive loop", "pass@1"] == 1.0 and table.loc["scripted loop", "pass@1"] == 0.0
    assert table.loc[RUN, "tokens/decision"] == 210 + 18
    with pytest.raises(LabError, match="is recorded twice: each trial counts once"):
        evaluate_trials([recording, recording])


def test_a_recording_that_no_longer_replays_or_has_no_episodes_is_refused(recording, tmp_path):
    lines = recording.read_text().splitlines()
    episode = next(i for i, line in enumerate(lines) if '"kind":"episode"' in line)
    lines[episode] = json.dumps(json.loads(lines[episode]) | {"stop": "budget"})
    edited = tmp_path / "docuctl-edited.jsonl"
    edited.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        LabError, match=r"trial 0 no longer replays as recorded: stop 'final' \(recorded 'budget'\)"
    ):
        replay_trials(edited)
    calls = tmp_path / "docuctl-calls.jsonl"
    calls.write_text("".join(line + "\n" for line in lines if '"kind":"call"' in line))
    with pytest.raises(LabError, match="no episode records"):
        replay_trials(calls)


# -- the commands ---------------------------------------------------------------------------------


def test_cli_evaluate_prints_the_tables_or_json(recording, cli):
    code, out, _ = cli("evaluate", "--trials", str(recording))
    assert code == 0 and all(
        word in out for word in ("pass^5", "adaptive loop", "tools/", "s/decision", "0.000 [0.000, 0.459]")
    )
    code, out, _ = cli("evaluate", "--trials", str(recording), "--json")
    report = json.loads(out)
    run = report["summary"][RUN]
    assert run["trials"] == 2 and run["pass^3"] is None  # beyond 2 trials
    assert report["stops"]["adaptive loop"]["final, correct"] == 30


def test_cli_evaluate_baselines_prints_the_notebooks_tables_and_family(recording, cli):
    code, out, _ = cli("evaluate", "--trials", str(recording), "--baselines")
    for row in (RUN, "random L0", "random L3", "search, then answer L3", "scripted loop", "adaptive loop"):
        assert row in out
    assert "1.000 [0.541, 1.000]" in out and "n/a" in out and "–" not in out  # exact on 6 cases
    assert "declared: none" in out and "exploratory: no verdict" in out  # 6 cases: not the declared 24
    code, out, _ = cli("evaluate", "--trials", str(recording), "--baselines", "--json")
    report = json.loads(out)
    line, vs_best = report["ladder"][RUN], report["comparisons"][f"{RUN} − adaptive loop"]
    assert report["best baseline"] == "adaptive loop" and report["ladder"]["random L3"]["trials"] == "exact"
    assert [line[k] for k in ("kind", "cases", "trials", "pass@1", "pass^5")] == ["model", 6, 2, 0.0, None]
    assert (vs_best["estimate"], vs_best["test"]) == (-1.0, "exact McNemar")
    # 6 cases are not lab02-ladder's declared 24: the row is exploratory, with no p (the table's "-"),
    # no adjusted p and no MDE.
    assert (vs_best["question"], vs_best["p"], vs_best["p_adjusted"], vs_best["mde"]) == (None,) * 4
    assert vs_best["verdict"] == "exploratory: no verdict"


def test_cli_trials_end_to_end_over_the_wire(tmp_path):
    path = tmp_path / "docuctl-cli.jsonl"
    with FakeOllama(MODEL, answer=docuctl_oracle) as server:
        argv = ["trials", "--model", f"ollama:{MODEL}", "--cases", "base", "--k", "1", "--record", str(path)]
        env = os.environ | {"OLLAMA_HOST": server.host}
        command = [sys.executable, "-m", "labkit", *argv]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "18 episodes, 17 passed" in done.stdout  # the oracle is lab 01's scripted loop
    assert "18/18" in done.stderr and not path.with_name(path.name + ".partial").exists()  # the progress bar


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("evaluate --trials nope.jsonl", "labkit evaluate: error: nope.jsonl: trials file not found"),
        ("trials --model replay --record x", "trials are recorded from a live model"),
        ("trials --model gpt-4 --record x", "LABKIT_MODEL='gpt-4' is not a backend"),
        ("trials --model local --k 0 --record x", "argument --k: must be at least 1"),
        ("trials --model local --cases some --record x", "argument --cases: invalid choice"),
        ("trials --model local", "the following arguments are required: --record"),
    ],
)
def test_cli_mistakes_get_one_line_and_exit_2(command, message, cli):
    code, _, err = cli(*command.split())
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_trials_never_overwrites_a_recording_nor_writes_one_with_the_server_down(
    tmp_path, cli, monkeypatch
):
    path = tmp_path / "docuctl-x.jsonl"
    path.write_text("keep me\n")
    code, _, err = cli("trials", "--model", f"ollama:{MODEL}", "--record", str(path))
    assert code == 2 and "exists: recordings are never overwritten" in err and path.read_text() == "keep me\n"
    with FakeOllama(MODEL) as server:
        host = server.host
    monkeypatch.setenv("OLLAMA_HOST", host)
    down = tmp_path / "docuctl-down.jsonl"
    code, _, err = cli("trials", "--model", f"ollama:{MODEL}", "--cases", "adaptive", "--record", str(down))
    said = f"ollama:{MODEL}: cannot reach Ollama at {host} (is `ollama serve` running?); nothing was recorded"
    assert code == 2 and err == f"labkit trials: error: {said}\n"
    assert not down.exists() and not down.with_name(down.name + ".partial").exists()


def test_the_cli_gives_the_notebooks_verdicts_whatever_else_it_is_given_and_at_any_seed(cli):
    """lab02-rewrite's declared row: the same verdict from `labkit evaluate` given its one file or all
    three rewrite recordings, as in notebook 02, and the same p at 20 sign-flip seeds (it is exact)."""
    files = sorted(str(p) for p in TRIALS.glob("rewrite-smollm2-*.jsonl"))
    declared = "SmolLM2-135M example L3 T=0.7 − scripted loop"
    seen = set()
    for given in ([f for f in files if f.endswith("example-l3-t07.jsonl")], files):
        code, out, _ = cli("evaluate", "--trials", *given, "--baselines", "--json")
        row = json.loads(out)["comparisons"][declared]
        seen.add((code, row["question"], round(row["p_adjusted"], 4), row["verdict"]))
    assert seen == {(0, "lab02-rewrite", 0.0078, "a difference")}
    rows = [row for path in files if path.endswith("example-l3-t07.jsonl") for row in replay_trials(path)]
    loop = ladder.exact_baselines("rewrite", rungs=["L3"])["scripted loop"]
    by_seed = {
        stats.compare_rows(declared, tables.per_case(rows), loop, known=True, seed=s).p for s in range(20)
    }
    assert len(by_seed) == 1


def test_the_cli_answers_lab02_ladders_declared_comparisons_as_notebook_02_does(cli):
    """Both of lab02-ladder's rows, the run − run one included (L1 recorded before runs named their
    rung), from `labkit evaluate` given the two runs or more, with notebook 02's verdicts."""
    two = [str(TRIALS / f"docuctl-smollm2-example-{name}.jsonl") for name in ("l3-t0", "t0")]
    seen = set()
    for given in (two, [*two, str(TRIALS / "docuctl-smollm2-example-l2-t0.jsonl")]):
        code, out, _ = cli("evaluate", "--trials", *given, "--baselines", "--json")
        rows = json.loads(out)["comparisons"]
        rung, loop = (rows[f"SmolLM2-135M example L3 T=0 − {b}"] for b in ("example L1 T=0", "scripted loop"))
        seen.add((code, rung["question"], rung["verdict"], loop["question"], loop["verdict"]))
    loop_verdict = "not distinguishable (no detectable gain fits: b leaves 0.29)"
    assert seen == {(0, "lab02-ladder", "a difference", "lab02-ladder", loop_verdict)}
