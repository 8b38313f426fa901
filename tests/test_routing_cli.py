"""`python -m labkit routing`: lab 04's experiments headless, deterministic parts exact, clean errors."""

import json

import pytest


def test_json_results(cli):
    code, out, err = cli("routing", "--json", "--skip-timing")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["parallel"] is None
    assert report["validation"]["dependency cycle"] == (
        "dependency cycle: review -> revise -> review (declare a loop as a route, not as deps)")
    assert len(report["validation"]) == 6
    retries = report["retries"]
    assert {case: (row["status"], row["fetch attempts"], row["audit"]) for case, row in retries.items()} == {
        "transient (fails twice)": ("completed", 3, "completed"),
        "persistent (fails always)": ("failed", 3, "completed"),
        "invalid input": ("failed", 1, "completed"),
    }
    assert report["loop"]["chars"] == {"without feedback": [33] * 5, "with feedback": [33, 28, 24]}
    assert report["loop"]["runs"]["without feedback"]["status"] == "dead_letter"
    assert report["loop"]["runs"]["with feedback"]["published"] == "Search faster everywhere"
    assert report["stop"] == {"status": "completed",
                              "reason": "stopped by check (Next.Stop); cancelled: compute, store"}


def test_options_change_the_loop(cli):
    code, out, _ = cli("routing", "--json", "--skip-timing", "--max-visits", "2", "--limit", "30")
    loop = json.loads(out)["loop"]
    assert code == 0
    assert loop["chars"] == {"without feedback": [33, 33], "with feedback": [33, 28]}
    assert loop["reasons"]["without feedback"] == (
        "loop review -> revise hit max_visits=2 (revise 2 runs, review 2 runs); no feedback given; "
        "cancelled: publish")
    assert loop["reasons"]["with feedback"] == "all 4 jobs completed"


def test_text_output_includes_the_timing_experiment(cli):
    code, out, _ = cli("routing")
    assert code == 0
    assert "2. Sequential against parallel" in out and "overhead_ms" in out
    assert "route forward, not back" in out and "Scripted jobs" in out


@pytest.mark.parametrize("argv, message", [
    (("--max-visits", "0"), "labkit routing: error: --max-visits must be between 1 and 20, got 0\n"),
    (("--limit", "500"), "labkit routing: error: --limit must be between 1 and 200 characters, got 500\n"),
])
def test_out_of_range_options_are_one_line_errors(cli, argv, message):
    code, out, err = cli("routing", "--skip-timing", *argv)
    assert (code, out, err) == (2, "", message)


def test_a_malformed_option_is_an_argparse_error(cli):
    code, out, err = cli("routing", "--max-visits", "three")
    assert code == 2 and out == ""
    assert err.startswith("labkit routing: error: argument --max-visits: invalid int value: 'three'")
    assert err.count("\n") == 1
