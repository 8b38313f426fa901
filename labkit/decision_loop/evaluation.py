"""Evaluating policies over repeated trials: episodes run or replayed, one graded row each.

Every figure is recomputed from episodes that were run, never carried over: a model
policy's episodes are replayed through the runtime from its recorded calls and graded by
`labkit.baseline.grading.outcome`; a scripted policy is run k times like any other (its trials are
identical, and the table shows it rather than assuming it). What the rows add up to (pass@1,
pass^k, endings, latency) is `labkit.decision_loop.tables`.

- `replay_trials`: every recorded episode of a file, replayed and checked against its record;
- `scripted_trials`: a scripted loop run k times per case;
- `evaluate_trials`: the recorded runs of some files plus both scripted loops on their cases;
- `replay_case`: one recorded model episode, replayed for display;
- `under_limits`: the scripted loops under one pair of limits (lab 02's knob), as a table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from labkit.baseline.controllers import adaptive_policy, scripted
from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.grading import Graded, graded, outcome
from labkit.baseline.task import task_from
from labkit.core.errors import LabError
from labkit.decision_loop.model_policy import docuctl_policy
from labkit.decision_loop.tables import K_MAX, Row, stop_counts
from labkit.decision_loop.trials import cases_of, known_cases, limits_for, run_case
from labkit.model.backend import ChatRequest, Reply
from labkit.model.constraints import DEFAULT_RUNG
from labkit.model.record import read_records
from labkit.model.replay import ReplayBackend


class _Tap:
    """A backend wrapper that keeps every reply it passes on (for per-decision figures)."""

    def __init__(self, inner: ReplayBackend):
        self.inner, self.name, self.replies = inner, inner.name, []

    def provenance(self) -> dict[str, Any]:
        return self.inner.provenance()

    def complete(self, request: ChatRequest) -> Reply:
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
    cases = known_cases(corpus)
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
    by_id = known_cases(corpus)
    cases = [by_id[case_id] for case_id in dict.fromkeys(row["case"] for row in rows)]
    scripted_rows = [row for name in SCRIPTED for row in scripted_trials(name, cases, scripted_k, corpus)]
    return scripted_rows + rows
