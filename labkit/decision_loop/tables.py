"""Lab 02's tables from episode rows: pass@1, pass^k, cost, endings, latency, decisions.

A row is one graded episode (`labkit.decision_loop.evaluation` makes them: `policy`, `case`,
`trial`, `passed`, `stop`, tool calls, tokens, latency, and the runtime's `result`).

- pass@1 = mean over cases of c/n, the chance one trial passes (c of n trials passed);
- pass^k = mean over cases of C(c, k) / C(n, k), the chance that k trials drawn without
  replacement from a case's n all pass (τ-bench's reliability measure; pass^1 = pass@1).
  Undefined (NaN) for k > n: one trial at temperature 0 says nothing about the second.
- tool calls per completed task = tool calls summed over all episodes / episodes passed:
  what one success costs, failures' tool calls included;
- tokens and latency per decision: means over the model calls (latency as recorded live).

Graded, a `final` stop is split: "final, correct" (the episode passed) or "final, wrong"
(`ending`, used by `stop_counts` and the ladder's tables and charts).

Every rate has a 95% interval (`labkit.core.intervals`): pass@1 and pass^k a bootstrap over
cases (`rate_intervals`: a case's trials are resampled together, seeded, so the same rows give
the same interval); a share of episodes (`share_interval`) the Wilson interval when each case
ran once, the same bootstrap over cases otherwise; two policies on the same cases are compared
by the paired per-case difference (`paired_difference`). `summary` shows pass@1's and
pass^k_max's intervals as `low`/`high` columns; `with_intervals` shows each rate and its
interval in one cell, for reading.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from labkit.core.intervals import SEED, Interval, bootstrap, paired, wilson
from labkit.core.runtime import STOP_REASONS
from labkit.model.constraints import RUNGS

K_MAX = 5  # pass^k is shown for k = 1..K_MAX
Row = dict[str, Any]
# A final stop is not a success: graded tables and charts split it by the grade.
CORRECT, WRONG = "final, correct", "final, wrong"
ENDINGS = (CORRECT, WRONG, *STOP_REASONS[1:])


def pass_hat_k(c: int, n: int, k: int) -> float:
    """C(c, k) / C(n, k): the chance that k of n trials, c of which passed, all pass."""
    if not (type(n) is int and type(c) is int and type(k) is int) or not 0 <= c <= n or not 1 <= k:
        raise ValueError(f"need ints 0 <= c <= n and k >= 1, got c={c}, n={n}, k={k}")
    if k > n:
        return math.nan
    return math.comb(c, k) / math.comb(n, k)


def _by_case(rows: Iterable[Row]) -> dict[str, list[bool]]:
    per_case: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        per_case[row["case"]].append(bool(row["passed"]))
    if not per_case:
        raise ValueError("no episodes to evaluate")
    return per_case


def reliability(rows: Iterable[Row], k_max: int = K_MAX) -> dict[str, float]:
    """pass@1 and pass^1..pass^k_max over `rows` (one per episode: case, passed)."""
    counts = [(sum(results), len(results)) for results in _by_case(rows).values()]
    out = {"pass@1": sum(c / n for c, n in counts) / len(counts)}
    for k in range(1, k_max + 1):
        out[f"pass^{k}"] = sum(pass_hat_k(c, n, k) for c, n in counts) / len(counts)
    return out


def _mean_interval(values: list[float], seed: int) -> Interval:
    """The mean of one value per case, with its bootstrap interval over cases.

    The resamples are `bootstrap`'s own (its default statistic, vectorised: 1.5 s -> 0.1 s for
    lab 02's table with baselines, against a Python statistic called once per resample). The
    estimate is summed exactly (`math.fsum`): these means are sums of fractions such as 0.0925,
    which a float sum may leave just under the half that rounds them up to three places.
    """
    found = bootstrap({str(i): [v] for i, v in enumerate(values)}, seed=seed)
    return Interval(math.fsum(values) / len(values), found.low, found.high)


NAN = Interval(math.nan, math.nan, math.nan)


def rate_intervals(rows: Iterable[Row], k_max: int = K_MAX, *, seed: int = SEED) -> dict[str, Interval]:
    """pass@1 and pass^1..pass^k_max over `rows`, each with its 95% bootstrap interval over cases.

    Each statistic is a mean over cases of a per-case value (c/n, C(c,k)/C(n,k)), so resampling
    those values by case is the clustered bootstrap (`labkit.core.intervals.bootstrap`, seeded:
    the same rows give the same intervals). pass^k is NaN (estimate and bounds) when a case ran
    fewer than k trials. Raises ValueError for no rows.
    """
    counts = [(sum(results), len(results)) for results in _by_case(rows).values()]

    def interval(values: list[float]) -> Interval:
        if any(math.isnan(v) for v in values):
            return NAN
        return _mean_interval(values, seed)

    out = {"pass@1": interval([c / n for c, n in counts])}
    for k in range(1, k_max + 1):
        out[f"pass^{k}"] = interval([pass_hat_k(c, n, k) for c, n in counts])
    return out


def share_interval(rows: Iterable[Row], which: Callable[[Row], bool], *, seed: int = SEED) -> Interval:
    """The share of episodes for which `which(row)` holds, with its 95% interval.

    Wilson's interval when every case ran once (the episodes are independent); with several
    trials per case they are not, and the interval is the bootstrap over cases of the mean
    per-case share. Raises ValueError for no rows.
    """
    per_case: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        per_case[row["case"]].append(1.0 if which(row) else 0.0)
    if not per_case:
        raise ValueError("no episodes to evaluate")
    if all(len(values) == 1 for values in per_case.values()):
        return wilson(int(sum(v[0] for v in per_case.values())), len(per_case))
    return _mean_interval([sum(values) / len(values) for values in per_case.values()], seed)


def case_rates(rows: Iterable[Row]) -> dict[str, float]:
    """Each case's pass rate over its trials (what a paired comparison compares)."""
    return {case: sum(results) / len(results) for case, results in _by_case(rows).items()}


def paired_difference(
    rows: Iterable[Row], against: Iterable[Row], *, seed: int = SEED
) -> Interval:
    """pass@1 of `rows` minus pass@1 of `against` on the cases both ran, paired by case.

    The mean per-case difference of pass rates with its 95% bootstrap interval over those
    cases (`labkit.core.intervals.paired`): a difference is a difference only when the
    interval excludes 0. Raises ValueError when the two share no case.
    """
    return paired(case_rates(rows), case_rates(against), seed=seed)


def interval_columns(line: Mapping[str, Any], name: str, interval: Interval) -> dict[str, Any]:
    """`line` with `name`, `name low`, `name high` set from `interval`, rounded to 3 places."""
    return dict(line) | {
        name: round(interval.estimate, 3),
        f"{name} low": round(interval.low, 3),
        f"{name} high": round(interval.high, 3),
    }


def with_intervals(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` for reading: each rate with `<rate> low`/`<rate> high` columns becomes one text cell.

    "0.633 [0.508, 0.758]" (three places), or "–" where the rate is NaN (not measured, e.g.
    pass^5 of one trial per case); the low/high columns go, every other column stays as it is,
    in its place. Compute with `frame` itself: the result holds strings.
    """
    shown = frame.copy()
    for name in [c for c in frame.columns if f"{c} low" in frame.columns and f"{c} high" in frame.columns]:
        shown[name] = [
            "–" if pd.isna(value) else f"{value:.3f} [{low:.3f}, {high:.3f}]"
            for value, low, high in zip(frame[name], frame[f"{name} low"], frame[f"{name} high"], strict=True)
        ]
        shown = shown.drop(columns=[f"{name} low", f"{name} high"])
    return shown


def summary(rows: Iterable[Row], k_max: int = K_MAX) -> pd.DataFrame:
    """One row per policy: cases, trials per case, pass@1, pass^1..k, cost per success and decision.

    pass@1 and pass^k_max come with their 95% intervals (`rate_intervals`) as `low`/`high` columns.
    """
    by_policy: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_policy[row["policy"]].append(row)
    table = {}
    for policy, group in by_policy.items():
        trials = Counter(row["case"] for row in group)
        passed = sum(row["passed"] for row in group)
        decisions = sum(row["decisions"] for row in group)
        line: dict[str, Any] = {"cases": len(trials), "trials": max(trials.values())}
        line |= {name: round(value, 3) for name, value in reliability(group, k_max).items()}
        found = rate_intervals(group, k_max)
        for name in ("pass@1", f"pass^{k_max}"):
            line |= {f"{name} low": round(found[name].low, 3), f"{name} high": round(found[name].high, 3)}
        tools = sum(row["tool_calls"] for row in group)
        line["tools/success"] = round(tools / passed, 2) if passed else math.nan
        prompt = sum(row["prompt_tokens"] for row in group)
        line["tokens/decision"] = (
            round((prompt + sum(row["completion_tokens"] for row in group)) / decisions)
            if decisions
            else math.nan
        )
        line["reused %"] = (
            round(100 * sum(row["reused_tokens"] for row in group) / prompt) if prompt else math.nan
        )
        table[policy] = line
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.index.name = "policy"
    return frame


def ending(row: Row) -> str:
    """How a graded episode ended: its stop reason, with `final` split by the grade."""
    if row["stop"] != "final":
        return row["stop"]
    return CORRECT if row["passed"] else WRONG


def stop_counts(rows: Iterable[Row]) -> pd.DataFrame:
    """Episodes per policy and ending (ENDINGS order, unused ones left out).

    Graded: `final` is split into "final, correct" and "final, wrong" (see `ending`).
    """
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        counts[row["policy"]][ending(row)] += 1
    seen = [stop for stop in ENDINGS if any(stop in c for c in counts.values())]
    frame = pd.DataFrame(
        [[counts[p][stop] for stop in seen] for p in counts], index=list(counts), columns=seen
    )
    frame.index.name = "policy"
    return frame


def latency(rows: Iterable[Row]) -> pd.DataFrame:
    """Mean and total recorded model latency per policy (decisions of scripted policies excluded)."""
    table = {}
    for policy, group in pd.DataFrame(list(rows)).groupby("policy", sort=False):
        decisions = int(group["decisions"].sum())
        if decisions:
            table[policy] = {
                "decisions": decisions,
                "seconds/decision": round(float(group["latency_s"].sum()) / decisions, 3),
                "seconds in total": round(float(group["latency_s"].sum()), 1),
            }
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.index.name = "policy"
    return frame


def decision_profile(rows: Iterable[Row]) -> pd.DataFrame:
    """What each policy's decisions looked like, as shares (NaN where the situation never arose).

    - search first: episodes whose first decision is a search;
    - reads a hit: reads of a page id that an earlier search in the episode returned;
    - repeats: decisions identical to the one just before them (the loop going nowhere);
    - final cites a read: final answers whose citation is a page read in the episode;
    - final copies it: final answers equal, word for word, to that page's command.

    Rows of recorded model runs come in prompt, rung (L0..L3) and temperature order, after any
    other policy's rows (those in the order first seen).
    """
    tallies: dict[str, Counter[str]] = defaultdict(Counter)
    order: dict[str, tuple[str, int, float]] = {}
    for row in rows:
        rung = row.get("rung")
        order.setdefault(row["policy"], (
            (str(row.get("prompt", "")), RUNGS.index(rung), float(row.get("temperature", 0)))
            if rung in RUNGS else ("", -1, float(len(order)))
        ))
        tally = tallies[row["policy"]]
        decisions = [entry.get("decision") for entry in row["result"]["trace"]]
        hits, pages, previous = set(), {}, None
        tally["episodes"] += 1
        tally["search first"] += (
            bool(decisions) and isinstance(decisions[0], dict) and (decisions[0].get("action") == "search")
        )
        for entry, decision in zip(row["result"]["trace"], decisions, strict=True):
            if not isinstance(decision, dict):
                continue
            tally["decisions"] += 1
            tally["repeats"] += decision == previous
            tally["after first"] += previous is not None
            previous = decision
            action, result = decision.get("action"), entry.get("result")
            if action == "read":
                tally["reads"] += 1
                tally["reads a hit"] += decision.get("id") in hits
                if isinstance(result, dict) and "command" in result:
                    pages[result["id"]] = result["command"]
            elif action == "search" and isinstance(result, list):
                hits |= {hit["id"] for hit in result}
            elif action == "final":
                tally["finals"] += 1
                cited = decision.get("citation") in pages
                tally["final cites a read"] += cited
                tally["final copies it"] += cited and decision.get("answer") == pages[decision["citation"]]

    def share(part: int, whole: int) -> float:
        return round(part / whole, 2) if whole else math.nan

    table = {
        policy: {
            "search first": share(t["search first"], t["episodes"]),
            "reads a hit": share(t["reads a hit"], t["reads"]),
            "repeats": share(t["repeats"], t["after first"]),
            "final cites a read": share(t["final cites a read"], t["finals"]),
            "final copies it": share(t["final copies it"], t["finals"]),
        }
        for policy, t in sorted(tallies.items(), key=lambda item: order[item[0]])
    }
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.index.name = "policy"
    return frame
