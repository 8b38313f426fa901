"""Lab 02's tables from episode rows (`evaluation`). pass@1 is the mean over cases of c/n (c of a
case's n trials passed), pass^k the mean of C(c, k) / C(n, k) (τ-bench), NaN for k > n; each with its
95% interval over cases (`labkit.core.stats.rate`). A graded `final` is split by `ending`."""

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from labkit.core import stats
from labkit.core.cells import unbroken
from labkit.core.runtime import STOP_REASONS
from labkit.core.stats import Comparison, Interval
from labkit.core.stops import Stop

K_MAX = 5  # pass^k is shown for k = 1..K_MAX
Row = dict[str, Any]
Rows = Iterable[Row] | pd.DataFrame
# A final stop is not a success: graded tables and charts split it by the grade.
CORRECT, WRONG = "final, correct", "final, wrong"
_ENDINGS = (CORRECT, WRONG, *STOP_REASONS[1:])
NAN = Interval(math.nan, math.nan, math.nan, "")
COSTS = ("tools/success", "tokens/decision", "s/decision", "reused %")  # see `measures`


def pass_hat_k(c: int, n: int, k: int) -> float:
    """C(c, k) / C(n, k): the chance that k of n trials, c of which passed, all pass (serves: ours)."""
    if not (type(n) is int and type(c) is int and type(k) is int) or not 0 <= c <= n or not 1 <= k:
        raise ValueError(f"need ints 0 <= c <= n and k >= 1, got c={c}, n={n}, k={k}")
    return math.nan if k > n else math.comb(c, k) / math.comb(n, k)


def episodes_frame(rows: Rows) -> pd.DataFrame:
    """Episode rows as a DataFrame, one row per episode, with each one's `ending` (ValueError for none)."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:  # serves: user — nothing to evaluate is one line
        raise ValueError("no episodes to evaluate")
    if "stop" in frame and "ending" not in frame:
        frame = frame.assign(ending=[ending(row) for row in frame[["stop", "passed"]].to_dict("records")])
    return frame


def per_case(rows: Rows) -> dict[str, list[float]]:
    """Each case's trials as 0/1, in the order the cases first appear: the unit of every interval."""
    grouped = episodes_frame(rows).groupby("case", sort=False)["passed"]
    return {str(case): [float(v) for v in trials] for case, trials in grouped}


def rate_intervals(rows: Rows, k_max: int = K_MAX) -> dict[str, Interval]:
    """pass@1 and pass^1..pass^k_max over `rows`, each with its 95% interval over cases (`stats.rate`);
    NaN where a case ran fewer than k trials. ValueError for no rows."""
    trials = per_case(rows)
    found = {"pass@1": stats.rate(trials)}
    for k in range(1, k_max + 1):
        values = {case: pass_hat_k(int(sum(t)), len(t), k) for case, t in trials.items()}
        found[f"pass^{k}"] = NAN if any(map(math.isnan, values.values())) else stats.rate(values)
    return found


def compare_runs(name: str, rows: Rows, against: "Rows | stats.Values") -> Comparison:
    """pass@1 of `rows` minus `against`'s (rows, or each case's exact expected pass rate: a known
    value, so the interval carries the rows' variance only), paired by case on the cases both ran
    (`stats.compare_rows`). ValueError when they share no case."""
    known = isinstance(against, Mapping)
    return stats.compare_rows(name, per_case(rows), against if known else per_case(against), known=known)


def interval_columns(line: Mapping[str, Any], name: str, interval: Interval) -> dict[str, Any]:
    """`line` with `name`, `name low`, `name high` set from `interval`, rounded to 3 places."""
    values = {name: interval.estimate, f"{name} low": interval.low, f"{name} high": interval.high}
    return dict(line) | {key: round(value, 3) for key, value in values.items()}


def with_intervals(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with each rate and its `low`/`high` columns as one text cell, "0.633 [0.508, 0.758]"
    ("n/a" where it is NaN: pass^k beyond the trials run)."""
    shown = frame.copy()
    for name in [c for c in frame.columns if f"{c} low" in frame.columns and f"{c} high" in frame.columns]:
        shown[name] = [
            "n/a" if pd.isna(value) else f"{value:.3f} [{low:.3f}, {high:.3f}]"
            for value, low, high in zip(frame[name], frame[f"{name} low"], frame[f"{name} high"], strict=True)
        ]
        shown = shown.drop(columns=[f"{name} low", f"{name} high"])
    return shown


class IntervalTable:
    """A table as a notebook shows it: each interval one text cell that never wraps
    (`labkit.core.cells.unbroken`), and as text its `to_string`."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = with_intervals(frame)

    def _repr_html_(self) -> str:
        return unbroken(self.frame.to_html())

    def __repr__(self) -> str:
        return self.frame.to_string()


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
    return line | {
        "tools/success": _per(total["tool_calls"], total["passed"]),
        "tokens/decision": _per(tokens, total["decisions"], None),
        "s/decision": _per(seconds, total["decisions"]),
        "reused %": _per(100 * total["reused_tokens"], total["prompt_tokens"], None),
    }


def summary(rows: Rows, k_max: int = K_MAX) -> pd.DataFrame:
    """One row per policy: cases, trials per case, pass@1 and pass^1..k each with its `low`/`high`
    columns, and the COSTS: tool calls per success, tokens and seconds per decision, reused %."""
    groups = episodes_frame(rows).groupby("policy", sort=False)
    table = {policy: measures(group, k_max) for policy, group in groups}
    return pd.DataFrame.from_dict(table, orient="index").rename_axis("policy")


def ending(row: Mapping[str, Any]) -> str:
    """How a graded episode ended: its stop reason, with `final` split by the grade."""
    if row["stop"] != Stop.FINAL:
        return row["stop"]
    return CORRECT if row["passed"] else WRONG


def ending_counts(frame: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    """Episodes per group of `by` (first seen first) and ending (_ENDINGS order, unused ones left out)."""
    counts = frame.groupby(by, sort=False)["ending"].value_counts().unstack(fill_value=0)
    return counts[[stop for stop in _ENDINGS if stop in counts.columns]].rename_axis(columns=None)


def stop_counts(rows: Rows) -> pd.DataFrame:
    """Episodes per policy and ending (`ending`: a final split into correct and wrong)."""
    return ending_counts(episodes_frame(rows), "policy")
