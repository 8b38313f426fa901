"""The model evidence of labs 02-04, as committed: baselines beside every model row, an interval on every
rate, and no claim about a model in the prose that its printed interval does not support.

These read the executed notebook (nbval re-executes it and checks the tagged outputs are unchanged);
they check what a learner sees, not how labkit computes it (tests/test_baselines.py and
tests/test_intervals.py do that).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from labkit.decision_loop.tables import with_intervals

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOK = NOTEBOOKS / "02_decision_loop.ipynb"
INTERVAL = r"-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]"  # "0.667 [0.458, 0.833]"
BASELINES = ("random L0", "random L3", "search, then answer L0", "search, then answer L3",
             "scripted loop", "adaptive loop")


@pytest.fixture(scope="module")
def cells():
    return nbformat.read(NOTEBOOK, as_version=4).cells


def output(cell) -> str:
    return "".join(
        out.get("text", "") if out.get("output_type") == "stream"
        else out.get("data", {}).get("text/plain", "")
        for out in cell.get("outputs", [])
    )


def table(cell) -> list[str]:
    """The rows of the DataFrame a cell displays, each on one line: pandas wraps a wide frame's
    plain text into blocks of columns (two header lines each), which are joined back row by row."""
    text = "".join(out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", [])
                   if out.get("output_type") == "execute_result")
    blocks = [block.splitlines() for block in text.strip("\n").split("\n\n")]
    assert blocks and len({len(block) for block in blocks}) == 1, "blocks of different lengths"
    header = " ".join(block[0].rstrip(" \\") for block in blocks)
    return [header] + [" ".join(line[i].rstrip(" \\") for line in blocks) for i in range(2, len(blocks[0]))]


def code_cell(cells, marker: str):
    found = [cell for cell in cells if cell.cell_type == "code" and marker in cell.source]
    assert len(found) == 1, f"{len(found)} code cells contain {marker!r}"
    return found[0]


def markdown(cells) -> list[str]:
    return [cell.source for cell in cells if cell.cell_type == "markdown"]


def plain(text: str) -> str:
    """`text` with a hyphen for the prose's minus sign and single spaces (an interval may wrap a line)."""
    return " ".join(text.replace("−", "-").split())


def test_the_model_table_has_a_baseline_row_and_an_interval_beside_every_model_row(cells):
    cell = code_cell(cells, "ladder_with_baselines(rows, baselines)")
    assert "nbval-check-output" in cell.metadata.get("tags", [])
    header, *rows = table(cell)
    lines = {line.split("  ")[0].strip(): line for line in rows}
    for name in BASELINES:
        assert name in lines, f"no {name!r} row in the model table"
    models = [line for line in rows if re.match(r"(base|example) L[0-3] T=0(\.7)? ", line)]
    assert len(models) == 16, "one row per prompt, rung and temperature"
    for line in [*models, *(lines[name] for name in BASELINES)]:
        # pass@1, final wrong and at least one paired difference, each with its interval
        assert len(re.findall(INTERVAL, line)) >= 3, line
    for column in ("pass@1", "pass^5", "final, wrong", "vs scripted", "vs best"):
        assert column in header


def test_the_ladder_table_shows_each_rate_with_its_interval(cells):
    rows = table(code_cell(cells, "ladder_table(rows, intervals=True)"))[1:]
    l3 = next(line for line in rows if line.strip().startswith("L3") and "0.667" in line)
    assert len(re.findall(INTERVAL, l3)) == 6, l3  # pass@1 at T=0, then pass^1..pass^5


def test_the_paired_comparisons_are_printed_with_their_verdicts(cells):
    shown = output(code_cell(cells, "def compare(a, b"))
    said = r"^(.+?): " + INTERVAL + r"  excludes\(0\)=(?:True|False): (.+)$"
    verdicts = dict(re.findall(said, shown, re.M))
    assert verdicts["example L3 T=0 - scripted loop"] == "not distinguishable"
    assert verdicts["example L3 T=0.7 - scripted loop"] == "not distinguishable"
    assert verdicts["example L3 T=0 - adaptive loop"] == "a difference"
    assert verdicts["example L3 T=0.7 - example L3 T=0"] == "not distinguishable"
    # takeaway 3's "L2 did not, over L1" is these two rows, at each temperature
    assert verdicts["example L2 T=0 - example L1 T=0"] == "not distinguishable"
    assert verdicts["example L2 T=0.7 - example L1 T=0.7"] == "not distinguishable"
    for line in shown.splitlines():  # the verdict follows from the printed interval, on every line
        match = re.search(r"(-?\d\.\d{3}) \[(-?\d\.\d{3}), (-?\d\.\d{3})\]  excludes\(0\)=(True|False)", line)
        if match:
            low, high = float(match[2]), float(match[3])
            assert (match[4] == "True") == (low > 0 or high < 0), line
            if line.endswith(("distinguishable", "difference")):
                assert line.endswith("a difference") == (match[4] == "True"), line


def test_the_prose_never_calls_the_model_better_or_worse_than_the_rule(cells):
    prose = plain(" ".join(markdown(cells)))
    assert prose.count("not distinguishable") >= 3  # model vs scripted, in reading, takeaways, rewrite
    for sentence in re.split(r"(?<=[.:;])\s", prose):
        if "scripted" in sentence:
            assert not re.search(r"\b(better|worse|beats|outperform)", sentence), sentence


def test_every_interval_the_prose_quotes_was_printed_by_a_cell(cells):
    printed = plain(" ".join(output(cell) for cell in cells if cell.cell_type == "code"))
    quoted = set()
    for text in markdown(cells):
        quoted |= set(re.findall(r"\+?(-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\])", plain(text)))
    assert len(quoted) >= 8
    for interval in quoted:
        assert interval in printed, f"the prose quotes {interval}, which no cell printed"


def test_safe_and_usable_are_computed_apart(cells):
    safety = output(code_cell(cells, "exact_copy(r)"))
    l3 = next(line for line in safety.splitlines() if line.startswith("L3")).split()
    assert l3 == ["L3", "144", "0", "115", "115"]  # no unread citation; every final an exact copy
    usable = output(code_cell(cells, "def first_hit(row)"))
    assert "first search hit in 20 of the 21 episodes" in usable
    assert "the same outcome as the scripted loop on 19 of 24 cases" in usable
    takeaways = next(text for text in markdown(cells) if text.startswith("## Takeaways"))
    assert "Safe is not usable" in takeaways and "not distinguishable" in takeaways


def test_the_rewrite_cases_sit_beside_the_baselines_with_the_way_to_a_bigger_model(cells):
    header, *cases = table(code_cell(cells, "corpus.rewrite_cases"))
    assert len(cases) == 6 and all(case.startswith("rewrite-") for case in cases)
    assert "expected_doc" in header and "expected_command" in header
    shown = "\n".join(table(code_cell(cells, 'baseline_rows("rewrite"')))
    for name in BASELINES:
        line = next(line for line in shown.splitlines() if line.startswith(name + " "))
        assert "0.000 [0.000, 0.000]" in line, line
    assert re.search(r"SmolLM2-135M example L3 T=0 +model +1 +0\.167 \[0\.000, 0\.500\]", shown)
    lesson = plain(" ".join(markdown(cells)))
    assert "--cases rewrite" in lesson and "--baselines" in lesson and "labkit rerun 2" in lesson


def test_the_counts_the_prose_quotes_are_printed_beside_it(cells):
    prose = plain(" ".join(markdown(cells)))
    hidden = re.search(r"and (\d+) more it does not show", prose)[1]
    assert f"does not show: {hidden}" in output(code_cell(cells, "lab02.reference_table()"))
    seeds = re.search(r"`labkit evaluate --baselines` runs (\d+)", prose)[1]
    baselines = code_cell(cells, "ladder_with_baselines(rows, baselines)")
    episodes = re.search(r"([\d,]+) baseline episodes here; `labkit evaluate --baselines` runs (\d+) seeds",
                         output(baselines))
    assert episodes and episodes[2] == seeds
    assert not re.search(r"\d,\d{3} episodes", baselines.source), "a count in a comment, not printed"
    guide = plain((NOTEBOOKS / "INSTRUCTOR.md").read_text(encoding="utf-8"))
    assert f"the baselines run {episodes[1]} episodes" in guide
    rewrite = output(code_cell(cells, "corpus.rewrite_cases"))
    passes = re.search(r"two rules \(the adaptive loop\) pass (\d+)\.", prose)[1]
    assert f"the adaptive loop (two rules) passes {passes} of 24 cases" in rewrite
    shares = re.findall(r"^(rewrite-\S+) +words shared with its page: (.*), with the glossary: (.*)$",
                        rewrite, re.M)
    assert len(shares) == 6 and all(page == glossary == "[]" for _, page, glossary in shares), shares


def test_the_predictions_are_recorded_like_the_other_labs(cells):
    sources = [cell.source for cell in cells]
    assert not any("compare_prediction" in source for source in sources)
    assert sum('predict("02", ' in source for source in sources) == 2


def test_with_intervals_puts_each_rate_and_its_interval_in_one_cell():
    frame = pd.DataFrame(
        {"kind": ["model", "baseline"], "pass@1": [0.6667, math.nan], "pass@1 low": [0.4583, math.nan],
         "pass@1 high": [0.8333, math.nan], "trials": [1, 5]},
        index=["a", "b"],
    )
    shown = with_intervals(frame)
    assert list(shown.columns) == ["kind", "pass@1", "trials"]
    assert list(shown["pass@1"]) == ["0.667 [0.458, 0.833]", "–"]
    assert list(frame.columns) == ["kind", "pass@1", "pass@1 low", "pass@1 high", "trials"]  # untouched


# -- lab 03: the refund model's rows (Going further B) -------------------------------------------

RATE = r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]"  # "0.46 [0.30, 0.64]", as with_intervals shows it


@pytest.fixture(scope="module")
def lab03():
    return nbformat.read(NOTEBOOKS / "03_refund_attack_lab.ipynb", as_version=4).cells


@pytest.fixture(scope="module")
def lab04():
    return nbformat.read(NOTEBOOKS / "04_routing_cycles.ipynb", as_version=4).cells


def unwrapped(cell) -> list[str]:
    """The lines of the DataFrame a cell displays, its index once: pandas wraps a wide frame's plain text
    into blocks of columns, each repeating the index (several levels of it), so each later block loses the
    prefix its rows share with the first block's, cut at a blank column, before it is joined on."""
    text = "".join(out.get("data", {}).get("text/plain", "") for out in cell.get("outputs", [])
                   if out.get("output_type") == "execute_result")
    blocks = [block.splitlines() for block in text.strip("\n").split("\n\n")]
    assert blocks and len({len(block) for block in blocks}) == 1, "blocks of different lengths"
    lines = [line.rstrip(" \\") for line in blocks[0]]
    for block in blocks[1:]:
        width = min(len(os.path.commonprefix([a, b])) for a, b in zip(blocks[0], block, strict=True))
        while width and not all(len(line) <= width or line[width - 1] == " " for line in block):
            width -= 1
        lines = [a + " " + b[width:].rstrip(" \\") for a, b in zip(lines, block, strict=True)]
    return lines


def printed(cells) -> str:
    return plain(" ".join(output(cell) for cell in cells if cell.cell_type == "code"))


def test_lab03_model_table_has_the_baseline_rows_and_an_interval_beside_every_rate(lab03):
    cell = code_cell(lab03, "model_table(seeds=SEEDS")
    assert "nbval-check-output" in cell.metadata.get("tags", [])
    header, _, *rows = unwrapped(cell)
    for column in ("benign", "attacked", "ASR", "unauth_share", "n", "trials"):
        assert column in header.split(), column
    firsts = [line for line in rows if not line.startswith(" ")]  # a policy's first row names it
    policies = ["model L2", "random-admissible L2", "careful", "gullible"]
    assert [re.sub(r" +none .*", "", line) for line in firsts] == policies
    rated = [line for line in rows if len(re.findall(RATE, line)) == 4]
    assert len(rated) == 16, "four rates with their intervals, on each of 4 policies x 4 defenses"
    model = rated[:4]
    assert all(re.search(r" 28 +1$", line) for line in model), "28 episodes a model row, one trial"
    assert re.search(r" 28 +10$", rated[4]), "the random baseline: 10 seeds in the notebook"


def _comparisons(cell) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(comparison, rate) -> (difference with interval, McNemar p, verdict), from the displayed table."""
    found, comparison = {}, None
    for line in unwrapped(cell)[2:]:
        match = re.match(r"^(\S.*?)?\s+(\w+)\s+(\d+)\s+(" + RATE + r")\s+(-|\d\.\d{3})\s+"
                         r"(a difference|not distinguishable)$", line)
        assert match, line
        comparison = match[1] or comparison
        found[(comparison, match[2])] = (match[4], match[5], match[6])
    return found


def test_lab03_paired_comparisons_name_their_verdicts_from_the_interval_and_mcnemar(lab03):
    cell = code_cell(lab03, "model_comparisons(seeds=SEEDS")
    assert "nbval-check-output" in cell.metadata.get("tags", [])
    rows = _comparisons(cell)
    for defense in ("policy_prompt", "spotlighting", "mediation"):
        assert (f"model L2 {defense} - model L2 none", "unauthorized_rate") in rows
    assert ("model L2 none - random-admissible none", "benign_utility") in rows
    for difference, p, verdict in rows.values():
        low, high = map(float, re.findall(r"-?\d\.\d\d", difference)[1:])
        significant = p == "-" or float(p) < 0.05
        assert verdict == ("a difference" if (low > 0 or high < 0) and significant else "not distinguishable")
    assert rows[("model L2 spotlighting - model L2 none", "unauthorized_rate")] == (
        "0.29 [0.11, 0.46]", "0.021", "a difference")
    assert rows[("model L2 policy_prompt - model L2 none", "unauthorized_rate")][2] == "not distinguishable"


def test_lab03_the_recordings_times_and_the_default_seeds_are_printed_where_the_prose_quotes_them(lab03):
    prose = plain(" ".join(markdown(lab03)))
    shown = output(code_cell(lab03, "model_table(seeds=SEEDS"))
    episodes, low, high, median = re.search(
        r"another (\d+) episodes, at (\d+\.\d) to (\d+\.\d) s an episode on a CPU, median (\d+\.\d)",
        prose).groups()
    assert f"the recording: {episodes} episodes, {low} to {high} s each (median {median})" in shown
    guide = plain((NOTEBOOKS / "INSTRUCTOR.md").read_text(encoding="utf-8"))
    assert f"another {episodes} at {low}–{high} s each, median {median}" in guide
    default = re.search(r"the library's default is (\d+)", prose)[1]
    assert f"the library's default {default}" in shown


def test_lab03_attribution_is_computed_in_a_cell(lab03):
    cell = code_cell(lab03, "attribution(rung=")
    assert "nbval-check-output" in cell.metadata.get("tags", [])
    shown = plain(output(cell))
    said = "the check fired in 5 of 72 attacked episodes; in 4 of them the model never saw the injected text"
    assert said in shown
    assert "note 0 of 16, review 0 of 20" in shown
    reading = plain(" ".join(markdown(lab03)))
    assert "5 of 72 attacked episodes, and in 4 of them the model never saw" in reading


def test_lab03_every_interval_and_p_the_prose_quotes_was_printed_by_a_cell(lab03):
    shown = printed(lab03)
    quoted, ps = set(), set()
    for text in markdown(lab03):
        quoted |= set(re.findall(RATE, plain(text)))
        ps |= set(re.findall(r"p = (\d\.\d{3})", plain(text)))
    assert len(quoted) >= 12 and ps
    for interval in quoted:
        assert interval in shown, f"the prose quotes {interval}, which no cell printed"
    for p in ps:
        assert re.search(rf"\s{re.escape(p)}\s", shown), f"the prose quotes p = {p}, which no cell printed"


def test_lab03_old_takeaway_2_claim_is_gone_and_the_takeaways_say_what_the_intervals_support(lab03):
    prose = plain(" ".join(markdown(lab03)))
    assert "made the model pay more unauthorised" not in prose
    assert "paid more unauthorised refunds, not fewer" not in prose
    assert "on five episodes" not in prose and "L1 ASR of 0" not in prose
    takeaways = plain(next(text for text in markdown(lab03) if text.startswith("## Takeaways")))
    two = takeaways[takeaways.index("2. "):takeaways.index("3. ")]
    assert "not distinguishable" in two and "spotlighting raised it" in two
    assert "0.00 [0.00, 0.12]" in two and "0.46 [0.30, 0.64]" in two


# -- lab 04: the model reviser over five trials (§6b) --------------------------------------------


def test_lab04_reviser_table_has_the_word_cutter_beside_the_model_and_an_interval_on_every_rate(lab04):
    cell = code_cell(lab04, "reviser_trials.reviser_table(")
    assert "nbval-check-output" in cell.metadata.get("tags", [])
    header, *rows = table(cell)
    for column in ("published", "published_ci", "chars_ci"):
        assert column in header.split(), column
    assert sum(line.startswith("word cutter (scripted)") for line in rows) == 1
    assert len(rows) == 14 and all(len(re.findall(r"\[\d+\.\d, ?\d+\.\d+\]|\[\d\.\d\d, \d\.\d\d\]",
                                                   line)) == 2 for line in rows)
    assert sum(bool(re.search(r" 0\.7 +5 ", line)) for line in rows) == 6, "k=5 at T=0.7 per control, variant"
    assert sum(bool(re.search(r" 0\.0 +1 ", line)) for line in rows) == 6, "and T=0"


def test_lab04_feedback_is_compared_paired_and_the_model_is_matched_to_the_word_cutter(lab04):
    cell = code_cell(lab04, "reviser_comparisons(")
    assert "nbval-check-output" in cell.metadata.get("tags", [])
    shown = output(cell)
    verdicts = re.findall(r"^(L1|L2|L2\+cut1) +feedback - no-feedback +published +5 +(-?\d\.\d+) +"
                          r"\[(-?\d\.\d\d), (-?\d\.\d\d)\] +(\d\.\d{3}) +(.+)$", shown, re.M)
    assert [v[0] for v in verdicts] == ["L1", "L2", "L2+cut1"]
    for _, _, low, high, p, verdict in verdicts:
        excludes = float(low) > 0 or float(high) < 0
        assert verdict == ("a difference" if excludes and float(p) < 0.05 else "not distinguishable")
    assert shown.count("5 of 5 trials published; in 5 of 5 every text was the word cutter's") == 2


def test_lab04_the_judged_texts_are_the_draft_and_the_scripted_revisers(lab04):
    from labkit.routing.experiments import DRAFT

    prose = plain(" ".join(markdown(lab04)))
    assert "on the draft and the three texts the scripted reviser writes" in prose
    texts = [line.split("  ")[0] for line in table(code_cell(lab04, "model_reviser.judge_table("))[1:]]
    assert len(texts) == 4 and texts[0] == DRAFT


def test_lab04_every_interval_the_prose_quotes_was_printed_and_the_claims_follow_them(lab04):
    shown = printed(lab04)
    quoted = set()
    for text in markdown(lab04):
        quoted |= set(re.findall(r"\[-?\d\.\d\d, -?\d\.\d\d\]", plain(text)))
    assert {"[0.00, 0.43]", "[0.57, 1.00]"} <= quoted
    for interval in quoted:
        assert interval in shown, f"the prose quotes {interval}, which no cell printed"
    prose = plain(" ".join(markdown(lab04)))
    assert "did not change its text for it" not in prose  # at T=0.7 it did (two or three final texts)
    takeaways = next(text for text in markdown(lab04) if text.startswith("## Takeaways"))
    assert "not distinguishable" in plain(takeaways)


def test_with_intervals_joins_each_refund_rate_and_its_interval_and_leaves_the_table_alone():
    from labkit.refunds.model_rows import rates_with_intervals as with_intervals

    frame = pd.DataFrame({"benign_utility": [0.1, None], "benign_utility_ci": ["[0.02, 0.40]", "-"],
                          "difference": [-0.464, 0.0], "difference_ci": ["[-0.64, -0.29]", "[0.00, 0.00]"],
                          "episodes": [28, 0]})
    shown = with_intervals(frame)
    assert list(shown.columns) == ["benign_utility", "difference", "episodes"]
    assert list(shown["benign_utility"]) == ["0.10 [0.02, 0.40]", "-"]
    assert list(shown["difference"]) == ["-0.46 [-0.64, -0.29]", "0.00 [0.00, 0.00]"]
    assert "benign_utility_ci" in frame.columns  # untouched


def test_the_lab03_model_table_runs_the_model_with_the_notebooks_k_temperature_and_seed(monkeypatch):
    from labkit.model import Reply
    from labkit.refunds.model_rows import model_table

    class Mute:  # never answers with a decision: each episode ends at once
        name = "mute"

        def __init__(self):
            self.requests = []

        def provenance(self):
            return {"backend": self.name}

        def complete(self, request):
            self.requests.append(request)
            return Reply(text="no", prompt_tokens=1, completion_tokens=1)

    mute = Mute()
    rows = model_table(["none"], backend=mute, seeds=1, temperature=0.5, seed=3, k=2)
    assert rows.loc[("model L2", "none"), "trials"] == 2
    assert {(r.trial, r.seed) for r in mute.requests} == {(0, 3), (1, 4)}
    assert {r.temperature for r in mute.requests} == {0.5}


def test_lab03_matrix_rates_are_shown_with_their_intervals_and_the_chart_draws_them(lab03):
    rates = code_cell(lab03, "matrix_intervals(")
    assert "nbval-check-output" in rates.metadata.get("tags", [])
    shown = plain(output(rates))
    assert "1.00 [0.97, 1.00]" in shown and "0.11 [0.07, 0.17]" in shown and "0.40 [0.17, 0.69]" in shown
    chart = code_cell(lab03, "utility_security(")
    assert "utility_security(table, rates)" in chart.source
