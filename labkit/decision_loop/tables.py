"""Lab 02's tables from episode rows (`evaluation`). pass@1 is the mean over cases of c/n (c of a
case's n trials passed), pass^k the mean of C(c, k) / C(n, k) (τ-bench), NaN for k > n; each with a
95% interval, a seeded bootstrap over cases. A graded `final` is split by `ending`."""

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from labkit.core.intervals import SEED, Interval, bootstrap, paired, wilson
from labkit.core.runtime import STOP_REASONS
from labkit.model.constraints import RUNGS

K_MAX = 5  # pass^k is shown for k = 1..K_MAX
Row = dict[str, Any]
Rows = Iterable[Row] | pd.DataFrame
# A final stop is not a success: graded tables and charts split it by the grade.
CORRECT, WRONG = "final, correct", "final, wrong"
_ENDINGS = (CORRECT, WRONG, *STOP_REASONS[1:])
NAN = Interval(math.nan, math.nan, math.nan)
COSTS = ("tools/success", "tokens/decision", "s/decision", "reused %")  # see `measures`


def pass_hat_k(c: int, n: int, k: int) -> float:
    """C(c, k) / C(n, k): the chance that k of n trials, c of which passed, all pass."""
    if not (type(n) is int and type(c) is int and type(k) is int) or not 0 <= c <= n or not 1 <= k:
        raise ValueError(f"need ints 0 <= c <= n and k >= 1, got c={c}, n={n}, k={k}")
    if k > n:
        return math.nan
    return math.comb(c, k) / math.comb(n, k)


def episodes_frame(rows: Rows) -> pd.DataFrame:
    """Episode rows as a DataFrame, one row per episode, with each one's `ending` (ValueError for none)."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        raise ValueError("no episodes to evaluate")
    if "stop" in frame and "ending" not in frame:
        frame = frame.assign(ending=[ending(row) for row in frame[["stop", "passed"]].to_dict("records")])
    return frame


def _counts(rows: Rows) -> dict[str, tuple[int, int]]:
    """(c, n) of each case, in the order the cases first appear."""
    per_case = episodes_frame(rows).groupby("case", sort=False)["passed"].agg(["sum", "count"])
    return {case: (int(c), int(n)) for case, c, n in per_case.itertuples()}


def _mean_interval(values: list[float]) -> Interval:
    """The mean of one value per case, summed exactly (`math.fsum`), with the bootstrap's interval."""
    found = bootstrap({str(i): [v] for i, v in enumerate(values)}, seed=SEED)
    return Interval(math.fsum(values) / len(values), found.low, found.high)


def rate_intervals(rows: Rows, k_max: int = K_MAX) -> dict[str, Interval]:
    """pass@1 and pass^1..pass^k_max over `rows`, each with its 95% bootstrap interval over cases
    (NaN where a case ran fewer than k trials). Raises ValueError for no rows."""
    counts = list(_counts(rows).values())
    rates = {"pass@1": [c / n for c, n in counts]}
    rates |= {f"pass^{k}": [pass_hat_k(c, n, k) for c, n in counts] for k in range(1, k_max + 1)}
    return {
        name: NAN if any(map(math.isnan, values)) else _mean_interval(values)
        for name, values in rates.items()
    }


def share_interval(cases: Sequence[str], hits: Sequence[bool]) -> Interval:
    """The share of episodes that hit (episode i is of case `cases[i]`), with its 95% interval:
    Wilson's when each case ran once, else the bootstrap over cases of the per-case share."""
    per_case = pd.Series(np.asarray(hits, dtype=float)).groupby(list(cases), sort=False)
    if per_case.ngroups == 0:
        raise ValueError("no episodes to evaluate")
    if (per_case.size() == 1).all():
        return wilson(int(per_case.sum().sum()), per_case.ngroups)
    return _mean_interval([float(v) for v in per_case.sum() / per_case.size()])


def paired_difference(rows: Rows, against: Rows) -> Interval:
    """pass@1 of `rows` minus pass@1 of `against`, paired by case on the cases both ran, with its
    95% bootstrap interval (`labkit.core.intervals.paired`). ValueError when they share no case."""
    rates = [{case: c / n for case, (c, n) in _counts(episodes).items()} for episodes in (rows, against)]
    return paired(*rates, seed=SEED)


def interval_columns(line: Mapping[str, Any], name: str, interval: Interval) -> dict[str, Any]:
    """`line` with `name`, `name low`, `name high` set from `interval`, rounded to 3 places."""
    values = {name: interval.estimate, f"{name} low": interval.low, f"{name} high": interval.high}
    return dict(line) | {key: round(value, 3) for key, value in values.items()}


def with_intervals(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with each rate and its `low`/`high` columns as one text cell, "0.633 [0.508, 0.758]"
    ("–" where it is NaN)."""
    shown = frame.copy()
    for name in [c for c in frame.columns if f"{c} low" in frame.columns and f"{c} high" in frame.columns]:
        shown[name] = [
            "–" if pd.isna(value) else f"{value:.3f} [{low:.3f}, {high:.3f}]"
            for value, low, high in zip(frame[name], frame[f"{name} low"], frame[f"{name} high"], strict=True)
        ]
        shown = shown.drop(columns=[f"{name} low", f"{name} high"])
    return shown


def _per(part: float, whole: float, places: int | None = 2) -> float:
    return round(part / whole, places) if whole else math.nan


def measures(group: pd.DataFrame, k_max: int = K_MAX) -> dict[str, Any]:
    """One run's figures: cases, trials per case, pass@1 and pass^1..k_max with their intervals, COSTS."""
    line = {"cases": group["case"].nunique(), "trials": int(group["case"].value_counts().max())}
    for name, interval in rate_intervals(group, k_max).items():
        line = interval_columns(line, name, interval)
    counts = ("passed", "decisions", "tool_calls", "prompt_tokens", "completion_tokens", "reused_tokens")
    total = {key: int(group[key].sum()) for key in counts}
    seconds = sum(group["latency_s"].tolist())  # in the rows' order, as a sum over them would
    tokens = total["prompt_tokens"] + total["completion_tokens"]
    line["tools/success"] = _per(total["tool_calls"], total["passed"])
    line["tokens/decision"] = _per(tokens, total["decisions"], None)
    line["s/decision"] = _per(seconds, total["decisions"])
    line["reused %"] = _per(100 * total["reused_tokens"], total["prompt_tokens"], None)
    return line


def summary(rows: Rows, k_max: int = K_MAX) -> pd.DataFrame:
    """One row per policy: cases, trials per case, pass@1, pass^1..k (pass@1's and pass^k_max's
    intervals as `low`/`high` columns), tool calls per success, tokens per decision, reused %."""
    groups = episodes_frame(rows).groupby("policy", sort=False)
    table = {policy: measures(group, k_max) for policy, group in groups}
    bounds = [f"{name} {end}" for name in ("pass@1", f"pass^{k_max}") for end in ("low", "high")]
    rates = ["pass@1", *(f"pass^{k}" for k in range(1, k_max + 1))]
    columns = ["cases", "trials", *rates, *bounds, *COSTS[:2], COSTS[3]]
    return pd.DataFrame.from_dict(table, orient="index")[columns].rename_axis("policy")


def ending(row: Mapping[str, Any]) -> str:
    """How a graded episode ended: its stop reason, with `final` split by the grade."""
    if row["stop"] != "final":
        return row["stop"]
    return CORRECT if row["passed"] else WRONG


def ending_counts(frame: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    """Episodes per group of `by` (first seen first) and ending (_ENDINGS order, unused ones left out)."""
    counts = frame.groupby(by, sort=False)["ending"].value_counts().unstack(fill_value=0)
    return counts[[stop for stop in _ENDINGS if stop in counts.columns]].rename_axis(columns=None)


def stop_counts(rows: Rows) -> pd.DataFrame:
    """Episodes per policy and ending (`ending`: a final split into correct and wrong)."""
    return ending_counts(episodes_frame(rows), "policy")


def latency(rows: Rows) -> pd.DataFrame:
    """Mean and total recorded model latency per policy (policies without model calls left out)."""
    total = episodes_frame(rows).groupby("policy", sort=False)[["decisions", "latency_s"]].sum()
    total = total[total["decisions"] > 0]
    per = (total["latency_s"] / total["decisions"]).round(3)
    return total.assign(**{"seconds/decision": per, "seconds in total": total.pop("latency_s").round(1)})


def _tally(row: Row) -> Counter[str]:
    """What one episode's decisions did, counted for `decision_profile`."""
    tally: Counter[str] = Counter(episodes=1)
    hits, pages, previous = set(), {}, None
    trace = row["result"]["trace"]
    first = trace[0].get("decision") if trace else None
    tally["search first"] = isinstance(first, dict) and first.get("action") == "search"
    for entry in trace:
        decision, result = entry.get("decision"), entry.get("result")
        if not isinstance(decision, dict):
            continue
        tally["repeats"] += decision == previous
        tally["after first"] += previous is not None
        previous, action = decision, decision.get("action")
        if action == "read":
            tally["reads"] += 1
            tally["reads a hit"] += decision.get("id") in hits
            if isinstance(result, dict) and "command" in result:
                pages[result["id"]] = result["command"]
        elif action == "search" and isinstance(result, list):
            hits |= {hit["id"] for hit in result}
        elif action == "final":
            cited = decision.get("citation") in pages
            tally["finals"] += 1
            tally["final cites a read"] += cited
            tally["final copies it"] += cited and decision.get("answer") == pages[decision["citation"]]
    return tally


_PROFILE = {  # what is counted: out of what
    "search first": "episodes",
    "reads a hit": "reads",
    "repeats": "after first",
    "final cites a read": "finals",
    "final copies it": "finals",
}


def decision_profile(rows: Iterable[Row]) -> pd.DataFrame:
    """What each recorded run's decisions looked like, as shares (NaN where the situation never
    arose), one row per run in prompt, rung and temperature order: search first; reads of a page
    a search returned; repeats of the decision just before; finals citing a page read; finals
    copying its command word for word."""
    frame = episodes_frame(rows)
    tallies = pd.DataFrame([_tally(row) for row in frame.to_dict("records")]).fillna(0)
    tallies = tallies.groupby(frame["policy"].to_numpy()).sum()
    runs = frame.drop_duplicates("policy").assign(rank=lambda runs: runs["rung"].map(RUNGS.index))
    order = runs.sort_values(["prompt", "rank", "temperature"], kind="stable")["policy"]
    shares = {
        part: (tallies[part] / tallies[whole]).where(tallies[whole] > 0).map(lambda v: round(float(v), 2))
        for part, whole in _PROFILE.items()
    }
    return pd.DataFrame(shares).loc[order].rename_axis("policy")
