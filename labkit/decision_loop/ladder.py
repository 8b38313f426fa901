"""The constraint ladder's results (lab 02): one row per prompt and rung, from recorded trials.

Each recorded docuctl run is one prompt at one rung (`labkit.model.constraints`) and one
temperature: temperature 0 with one trial per case (pass@1 of the greedy model), and
temperature 0.7 with k seeded trials per case (pass^k). `ladder_rows` replays every
recorded episode through the runtime (`labkit.decision_loop.evaluation.replay_trials`, which checks each
one ends as it did live); the tables below group those rows by (prompt, rung).

- `ladder_table`: pass@1 at T=0; pass^1..pass^5 at T=0.7, with `intervals=True` each with its
  95% interval (a bootstrap over cases, `labkit.decision_loop.tables.rate_intervals`: `low`/`high`
  columns);
  tool calls per success, tokens and seconds per decision over the T=0.7 episodes (seconds as
  recorded live);
- `ladder_with_baselines`: every model run beside the baselines of
  `labkit.decision_loop.baselines` on the same cases, in one table: pass@1 and pass^5 with
  their intervals, the share of wrong finals (Wilson), and the paired difference of each row
  from the scripted loop and from the best baseline;
- `ladder_stops`: how the T=0.7 episodes ended, per prompt and rung (a final split into
  correct and wrong);
- `ladder_by_cases`: pass rate at T=0.7 on lab 01's base and adaptive cases;
- `ladder_changes`, `wrong_finals`: what the rungs changed case by case at T=0;
- `ladder_recordings`: the recordings behind it all, with their provenance;
- `plot_ladder`: pass^k against k with error bars, one panel per prompt, one line per rung;
- `plot_with_baselines`: pass@1 with error bars, one bar per row of `ladder_with_baselines`;
- `plot_ladder_stops` (on `plot_shares`): the endings of `ladder_stops` as shares.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from labkit.baseline.corpus import Corpus, docuctl
from labkit.core.colours import OUTCOMES
from labkit.core.errors import LabError
from labkit.core.intervals import wilson
from labkit.decision_loop.baselines import baseline_rows
from labkit.decision_loop.evaluation import replay_trials
from labkit.decision_loop.tables import (
    CORRECT,
    ENDINGS,
    K_MAX,
    NAN,
    WRONG,
    Row,
    ending,
    interval_columns,
    paired_difference,
    rate_intervals,
    share_interval,
)
from labkit.decision_loop.trials import known_cases
from labkit.model.constraints import DEFAULT_RUNG, RUNG_NAMES, RUNGS
from labkit.model.record import read_records
from labkit.model.replay import TRIALS

SAMPLED = 0.7  # the temperature of the repeated trials
PROMPT_ORDER = ("base", "example")
# One colour per rung in every ladder chart: grey for no constraint, then ever darker blues.
RUNG_COLORS = {"L0": "#9e9e9e", "L1": "#90caf9", "L2": "#1e88e5", "L3": "#0d47a1"}


def ladder_files(folder: Path = TRIALS) -> list[Path]:
    """The recorded SmolLM2 runs of the docuctl policy: `docuctl-smollm2-*.jsonl`, sorted."""
    return sorted(folder.glob("docuctl-smollm2-*.jsonl"))


def ladder_rows(paths: Iterable[str | Path] | None = None, corpus: Corpus | None = None) -> list[Row]:
    """Every recorded episode in `paths` (default `ladder_files()`), replayed and graded."""
    corpus = corpus or docuctl()
    paths = ladder_files() if paths is None else list(paths)
    if not paths:
        raise LabError(f"no docuctl-smollm2-*.jsonl recordings in {TRIALS}")
    rows = [row for path in paths for row in replay_trials(path, corpus)]
    for row in rows:  # one label scheme for every run, whenever it was recorded
        row["policy"] = f"{row['prompt']} {row['rung']} T={row['temperature']:g}"
    return rows


def _key(row: Row) -> tuple[int, int]:
    prompt = PROMPT_ORDER.index(row["prompt"]) if row["prompt"] in PROMPT_ORDER else len(PROMPT_ORDER)
    return prompt, RUNGS.index(row["rung"])


def _groups(rows: Iterable[Row], temperature: float | None = None) -> dict[tuple[str, str], list[Row]]:
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in sorted(rows, key=_key):
        if temperature is None or row["temperature"] == temperature:
            groups[(row["prompt"], row["rung"])].append(row)
    return groups


def _index(keys: Sequence[tuple[str, str]]) -> pd.MultiIndex:
    return pd.MultiIndex.from_tuples(keys, names=["prompt", "rung"])


def ladder_table(rows: Sequence[Row], k_max: int = K_MAX, *, intervals: bool = False) -> pd.DataFrame:
    """One row per (prompt, rung): see the module docstring for the columns.

    With `intervals`, each rate is followed by its 95% interval, `<rate> low` and `<rate> high`
    (a bootstrap over cases, seeded: `rate_intervals`), which `plot_ladder` draws as error bars.
    (Off by default for now: lab 02's notebook checks the table's columns as they were.) A cell
    is NaN where that run was not recorded (e.g. no T=0 trials for a rung) or a case has fewer
    than k trials.
    """
    greedy, sampled = _groups(rows, 0.0), _groups(rows, SAMPLED)
    keys = sorted({*greedy, *sampled}, key=lambda k: (PROMPT_ORDER.index(k[0]), RUNGS.index(k[1])))
    table = []
    for key in keys:
        line: dict[str, float | str] = {"constraint": RUNG_NAMES[key[1]]}
        greedy_rate = rate_intervals(greedy[key], 1)["pass@1"] if key in greedy else NAN
        line = interval_columns(line, "pass@1 T=0", greedy_rate)
        group = sampled.get(key, [])
        found = rate_intervals(group, k_max) if group else {}
        line["trials"] = max(Counter(r["case"] for r in group).values()) if group else 0
        for k in range(1, k_max + 1):
            line = interval_columns(line, f"pass^{k}", found.get(f"pass^{k}", NAN))
        passed = sum(r["passed"] for r in group)
        decisions = sum(r["decisions"] for r in group)
        line["tools/success"] = round(sum(r["tool_calls"] for r in group) / passed, 2) if passed else math.nan
        tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in group)
        line["tokens/decision"] = round(tokens / decisions) if decisions else math.nan
        line["s/decision"] = (
            round(sum(r["latency_s"] for r in group) / decisions, 2) if decisions else math.nan
        )
        if not intervals:
            line = {name: value for name, value in line.items() if not name.endswith((" low", " high"))}
        table.append(line)
    return pd.DataFrame(table, index=_index(keys))


def _model_order(row: Row) -> tuple[int, int, float]:
    """Model rows by prompt, rung, temperature; rows without them (another lab's) last, as given."""
    if row.get("prompt") in PROMPT_ORDER and row.get("rung") in RUNGS:
        return (*_key(row), float(row.get("temperature", 0.0)))
    return (len(PROMPT_ORDER), len(RUNGS), 0.0)


def ladder_with_baselines(
    rows: Sequence[Row],
    baselines: Sequence[Row] | None = None,
    *,
    k: int = K_MAX,
    corpus: Corpus | None = None,
) -> pd.DataFrame:
    """The model's runs and the baselines on the same cases, one table, one row per policy.

    `rows` are model episodes (`ladder_rows`, or `evaluation.replay_trials` of any recording);
    `baselines` default to `labkit.decision_loop.baselines.baseline_rows` on the cases of
    `rows` (a few seconds). A row is a baseline when it carries a `baseline` key. Columns:

    - kind (model or baseline), cases, trials (most trials of any case);
    - pass@1 and pass^k, each with its 95% bootstrap interval over cases (low, high; pass^k
      NaN where a case ran fewer than k trials);
    - final, wrong: the share of episodes that ended in a wrong final answer (`share_interval`:
      Wilson at one trial per case), with low and high;
    - vs scripted, vs best: the paired difference of pass@1 from the scripted loop and from
      the best baseline (highest pass@1, the first of a tie; named in
      `frame.attrs["best baseline"]`) on the cases both ran, with low and high (NaN on the
      row itself). A difference whose interval contains 0 is not distinguishable from none.

    Raises LabError for no model rows.
    """
    if not rows:
        raise LabError("no model episodes to put beside the baselines")
    if baselines is None:
        known = known_cases(corpus)
        cases = [known[case] for case in dict.fromkeys(row["case"] for row in rows) if case in known]
        baselines = baseline_rows(cases, corpus=corpus)
    groups: dict[str, list[Row]] = defaultdict(list)
    for row in [*sorted(rows, key=_model_order), *baselines]:
        groups[row["policy"]].append(row)
    kinds = {policy: "baseline" if "baseline" in group[0] else "model" for policy, group in groups.items()}
    rates = {policy: rate_intervals(group, k) for policy, group in groups.items()}
    candidates = [policy for policy in groups if kinds[policy] == "baseline"]
    best = max(candidates, key=lambda policy: rates[policy]["pass@1"].estimate) if candidates else None
    scripted = "scripted loop" if "scripted loop" in groups else None
    table = {}
    for policy, group in groups.items():
        trials = Counter(row["case"] for row in group)
        line: dict[str, Any] = {"kind": kinds[policy], "cases": len(trials), "trials": max(trials.values())}
        line = interval_columns(line, "pass@1", rates[policy]["pass@1"])
        line = interval_columns(line, f"pass^{k}", rates[policy][f"pass^{k}"])
        line = interval_columns(line, WRONG, share_interval(group, lambda row: ending(row) == WRONG))
        for name, other in (("vs scripted", scripted), ("vs best", best)):
            difference = NAN if other is None or other == policy else paired_difference(group, groups[other])
            line = interval_columns(line, name, difference)
        table[policy] = line
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.index.name = "policy"
    frame.attrs["best baseline"] = best
    return frame


def ladder_stops(rows: Sequence[Row], temperature: float = SAMPLED) -> pd.DataFrame:
    """Episodes per (prompt, rung) and ending at `temperature`, graded.

    `final` is split into "final, correct" (the episodes that passed) and "final, wrong"
    (`labkit.decision_loop.tables.ending`); unused endings are left out.
    """
    groups = _groups(rows, temperature)
    counts = {key: Counter(ending(r) for r in group) for key, group in groups.items()}
    seen = [stop for stop in ENDINGS if any(stop in c for c in counts.values())]
    return pd.DataFrame(
        [[counts[key][stop] for stop in seen] for key in groups], index=_index(list(groups)), columns=seen
    )


def ladder_by_cases(
    rows: Sequence[Row], corpus: Corpus | None = None, temperature: float = SAMPLED
) -> pd.DataFrame:
    """Pass rate per (prompt, rung) on lab 01's base cases and on its adaptive cases."""
    corpus = corpus or docuctl()
    adaptive = {case["id"] for case in corpus.adaptive_cases}
    groups = _groups(rows, temperature)
    table = []
    for group in groups.values():
        base = [r["passed"] for r in group if r["case"] not in adaptive]
        other = [r["passed"] for r in group if r["case"] in adaptive]
        table.append(
            {
                "base cases": round(sum(base) / len(base), 3) if base else math.nan,
                "adaptive cases": round(sum(other) / len(other), 3) if other else math.nan,
            }
        )
    return pd.DataFrame(table, index=_index(list(groups)))


# One colour per ending in every chart: a correct final in the course's green, a wrong one in
# its red-brown (labkit.core.colours.OUTCOMES), the policy's failures warm, the runtime's timers
# and budgets cool. `final` alone (ungraded) is neutral: it is not a success.
STOP_COLORS = {
    CORRECT: OUTCOMES["correct"],
    WRONG: OUTCOMES["wrong"],
    "final": "#455a64",
    "invalid_decision": "#fbc02d",
    "unread_citation": "#8e24aa",
    "tool_limit": "#ef6c00",
    "turn_limit": "#a1887f",
    "provider_error": "#424242",
    "step_timeout": "#1565c0",
    "deadline": "#42a5f5",
    "budget": "#00897b",
    "aborted": "#78909c",
}


def plot_shares(counts: pd.DataFrame, title: str, xlabel: str = "share of episodes") -> Figure:
    """Stacked horizontal bars: each row's episodes by ending, as shares (first row on top)."""
    import matplotlib.pyplot as plt

    endings = [c for c in counts.columns if c in STOP_COLORS]
    totals = counts[endings].sum(axis=1)
    shares = counts[endings].div(totals, axis=0)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(shares) + 1.5))
    shares.iloc[::-1].plot.barh(
        stacked=True, ax=ax, width=0.7, color=[STOP_COLORS[stop] for stop in endings]
    )
    # The first ending's share (a pass rate when it is "final, correct") with its Wilson interval.
    first = endings[0]
    for row, (count, total) in enumerate(zip(counts[first].iloc[::-1], totals.iloc[::-1], strict=True)):
        if total:
            interval = wilson(int(count), int(total))
            ax.errorbar(interval.estimate, row, xerr=[[interval.estimate - interval.low],
                                                      [interval.high - interval.estimate]],
                        fmt="none", ecolor="black", elinewidth=1, capsize=3)
    xlabel = f"{xlabel}; bars: 95% interval of the {first!r} share"
    ax.set_xlim(0, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def plot_ladder(table: pd.DataFrame) -> Figure:
    """pass^k against k: one panel per prompt, one line per rung (whatever the data shows).

    Each point carries its 95% interval as an error bar when the table has the `low`/`high`
    columns (`ladder_table` does).
    """
    import matplotlib.pyplot as plt

    columns = [c for c in table.columns if c.startswith("pass^") and not c.endswith((" low", " high"))]
    ks = [int(c.split("^")[1]) for c in columns]
    prompts = list(dict.fromkeys(table.index.get_level_values("prompt")))
    fig, axes = plt.subplots(1, len(prompts), figsize=(5 * len(prompts), 3.6), sharey=True, squeeze=False)
    for ax, prompt in zip(axes[0], prompts, strict=True):
        for rung, row in table.loc[prompt].iterrows():
            values = [row[c] for c in columns]
            errors = None
            if all(f"{c} low" in row.index for c in columns):  # error bars: the 95% intervals
                errors = [
                    [v - row[f"{c} low"] for v, c in zip(values, columns, strict=True)],
                    [row[f"{c} high"] - v for v, c in zip(values, columns, strict=True)],
                ]
            ax.errorbar(
                ks,
                values,
                yerr=errors,
                marker="o",
                capsize=3,
                color=RUNG_COLORS.get(str(rung)),
                label=f"{rung} {RUNG_NAMES.get(str(rung), '')}",
            )
        ax.set_title(f"prompt: {prompt}")
        ax.set_xticks(ks)
        ax.set_xlabel("k (trials that must all pass)")
        ax.set_ylim(-0.05, 1.05)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"pass^k at T={SAMPLED:g}")
    axes[0][-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("SmolLM2-135M on the 24 docuctl cases, one line per constraint rung")
    fig.tight_layout()
    return fig


def plot_with_baselines(table: pd.DataFrame, title: str = "pass@1 with its 95% interval") -> Figure:
    """One horizontal bar per row of `ladder_with_baselines`: pass@1 with its interval (first on top).

    Model rows in the course's blue, baselines in grey; the best baseline's pass@1 is a line.
    """
    import matplotlib.pyplot as plt

    shown = table.iloc[::-1]
    fig, ax = plt.subplots(figsize=(8, 0.38 * len(shown) + 1.5))
    errors = [shown["pass@1"] - shown["pass@1 low"], shown["pass@1 high"] - shown["pass@1"]]
    colours = [RUNG_COLORS["L3"] if kind == "model" else RUNG_COLORS["L0"] for kind in shown["kind"]]
    ax.barh(list(shown.index), shown["pass@1"], xerr=errors, color=colours, capsize=3)
    best = table.attrs.get("best baseline")
    if best in table.index:
        ax.axvline(table.loc[best, "pass@1"], color="#424242", linestyle="--", linewidth=1, label=best)
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlim(0, 1)
    ax.set_xlabel("pass@1 (share of cases; mean over trials)")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_ladder_stops(stops: pd.DataFrame) -> Figure:
    """Share of episodes by ending (`ladder_stops`), one bar per (prompt, rung)."""
    shares = stops.copy()
    shares.index = [f"{prompt} {rung}" for prompt, rung in shares.index]
    return plot_shares(
        shares, "How the model's episodes ended, per prompt and rung", f"share of episodes at T={SAMPLED:g}"
    )


def ladder_recordings(paths: Iterable[str | Path] | None = None) -> pd.DataFrame:
    """One row per recording: its prompt, rung, temperature, episodes, model calls and provenance."""
    table = []
    for path in ladder_files() if paths is None else [Path(p) for p in paths]:
        records = [record for _, record in read_records(path)]
        calls = [r for r in records if r["kind"] == "call"]
        episodes = [r for r in records if r["kind"] == "episode"]
        if not calls or not episodes:
            raise LabError(f"{path}: a recording needs call and episode records")
        made = calls[0]["provenance"]
        table.append(
            {
                "file": path.name,
                "prompt": episodes[0]["prompt"],
                "rung": episodes[0].get("rung", DEFAULT_RUNG),
                "T": calls[0]["options"]["temperature"],
                "episodes": len(episodes),
                "calls": len(calls),
                "model sha256": made.get("model_sha256", "")[:12] + "…",
                "llama-cpp-python": made.get("versions", {}).get("llama_cpp_python"),
            }
        )
    return pd.DataFrame(table).set_index("file")


def ladder_changes(rows: Sequence[Row]) -> pd.DataFrame:
    """Per prompt at T=0: cases passed per rung, what L3 changed against L1, and how L3 failed.

    Columns: passed at each recorded rung (of the cases); "L3, not L1" and "L1, not L3" (cases
    passed at one rung only); "L3 final, wrong" (a read page's exact command, not the right
    page's) and "L3 other stops".
    """
    greedy = _groups(rows, 0.0)
    table = {}
    for prompt in dict.fromkeys(key[0] for key in greedy):
        line: dict[str, int | float] = {}
        passed = {}
        for rung in RUNGS:
            group = greedy.get((prompt, rung))
            if group:
                passed[rung] = {r["case"] for r in group if r["passed"]}
                line[rung] = len(passed[rung])
        both = {"L1", "L3"} <= set(passed)
        line["L3, not L1"] = len(passed["L3"] - passed["L1"]) if both else math.nan
        line["L1, not L3"] = len(passed["L1"] - passed["L3"]) if both else math.nan
        l3 = greedy.get((prompt, "L3"), [])
        line["L3 final, wrong"] = sum(ending(r) == WRONG for r in l3)
        line["L3 other stops"] = sum(r["stop"] != "final" for r in l3)
        table[prompt] = line
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.index.name = "prompt"
    return frame


def wrong_finals(rows: Sequence[Row], prompt: str, rung: str, temperature: float = 0.0) -> list[str]:
    """The cases whose episode at (prompt, rung, temperature) ended final with a wrong answer."""
    return sorted(
        {r["case"] for r in _groups(rows, temperature).get((prompt, rung), []) if ending(r) == WRONG}
    )
