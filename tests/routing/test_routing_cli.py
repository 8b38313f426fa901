"""`python -m labkit routing`: lab 04's experiments headless, deterministic parts exact, clean errors."""

import json

import pytest

from labkit.routing import model_reviser

recorded = pytest.mark.skipif(not model_reviser.recorded(), reason="no recorded routing trials")


@pytest.fixture
def replay(monkeypatch):
    monkeypatch.delenv("LABKIT_MODEL", raising=False)
    monkeypatch.delenv("LABKIT_RECORD", raising=False)


def test_json_results(cli):
    code, out, err = cli("routing", "--json", "--skip-timing")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["parallel"] is None
    assert len(report["validation"]) == 6
    assert report["validation"]["dependency cycle"].startswith("dependency cycle: review -> revise")
    retries = report["retries"]
    assert {case: (row["status"], row["fetch attempts"], row["audit"]) for case, row in retries.items()} == {
        "transient (fails twice)": ("completed", 3, "completed"),
        "persistent (fails always)": ("failed", 3, "completed"),
        "invalid input": ("failed", 1, "completed"),
    }
    assert report["loop"]["chars"] == {"without feedback": [33] * 5, "with feedback": [33, 28, 24]}
    assert report["loop"]["runs"]["without feedback"]["status"] == "dead_letter"
    assert report["loop"]["runs"]["with feedback"]["published"] == "Search faster everywhere"
    assert report["stop"]["reason"] == "stopped by check (Next.Stop); cancelled: compute, store"


def test_options_change_the_loop(cli):
    code, out, _ = cli("routing", "--json", "--skip-timing", "--max-visits", "2", "--limit", "30")
    loop = json.loads(out)["loop"]
    assert code == 0
    assert loop["chars"] == {"without feedback": [33, 33], "with feedback": [33, 28]}
    assert loop["reasons"]["without feedback"] == (
        "loop review -> revise hit max_visits=2 (revise 2 runs, review 2 runs); no feedback given; "
        "cancelled: publish"
    )
    assert loop["reasons"]["with feedback"] == "all 4 jobs completed"


@recorded
def test_the_model_loop_is_replayed_in_text_and_json(cli, replay):
    code, out, _ = cli("routing", "--json", "--skip-timing", "--limit", "30", "--max-visits", "2")
    model = json.loads(out)["model_feedback"]
    assert code == 0 and model["available"] is True
    assert model["settings"] == {"max_visits": 5, "limit": 26}  # the recorded settings, whatever the options
    assert model["chars"] == {"without feedback": [45] * 5, "with feedback": [45] * 5}
    statuses = {name: run["status"] for name, run in model["runs"].items()}
    assert statuses == {"without feedback": "dead_letter", "with feedback": "dead_letter"}
    assert model["source"].startswith("replayed from routing-smollm2.jsonl (local SmolLM2-135M-Instruct")
    code, out, _ = cli("routing", "--skip-timing")
    assert "5. The review loop with a model reviser, limit 26 characters, max_visits=5" in out
    assert "   with feedback: last text 'Search is now much faster everywhere you look'" in out
    trials = model["trials"]
    assert (trials["unit"], trials["question"]) == ("trial", "lab04-feedback")
    assert [row["published"] for row in trials["rates"]] == ["3 of 50"] * 2 + ["0 of 50"] * 2 + [
        "50 of 50"
    ] * 2
    rows = {c["comparison"]: c for c in trials["comparisons"]}
    declared = [rows["L1: feedback - none"], rows["L2: feedback - none"]]
    assert [(c["question"], c["p_adjusted"], c["mde"]) for c in declared] == [
        ("lab04-feedback", 1.0, 0.18)
    ] * 2
    assert [c["verdict"] for c in declared] == ["not distinguishable (MDE 0.18)"] * 2
    cut = rows["feedback: L2+cut1 - L2"]  # at the ceiling, out of the question: exploratory
    assert (cut["question"], cut["p_adjusted"], cut["verdict"]) == (None, None, "exploratory: no verdict")
    # The text output is the notebook's table, the same verdicts.
    assert "declared: lab04-feedback" in out and "not distinguishable (MDE 0.18)" in out


def test_a_missing_recording_is_one_line_and_the_rest_still_runs(cli, replay, monkeypatch):
    monkeypatch.setattr(model_reviser, "recorded", lambda: False)
    code, out, err = cli("routing", "--skip-timing")
    assert (code, err) == (0, "")
    lines = [line for line in out.splitlines() if line.startswith("5. ")]
    assert len(lines) == 1 and lines[0].startswith(
        "5. The review loop with a model reviser: not run: no recorded"
    )
    assert "6. Next.Stop on a cache hit: completed" in out
    code, out, _ = cli("routing", "--json", "--skip-timing")
    note = lines[0].split("not run: ", 1)[1]
    assert json.loads(out)["model_feedback"] == {"available": False, "note": note}


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--max-visits", "0"), "argument --max-visits: must be at least 1, got 0 (see --help)"),
        (("--limit", "500"), "argument --limit: must be at most 200, got 500 (see --help)"),
    ],
)
def test_out_of_range_options_are_one_line_errors(cli, argv, message):
    code, out, err = cli("routing", "--skip-timing", *argv)
    assert (code, out, err) == (2, "", f"labkit routing: error: {message}\n")


def test_a_model_backed_job_that_fails_says_why_in_the_text_output(cli, monkeypatch):
    monkeypatch.setenv("LABKIT_MODEL", "ollama:qwen2.5:0.5b")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens: every call fails
    monkeypatch.delenv("LABKIT_RECORD", raising=False)
    code, out, err = cli("routing", "--skip-timing")
    assert (code, err) == (0, "")
    part = out[out.index("5. The review loop with a model reviser") : out.index("6. Next.Stop")]
    assert "   with feedback: revise failed: ProviderError: cannot reach Ollama at http://127.0.0.1:9" in part
