"""Evaluating policies over repeated trials: pass@1, pass^k, stop reasons, cost per decision.

Every figure here is recomputed from episodes that were run, never carried over: a model
policy's episodes are replayed through the runtime from its recorded calls and graded by
`labkit.baseline.grading.outcome`; a scripted policy is run k times like any other (its trials are
identical, and the table shows it rather than assuming it).

- pass@1 = mean over cases of c/n, the chance one trial passes (c of n trials passed);
- pass^k = mean over cases of C(c, k) / C(n, k), the chance that k trials drawn without
  replacement from a case's n all pass (τ-bench's reliability measure; pass^1 = pass@1).
  Undefined (NaN) for k > n: one trial at temperature 0 says nothing about the second.
- tool calls per completed task = tool calls summed over all episodes / episodes passed:
  what one success costs, failures' tool calls included;
- tokens and latency per decision: means over the model calls (latency as recorded live).

Graded, a `final` stop is split: "final, correct" (the episode passed) or "final, wrong"
(`ending`, used by `stop_counts` and the charts). `replay_case` replays one recorded model
episode for display; `under_limits` runs the scripted loops under a pair of limits (lab
02's knob).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from labkit.baseline.controllers import adaptive_policy, scripted
from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.grading import Graded, graded, outcome
from labkit.baseline.task import task_from
from labkit.core.colours import OUTCOMES
from labkit.core.errors import LabError
from labkit.core.runtime import STOP_REASONS
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.trials import cases_of, limits_for, run_case
from labkit.model.backend import Reply, Request
from labkit.model.constraints import DEFAULT_RUNG
from labkit.model.record import read_records
from labkit.model.replay import ReplayBackend

K_MAX = 5
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


def reliability(rows: Iterable[Row], k_max: int = K_MAX) -> dict[str, float]:
    """pass@1 and pass^1..pass^k_max over `rows` (one per episode: case, passed)."""
    per_case: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        per_case[row["case"]].append(bool(row["passed"]))
    if not per_case:
        raise ValueError("no episodes to evaluate")
    counts = [(sum(results), len(results)) for results in per_case.values()]
    out = {"pass@1": sum(c / n for c, n in counts) / len(counts)}
    for k in range(1, k_max + 1):
        out[f"pass^{k}"] = sum(pass_hat_k(c, n, k) for c, n in counts) / len(counts)
    return out


class _Tap:
    """A backend wrapper that keeps every reply it passes on (for per-decision figures)."""

    def __init__(self, inner: ReplayBackend):
        self.inner, self.name, self.replies = inner, inner.name, []

    def provenance(self) -> dict[str, Any]:
        return self.inner.provenance()

    def complete(self, request: Request) -> Reply:
        reply = self.inner.complete(request)
        self.replies.append(reply)
        return reply


def _row(
    policy: str,
    case: Mapping[str, Any],
    trial: int,
    result: Mapping[str, Any],
    replies: Sequence[Reply] = (),
    **run: Any,
) -> Row:
    return run | {
        "policy": policy,
        "case": case["id"],
        "trial": trial,
        "passed": outcome(case, result),
        "stop": result["stop"],
        "turns": result["turns"],
        "tool_calls": result["tool_calls"],
        "decisions": len(replies),
        "prompt_tokens": sum(r.prompt_tokens for r in replies),
        "completion_tokens": sum(r.completion_tokens for r in replies),
        "reused_tokens": sum(r.reused_tokens or 0 for r in replies),
        "latency_s": sum(r.latency_s for r in replies),
        "result": result,
    }


_SAME = ("stop", "turns", "tool_calls", "answer", "citation")


def replay_trials(path: str | Path, corpus: Corpus | None = None) -> list[Row]:
    """Replay every recorded episode in `path` through the runtime and grade it; one row each.

    Raises LabError if the file has no episodes, names an unknown case, or an episode does
    not replay to its recorded outcome (the code, prompts or fixtures changed since).
    """
    path = Path(path)
    corpus = corpus or docuctl()
    cases = {case["id"]: case for case in cases_of("all", corpus)}
    rows = []
    for number, record in read_records(path):
        if record["kind"] != "episode":
            continue
        case = cases.get(record["case"])
        if case is None:
            raise LabError(f"{path}: line {number}: unknown docuctl case {record['case']!r}")
        tap = _Tap(ReplayBackend([path], run=record["run"]))  # a file may hold several runs
        policy = docuctl_policy(
            record["prompt"],
            backend=tap,
            temperature=record["temperature"],
            seed=record["seed"],
            trial=record["trial"],
            max_tokens=record["max_tokens"],
            rung=record.get("rung", DEFAULT_RUNG),
        )
        limits = {k: record["limits"][k] for k in ("max_turns", "max_tools")}
        result = run_case(
            case, policy, limits=limits, budget_tokens=record["limits"]["budget_tokens"], corpus=corpus
        )
        changed = [
            f"{key} {result[key]!r} (recorded {record[key]!r})" for key in _SAME if result[key] != record[key]
        ]
        if changed:
            raise LabError(
                f"{path}: line {number}: case {case['id']!r} trial {record['trial']} no longer "
                f"replays as recorded: {'; '.join(changed)}"
            )
        rows.append(
            _row(
                record["run"],
                case,
                record["trial"],
                result,
                tap.replies,
                prompt=record["prompt"],
                rung=record.get("rung", DEFAULT_RUNG),
                temperature=record["temperature"],
            )
        )
    if not rows:
        raise LabError(f"{path}: no episode records (record trials with `python -m labkit trials`)")
    return rows


SCRIPTED: dict[str, Callable[[Corpus], Callable]] = {
    "scripted loop": lambda corpus: scripted,
    "adaptive loop": lambda corpus: adaptive_policy(corpus.docs),
}


def scripted_trials(
    name: str, cases: Sequence[Mapping[str, Any]], k: int = K_MAX, corpus: Corpus | None = None
) -> list[Row]:
    """Run a scripted policy ("scripted loop" or "adaptive loop") k times on each case."""
    corpus = corpus or docuctl()
    policy = SCRIPTED[name](corpus)
    return [
        _row(name, case, trial, run_case(case, policy, limits=limits_for(case, corpus), corpus=corpus))
        for trial in range(k)
        for case in cases
    ]


def case_by_id(case_id: str, corpus: Corpus | None = None) -> dict[str, Any]:
    """One of lab 01's 24 cases by id (LabError names the known ones)."""
    cases = {case["id"]: case for case in cases_of("all", corpus)}
    if case_id not in cases:
        raise LabError(f"unknown docuctl case {case_id!r} (known: {', '.join(cases)})")
    return cases[case_id]


def replay_case(
    case_id: str,
    prompt: str = "base",
    *,
    rung: str = DEFAULT_RUNG,
    budget_tokens: int | None = None,
    corpus: Corpus | None = None,
) -> Graded:
    """SmolLM2's recorded temperature-0 episode on `case_id`, replayed and graded.

    The recordings are loaded before the episode starts (by asking for its first reply
    once), so the trace's times are the replay's, not the ~0.1-0.7 s of reading files; each
    decision also carries `recorded_s`, the latency of the live call it replays, which the
    trace shows marked *recorded*. Limits are the case's (`limits_for`). Raises ReplayMiss
    (a LabError) for a case, prompt or rung that was not recorded.
    """
    corpus = corpus or docuctl()
    case = case_by_id(case_id, corpus)
    tap = _Tap(ReplayBackend())
    policy = docuctl_policy(prompt, backend=tap, rung=rung)
    tap.inner.complete(policy.request(task_from(case), []))  # loads the recordings, untimed
    limits = limits_for(case, corpus)
    result = run_case(case, policy, limits=limits, budget_tokens=budget_tokens, corpus=corpus)
    for entry, reply in zip(result["trace"], tap.replies, strict=False):
        entry["recorded_s"] = reply.latency_s
    return graded(result, case)


def under_limits(max_turns: int, max_tools: int, corpus: Corpus | None = None) -> pd.DataFrame:
    """Both scripted loops on all 24 cases under one pair of limits: passes, tool calls, endings.

    Every case gets the same `max_turns` and `max_tools` (the lab's defaults give the
    adaptive cases one tool more); the endings are graded (`ending`).
    """
    corpus = corpus or docuctl()
    cases = cases_of("all", corpus)
    limits = {"max_turns": max_turns, "max_tools": max_tools}
    rows = [
        _row(name, case, 0, run_case(case, make(corpus), limits=limits, corpus=corpus))
        for name, make in SCRIPTED.items()
        for case in cases
    ]
    table = stop_counts(rows)
    for column in ("tool_calls", "passed"):
        totals = [sum(r[column] for r in rows if r["policy"] == policy) for policy in table.index]
        table.insert(0, column.replace("_", " "), totals)
    return table


def summary(rows: Iterable[Row], k_max: int = K_MAX) -> pd.DataFrame:
    """One row per policy: cases, trials per case, pass@1, pass^1..k, cost per success and decision."""
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
    """
    tallies: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
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
        for policy, t in tallies.items()
    }
    frame = pd.DataFrame.from_dict(table, orient="index")
    frame.index.name = "policy"
    return frame


def evaluate_trials(
    paths: Sequence[str | Path], *, scripted_k: int = K_MAX, corpus: Corpus | None = None
) -> list[Row]:
    """Rows for every run recorded in `paths`, plus both scripted policies on the same cases."""
    corpus = corpus or docuctl()
    rows: list[Row] = []
    seen: dict[tuple[str, str, int], str] = {}
    for path in paths:
        for row in replay_trials(path, corpus):
            # pass^k assumes distinct trials: the same episode counted twice would inflate it.
            key = (row["policy"], row["case"], row["trial"])
            if key in seen:
                raise LabError(f"{path}: run {key[0]!r}, case {key[1]!r}, trial {key[2]} is already in "
                               f"{seen[key]}: each trial counts once (is a file given twice?)")
            seen[key] = str(path)
            rows.append(row)
    by_id = {case["id"]: case for case in cases_of("all", corpus)}
    cases = [by_id[case_id] for case_id in dict.fromkeys(row["case"] for row in rows)]
    scripted_rows = [row for name in SCRIPTED for row in scripted_trials(name, cases, scripted_k, corpus)]
    return scripted_rows + rows


def plot_pass_k(table: pd.DataFrame) -> Figure:
    """pass^k against k, one line per policy: how reliability falls as more trials must pass."""
    import matplotlib.pyplot as plt

    columns = [c for c in table.columns if c.startswith("pass^")]
    ks = [int(c.split("^")[1]) for c in columns]
    fig, ax = plt.subplots(figsize=(7, 4))
    for policy, row in table.iterrows():
        values = [row[c] for c in columns]
        ax.plot(ks, values, marker="o", label=str(policy))
    ax.set_xticks(ks)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("k (trials that must all pass)")
    ax.set_ylabel("pass^k")
    ax.set_title("Reliability over repeated trials (one point per k; a single trial gives only k=1)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


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


def plot_stops(stops: pd.DataFrame) -> Figure:
    """Share of episodes by ending (`stop_counts`), one horizontal bar per policy."""
    return plot_shares(stops, "How episodes ended")
