"""Baselines for lab 02's ladder: policies with no model, run by the same runtime and grader.

A model row means something only beside what no model achieves on the same cases. Four
baselines, each run through `labkit.core.runtime.run` on lab 01's tools and limits
(`labkit.decision_loop.trials.limits_for`) and graded by `labkit.baseline.grading.outcome`,
exactly as a recorded model episode is replayed:

- ``random Lk``: at every turn, a decision drawn uniformly from those rung Lk admits in the
  episode's state (`admissible_decisions`), one seeded draw per episode;
- ``search, then answer Lk``: search first; from then on a final as soon as the rung admits
  one (drawn among the admissible finals when there are several), else a uniform draw among
  the admissible decisions (which read comes first is left to chance: the rule is fixed, the
  reads are not);
- ``scripted loop`` and ``adaptive loop``: lab 01's policies (`labkit.baseline.controllers`),
  deterministic, run K_MAX times per case like any other policy.

What "admissible" enumerates. `labkit.model.constraints.admissible_schema` gives each rung's
decision shapes in a state; a shape's `enum` or `const` slot takes exactly its values, and a
free-text slot takes the values the episode offers, nothing invented: a search's query is the
question verbatim (every search of an episode is the same search), an id to read or to cite
is an id a search returned, an answer is the command of a page read. L0 (no schema) draws
from the same shapes as L1. So these policies never invent an id or a command: L0, L1 and L2
admit the same draws (a final may pair one page's command with another hit's id, which the
runtime stops as `unread_citation`), and L3 pairs each read page's command with its own id.

Figures (24 cases, 200 seeds, seed 0; pinned in tests/test_baselines.py): random L3 passes
2.52 cases of 24 on average (the project's notes measured 2.4 by hand), search-then-answer L3
8.67, the scripted loop 17, the adaptive loop 23.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from itertools import product
from typing import Any

from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.task import Task
from labkit.core.errors import LabError
from labkit.decision_loop.evaluation import SCRIPTED, _row, scripted_trials
from labkit.decision_loop.model_policy import RULES, pages_read, schema_tools, search_hits
from labkit.decision_loop.tables import K_MAX, Row
from labkit.decision_loop.trials import cases_of, limits_for, run_case
from labkit.model.constraints import RUNGS, admissible_schema, check_rung

SEEDS = 200  # episodes per case and rung for each random baseline
RANDOM, SEARCH_FIRST = "random", "search, then answer"
KINDS = (RANDOM, SEARCH_FIRST)
Decision = dict[str, str]
Observation = Mapping[str, Any]


def _values(action: str, name: str, spec: Mapping[str, Any], task: Task, observations: Sequence[Observation]):
    """The values a slot takes: its const or enum, else what the episode offers (module docstring)."""
    if "const" in spec:
        return [spec["const"]]
    if "enum" in spec:
        return list(spec["enum"])
    if name == "query":
        return [task.question]
    if name == "answer":
        return list(dict.fromkeys(final["answer"] for final in pages_read(observations)))
    return list(dict.fromkeys(search_hits(task, observations)))  # an id to read or to cite


def admissible_decisions(task: Task, observations: Sequence[Observation], rung: str) -> list[Decision]:
    """Every decision rung `rung` admits after `observations`, as the baselines enumerate them.

    In the schema's order (search, read, final), without duplicates. Raises LabError for an
    unknown rung.
    """
    check_rung(rung, RULES)
    schema = admissible_schema(schema_tools(), "L1" if rung == "L0" else rung, RULES, task, observations)
    assert schema is not None  # only L0 has none, and L0 draws from L1's shapes
    decisions: list[Decision] = []
    for shape in schema["anyOf"]:
        properties = shape["properties"]
        action = properties["action"]["const"]
        slots = {name: _values(action, name, spec, task, observations) for name, spec in properties.items()}
        for values in product(*slots.values()):
            decision = dict(zip(slots, values, strict=True))
            if decision not in decisions:
                decisions.append(decision)
    return decisions


class RandomAdmissible:
    """A decision drawn uniformly from `admissible_decisions` at every turn (one episode's policy).

    `first="search"` makes it ``search, then answer``: a search first, then the first
    admissible final as soon as there is one. The draws come from `random.Random(seed)`.
    """

    def __init__(self, rung: str, seed: int | str, *, first: str | None = None) -> None:
        check_rung(rung, RULES)
        self.rung, self.first, self.rng = rung, first, random.Random(seed)

    def __call__(self, task: Task, observations: list[dict[str, Any]]) -> Decision:
        decisions = admissible_decisions(task, observations, self.rung)
        if self.first == "search":
            if not observations:
                return next(d for d in decisions if d["action"] == "search")
            finals = [d for d in decisions if d["action"] == "final"]
            if finals:
                return finals[0] if len(finals) == 1 else self.rng.choice(finals)
        return self.rng.choice(decisions)


def random_rows(
    kind: str,
    rung: str,
    cases: Iterable[Mapping[str, Any]],
    *,
    seeds: int = SEEDS,
    seed: int = 0,
    corpus: Corpus | None = None,
) -> list[Row]:
    """`seeds` episodes per case of one random baseline (`kind`: RANDOM or SEARCH_FIRST) at `rung`.

    Trial t of case c draws from `random.Random(f"{seed + t}:{c}")`: the same rows for the same
    arguments, on any machine. Raises LabError for an unknown kind or rung, or seeds < 1.
    """
    if kind not in KINDS:
        raise LabError(f"unknown baseline {kind!r} (known: {', '.join(KINDS)})")
    check_rung(rung, RULES)
    if type(seeds) is not int or seeds < 1:
        raise LabError(f"seeds must be a positive int, got {seeds!r}")
    corpus = corpus or docuctl()
    first = "search" if kind == SEARCH_FIRST else None
    rows = []
    for case in cases:
        limits = limits_for(case, corpus)
        for trial in range(seeds):
            policy = RandomAdmissible(rung, f"{seed + trial}:{case['id']}", first=first)
            result = run_case(case, policy, limits=limits, corpus=corpus)
            rows.append(_row(f"{kind} {rung}", case, trial, result, baseline=kind, rung=rung))
    return rows


def baseline_rows(
    cases: Sequence[Mapping[str, Any]] | str = "all",
    *,
    rungs: Sequence[str] = RUNGS,
    seeds: int = SEEDS,
    seed: int = 0,
    corpus: Corpus | None = None,
) -> list[Row]:
    """Every baseline on `cases` (a case set's name, or cases): both random ones at each of
    `rungs` (`seeds` episodes per case), then the scripted and adaptive loops (K_MAX each:
    they are deterministic, and their pass^k shows it).

    Rows carry `baseline` (the kind) and, for the random ones, `rung`. About 0.1 s per 1,000
    episodes on one core (7,920 in 0.8 s); the default (24 cases, 4 rungs, 200 seeds) is 38,400.
    """
    corpus = corpus or docuctl()
    chosen = cases_of(cases, corpus) if isinstance(cases, str) else list(cases)
    rows = [
        row
        for kind in KINDS
        for rung in rungs
        for row in random_rows(kind, rung, chosen, seeds=seeds, seed=seed, corpus=corpus)
    ]
    for name in SCRIPTED:  # deterministic, but run K_MAX times: shown, not assumed
        rows += [row | {"baseline": name} for row in scripted_trials(name, chosen, K_MAX, corpus)]
    return rows
