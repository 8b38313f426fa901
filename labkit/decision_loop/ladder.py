"""The constraint ladder's results (lab 02): SmolLM2's recorded runs, each one prompt at one rung
(`labkit.model.constraints`), at T=0 once per case or at T=0.7 five times, grouped by (prompt, rung)."""

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from labkit.core import questions, stats
from labkit.core.colours import OUTCOMES
from labkit.core.errors import LabError
from labkit.core.forest import forest_plot
from labkit.core.stats import Comparison, Interval, Values, unit_means
from labkit.core.stops import Stop
from labkit.decision_loop import tables
from labkit.decision_loop.baselines import KINDS, expected_pass
from labkit.decision_loop.evaluation import SCRIPTED, replay_trials, scripted_trials
from labkit.decision_loop.tables import CORRECT, K_MAX, NAN, WRONG, Row, interval_columns
from labkit.decision_loop.trials import cases_of
from labkit.model.constraints import DEFAULT_RUNG, RUNG_NAMES, RUNGS
from labkit.model.record import read_records
from labkit.model.replay import TRIALS

SAMPLED = 0.7  # the temperature of the repeated trials
Baselines = Sequence[Row] | Mapping[str, Values]  # episode rows, or {name: {case: expected pass rate}}
_ORDER = {name: rank for rank, name in enumerate(("base", "example", *RUNGS))}


def ladder_files() -> list[Path]:
    """The recorded SmolLM2 runs of the docuctl policy: `docuctl-smollm2-*.jsonl`, sorted."""
    return sorted(TRIALS.glob("docuctl-smollm2-*.jsonl"))


def ladder_rows() -> list[Row]:
    """Every episode of `ladder_files()`, replayed and graded."""
    return [  # one label scheme for every run, whenever it was recorded
        row | {"policy": f"{row['prompt']} {row['rung']} T={row['temperature']:g}"}
        for path in ladder_files()
        for row in replay_trials(path)
    ]


def _place(name: str) -> int:
    """Prompts and rungs in the course's order (`_ORDER`), any other one after them."""
    return _ORDER.get(name, len(_ORDER))


def _ordered(rows: Sequence[Row], temperature: float) -> pd.DataFrame:
    """The episodes at `temperature`, in prompt and rung order (stable)."""
    frame = tables.episodes_frame(rows)
    return frame[frame["temperature"] == temperature].sort_values(
        ["prompt", "rung"], key=lambda c: c.map(_place), kind="stable"
    )


def _groups(rows: Sequence[Row], temperature: float) -> dict[tuple[str, str], pd.DataFrame]:
    return dict(iter(_ordered(rows, temperature).groupby(["prompt", "rung"], sort=False)))


def ladder_table(rows: Sequence[Row], *, intervals: bool = False) -> pd.DataFrame:
    """One row per (prompt, rung): pass@1 at T=0; trials, pass^1..K_MAX, tool calls per success,
    tokens and seconds per decision at T=0.7; with `intervals`, each rate's `low` and `high`."""
    greedy, sampled = _groups(rows, 0.0), _groups(rows, SAMPLED)
    keys = sorted(dict.fromkeys([*greedy, *sampled]), key=lambda key: tuple(map(_place, key)))
    rates = [f"pass^{k}{end}" for k in range(1, K_MAX + 1) for end in ("", " low", " high")]
    table = []
    for key in keys:
        pass_at_1 = tables.rate_intervals(greedy[key], 1)["pass@1"] if key in greedy else NAN
        line = interval_columns({"constraint": RUNG_NAMES[key[1]]}, "pass@1 T=0", pass_at_1)
        found = tables.measures(sampled[key]) if key in sampled else {"trials": 0}
        line |= {name: found.get(name, math.nan) for name in ["trials", *rates, *tables.COSTS[:3]]}
        if not intervals:
            line = {name: value for name, value in line.items() if not name.endswith((" low", " high"))}
        table.append(line)
    return pd.DataFrame(table, index=pd.MultiIndex.from_tuples(keys, names=["prompt", "rung"]))


def _baseline_values(baselines: Baselines) -> dict[str, Values]:
    """Each baseline's per-case values: its exact expected pass rates as given, or from its rows."""
    if isinstance(baselines, Mapping):
        return dict(baselines)
    groups = tables.episodes_frame(baselines).groupby("policy", sort=False)
    return {str(policy): tables.per_case(group) for policy, group in groups}


def _model_groups(rows: Sequence[Row]) -> dict[str, pd.DataFrame]:
    """The model's runs in prompt, rung and temperature order. LabError for no rows."""
    if not rows:  # serves: user
        raise LabError("no model episodes to put beside the baselines")
    ordered = sorted(rows, key=lambda row: (_place(row["prompt"]), _place(row["rung"]), row["temperature"]))
    return dict(iter(tables.episodes_frame(ordered).groupby("policy", sort=False)))


# Each baseline in one sentence (a kind's rung is the constraint it draws under).
DEFINITIONS = {
    "random": "each decision drawn uniformly among those its rung admits",
    "search, then answer": "as random, but answering (uniformly among the finals) once a final is admissible",
    "scripted loop": "lab 01's fixed steps: search the question, read the first hit, answer with its command",
    "adaptive loop": "lab 01's two rules: an empty search retried, typo fixed; a conflicting page skipped",
}


def exact_baselines(
    cases: Sequence[Mapping[str, Any]] | str = "all", rungs: Sequence[str] = RUNGS
) -> dict[str, dict[str, float]]:
    """Each baseline's exact expected pass rate per case: both random kinds at each of `rungs`
    (`baselines.expected_pass`: every branch of its draws enumerated), then the scripted and
    adaptive loops (deterministic: one run, 0 or 1)."""
    chosen = cases_of(cases) if isinstance(cases, str) else list(cases)
    found = {
        f"{kind} {rung}": {case["id"]: expected_pass(kind, rung, case) for case in chosen}
        for kind in KINDS
        for rung in rungs
    }
    return found | {
        name: {row["case"]: float(row["passed"]) for row in scripted_trials(name, chosen, 1)}
        for name in SCRIPTED
    }


def baseline_table(table: pd.DataFrame) -> pd.DataFrame:
    """The baselines of `ladder_with_baselines`: cases passed (in expectation) of the cases, pass@1
    with its interval over cases, and the definition."""
    chosen = table[table["kind"] == "baseline"]
    shown = tables.with_intervals(chosen[["passes", "cases", "pass@1", "pass@1 low", "pass@1 high"]])
    kinds = [next(kind for kind in DEFINITIONS if name.startswith(kind)) for name in chosen.index]
    return shown.assign(definition=[DEFINITIONS[kind] for kind in kinds])


def ladder_with_baselines(rows: Sequence[Row], baselines: Baselines) -> pd.DataFrame:
    """One row per policy, the model's runs then the `baselines`: kind, cases, trials ("exact" for an
    exact expectation), passes (in expectation), pass@1 and (models only) pass^K_MAX with their 95%
    intervals over cases; the best baseline by pass@1 in `attrs["best baseline"]`. LabError for no
    model rows."""
    table = {}
    for policy, group in _model_groups(rows).items():
        found = tables.rate_intervals(group)
        trials = tables.per_case(group)
        line = {
            "kind": "model",
            "cases": len(trials),
            "trials": max(map(len, trials.values())),
            "passes": round(math.fsum(unit_means(trials).values()), 3),
        }
        for name in ("pass@1", f"pass^{K_MAX}"):
            line = interval_columns(line, name, found[name])
        table[policy] = line
    for policy, values in _baseline_values(baselines).items():
        exact = all(isinstance(v, int | float) for v in values.values())
        trials = "exact" if exact else max(len(v) for v in values.values())  # type: ignore[arg-type]
        passes = round(math.fsum(unit_means(values).values()), 3)
        line = {"kind": "baseline", "cases": len(values), "trials": trials, "passes": passes}
        line = interval_columns(line, "pass@1", stats.rate(values))
        table[policy] = interval_columns(line, f"pass^{K_MAX}", NAN)  # what the lab compares is pass@1
    frame = pd.DataFrame.from_dict(table, orient="index").rename_axis("policy")
    chosen = frame[frame["kind"] == "baseline"]["pass@1"]
    frame.attrs["best baseline"] = chosen.idxmax() if len(chosen) else None
    return frame


def run_comparisons(rows: Sequence[Row], baselines: Baselines) -> list[Comparison]:
    """Each model run's pass@1 minus the scripted loop's and minus the best baseline's (by pass@1),
    then each run minus another run where a lab 02 question declares that pair (named, as
    `questions` matches them, by the runs' labels after the model's name), paired by case
    (`tables.compare_runs`), for `questions.answer("02", ..)` to decide."""
    values, groups = _baseline_values(baselines), _model_groups(rows)
    best = ladder_with_baselines(rows, values).attrs["best baseline"]
    against = list(dict.fromkeys(name for name in ("scripted loop", best) if name in values))
    found = [
        tables.compare_runs(f"{policy} − {other}", group, values[other])
        for policy, group in groups.items()
        for other in against
    ]
    # A declared name is a recording's label, or its label after the model's ("example L3 T=0").
    runs = {name: policy for policy in groups for name in (policy, policy.split(" ", 1)[-1])}
    declared = [
        name.split(" − ") for q in questions.questions().values() if q.lab == "02" for name in q.comparisons
    ]
    found += [
        tables.compare_runs(f"{runs[a]} − {b}", groups[runs[a]], groups[runs[b]])
        for a, b in declared
        if a in runs and b in runs
    ]
    return found


def ladder_stops(rows: Sequence[Row]) -> pd.DataFrame:
    """Episodes per (prompt, rung) and ending at T=0.7 (a final split by its grade)."""
    return tables.ending_counts(_ordered(rows, SAMPLED), ["prompt", "rung"])


def ladder_changes(rows: Sequence[Row]) -> pd.DataFrame:
    """Per prompt at T=0: cases passed at each rung; "L3, not L1" and "L1, not L3" (passed at one
    rung only); how L3 failed: "L3 final, wrong" (a read page's command, not the right page's)
    and "L3 other stops"."""
    greedy = _groups(rows, 0.0)
    table = {}
    for prompt in dict.fromkeys(key[0] for key in greedy):
        passed = {r: set(g.loc[g["passed"] > 0, "case"]) for (p, r), g in greedy.items() if p == prompt}
        line: dict[str, int | float] = {rung: len(passed[rung]) for rung in RUNGS if rung in passed}
        both = {"L1", "L3"} <= set(passed)
        line["L3, not L1"] = len(passed["L3"] - passed["L1"]) if both else math.nan
        line["L1, not L3"] = len(passed["L1"] - passed["L3"]) if both else math.nan
        l3 = greedy.get((prompt, "L3"), pd.DataFrame({"ending": [], "stop": []}))
        line["L3 final, wrong"] = int((l3["ending"] == WRONG).sum())
        line["L3 other stops"] = int((l3["stop"] != Stop.FINAL).sum())
        table[prompt] = line
    return pd.DataFrame.from_dict(table, orient="index").rename_axis("prompt")


def ladder_recordings() -> pd.DataFrame:
    """One row per recording: its prompt, rung, temperature, episodes, model calls and provenance."""
    table = []
    for path in ladder_files():
        records = [record for _, record in read_records(path)]
        calls = [r for r in records if r["kind"] == "call"]
        episodes = [r for r in records if r["kind"] == "episode"]
        made, first = calls[0]["provenance"], episodes[0]
        table.append(
            {
                "file": path.name,
                "prompt": first["prompt"],
                "rung": first.get("rung", DEFAULT_RUNG),
                "T": calls[0]["options"]["temperature"],
                "episodes": len(episodes),
                "calls": len(calls),
                "model sha256": made.get("model_sha256", "")[:12] + "…",
                "llama-cpp-python": made.get("versions", {}).get("llama_cpp_python"),
            }
        )
    return pd.DataFrame(table).set_index("file")


# A correct final in the course's green, a wrong one in its red-brown, the policy's failures
# warm, the runtime's timers and budgets cool; an ungraded final neutral.
_STOP_COLORS = {
    CORRECT: OUTCOMES["correct"],
    WRONG: OUTCOMES["wrong"],
    Stop.FINAL: "#455a64",
    Stop.INVALID_DECISION: "#fbc02d",
    Stop.UNREAD_CITATION: "#8e24aa",
    Stop.TOOL_LIMIT: "#ef6c00",
    Stop.TURN_LIMIT: "#a1887f",
    Stop.PROVIDER_ERROR: "#424242",
    Stop.STEP_TIMEOUT: "#1565c0",
    Stop.DEADLINE: "#42a5f5",
    Stop.BUDGET: "#00897b",
    Stop.ABORTED: "#78909c",
}


def plot_ladder_stops(stops: pd.DataFrame) -> Figure:
    """`ladder_stops` as stacked shares of episodes, first row on top (the intervals over cases of
    the "final, correct" share are the ladder table's pass^1)."""
    import matplotlib.pyplot as plt

    counts = stops.set_axis([f"{prompt} {rung}" for prompt, rung in stops.index])
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(counts) + 1.5))
    shares = counts.div(counts.sum(axis=1), axis=0).iloc[::-1]
    shares.plot.barh(stacked=True, ax=ax, width=0.7, color=[_STOP_COLORS[stop] for stop in counts.columns])
    ax.set(
        xlim=(0, 1),
        ylabel="",
        title="How the model's episodes ended, per prompt and rung",
        xlabel=f"share of episodes at T={SAMPLED:g}",
    )
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def plot_with_baselines(
    table: pd.DataFrame, bands: Sequence[str], mde: float | None = None, title: str = ""
) -> Figure:
    """A forest plot of pass@1 per model row of `ladder_with_baselines`, the `bands` baselines as
    shaded bands, and the MDE as a bracket from the scripted loop's pass@1."""

    def interval(name: str) -> Interval:
        line = table.loc[name]
        return Interval(line["pass@1"], line["pass@1 low"], line["pass@1 high"])

    models = [(name, interval(name)) for name in table.index[table["kind"] == "model"]]
    start = table.loc["scripted loop", "pass@1"] if "scripted loop" in table.index else 0.0
    return forest_plot(
        models,
        bands={name: interval(name) for name in bands},
        mde=None if mde is None or math.isnan(mde) else (start, mde),
        xlabel="pass@1 (share of cases; mean over trials), 95% interval",
        title=title,
    )
