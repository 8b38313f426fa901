"""The constraint ladder's results (lab 02): one row per prompt and rung, from recorded trials.

Each recorded docuctl run is one prompt at one rung (`labkit.model.constraints`) and one
temperature: temperature 0 with one trial per case (pass@1 of the greedy model), and
temperature 0.7 with k seeded trials per case (pass^k). `ladder_rows` replays every
recorded episode through the runtime (`labkit.decision_loop.evaluation.replay_trials`, which checks each
one ends as it did live); the tables below group those rows by (prompt, rung).

- `ladder_table`: pass@1 at T=0; pass^1..pass^5 at T=0.7; tool calls per success, tokens
  and seconds per decision over the T=0.7 episodes (seconds as recorded live);
- `ladder_stops`: how the T=0.7 episodes ended, per prompt and rung (a final split into
  correct and wrong);
- `ladder_by_cases`: pass rate at T=0.7 on lab 01's base and adaptive cases;
- `ladder_changes`, `wrong_finals`: what the rungs changed case by case at T=0;
- `ladder_recordings`: the recordings behind it all, with their provenance;
- `plot_ladder`: pass^k against k, one panel per prompt, one line per rung;
- `plot_ladder_stops` (on `plot_shares`): the endings of `ladder_stops` as shares.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from labkit.baseline.corpus import Corpus, docuctl
from labkit.core.colours import OUTCOMES
from labkit.core.errors import LabError
from labkit.decision_loop.evaluation import replay_trials
from labkit.decision_loop.tables import CORRECT, ENDINGS, K_MAX, WRONG, Row, ending, reliability
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


def ladder_table(rows: Sequence[Row], k_max: int = K_MAX) -> pd.DataFrame:
    """One row per (prompt, rung): see the module docstring for the columns.

    A cell is NaN where that run was not recorded (e.g. no T=0 trials for a rung).
    """
    greedy, sampled = _groups(rows, 0.0), _groups(rows, SAMPLED)
    keys = sorted({*greedy, *sampled}, key=lambda k: (PROMPT_ORDER.index(k[0]), RUNGS.index(k[1])))
    table = []
    for key in keys:
        line: dict[str, float | str] = {"constraint": RUNG_NAMES[key[1]]}
        line["pass@1 T=0"] = round(reliability(greedy[key])["pass@1"], 3) if key in greedy else math.nan
        group = sampled.get(key, [])
        found = reliability(group, k_max) if group else {}
        line["trials"] = max(Counter(r["case"] for r in group).values()) if group else 0
        for k in range(1, k_max + 1):
            line[f"pass^{k}"] = round(found[f"pass^{k}"], 3) if group else math.nan
        passed = sum(r["passed"] for r in group)
        decisions = sum(r["decisions"] for r in group)
        line["tools/success"] = round(sum(r["tool_calls"] for r in group) / passed, 2) if passed else math.nan
        tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in group)
        line["tokens/decision"] = round(tokens / decisions) if decisions else math.nan
        line["s/decision"] = (
            round(sum(r["latency_s"] for r in group) / decisions, 2) if decisions else math.nan
        )
        table.append(line)
    return pd.DataFrame(table, index=_index(keys))


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
    shares = counts[endings].div(counts[endings].sum(axis=1), axis=0)
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(shares) + 1.5))
    shares.iloc[::-1].plot.barh(
        stacked=True, ax=ax, width=0.7, color=[STOP_COLORS[stop] for stop in endings]
    )
    ax.set_xlim(0, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def plot_ladder(table: pd.DataFrame) -> Figure:
    """pass^k against k: one panel per prompt, one line per rung (whatever the data shows)."""
    import matplotlib.pyplot as plt

    columns = [c for c in table.columns if c.startswith("pass^")]
    ks = [int(c.split("^")[1]) for c in columns]
    prompts = list(dict.fromkeys(table.index.get_level_values("prompt")))
    fig, axes = plt.subplots(1, len(prompts), figsize=(5 * len(prompts), 3.6), sharey=True, squeeze=False)
    for ax, prompt in zip(axes[0], prompts, strict=True):
        for rung, row in table.loc[prompt].iterrows():
            ax.plot(
                ks,
                [row[c] for c in columns],
                marker="o",
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
