"""Lab 02's baselines, policies with no model on a model's cases, limits, runtime and grader: ``random Lk``
(a seeded draw among the decisions rung Lk admits), ``search, then answer Lk`` (a search, then a final as
soon as one is admissible), lab 01's scripted and adaptive loops. Over 200 seeds random L3 passes 2.52 of
the 24 cases, search-then-answer L3 8.67, the scripted loop 17, the adaptive loop 23."""

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import product
from typing import Any

from labkit.baseline.task import Task
from labkit.decision_loop.evaluation import SCRIPTED, episode_row, scripted_trials
from labkit.decision_loop.model_policy import DOCUCTL_RULES, pages_read, schema_tools, search_hits
from labkit.decision_loop.tables import K_MAX, Row
from labkit.decision_loop.trials import cases_of, limits_for, run_case
from labkit.model.constraints import RUNGS, admissible_schema

SEEDS = 200  # episodes per case and rung for each random baseline
RANDOM, SEARCH_FIRST = "random", "search, then answer"
KINDS = (RANDOM, SEARCH_FIRST)
Decision = dict[str, str]
_Seen = Sequence[Mapping[str, Any]]  # an episode's observations so far
_Case = Mapping[str, Any]


def _values(name: str, spec: Mapping[str, Any], task: Task, observations: _Seen) -> list[Any]:
    """What a slot takes, inventing nothing: its const or enum; else the question verbatim (a
    query), a read page's command (an answer), or an id a search returned."""
    if "const" in spec:
        return [spec["const"]]
    if "enum" in spec:
        return list(spec["enum"])
    if name == "query":
        return [task.question]
    if name == "answer":
        return list(dict.fromkeys(final["answer"] for final in pages_read(observations)))
    return list(dict.fromkeys(search_hits(task, observations)))


def admissible_decisions(task: Task, observations: _Seen, rung: str) -> list[Decision]:
    """Every decision `rung` admits after `observations` (L0 those of L1), in the schema's order
    (search, read, final), without duplicates. Raises LabError for an unknown rung."""
    as_rung = "L1" if rung == "L0" else rung  # L0 constrains nothing: the decisions L1 admits
    schema = admissible_schema(schema_tools(), as_rung, DOCUCTL_RULES, task, observations)
    decisions: list[Decision] = []
    for shape in schema["anyOf"]:
        slots = {name: _values(name, spec, task, observations) for name, spec in shape["properties"].items()}
        for values in product(*slots.values()):
            if (decision := dict(zip(slots, values, strict=True))) not in decisions:
                decisions.append(decision)
    return decisions


def random_baseline(rung: str, seed: int | str, kind: str = RANDOM) -> Callable[..., Decision]:
    """One episode's policy: a decision drawn from `admissible_decisions` with `random.Random(seed)`
    each turn; as SEARCH_FIRST, a search first, then a final as soon as one is admissible."""
    rng = random.Random(seed)

    def policy(task: Task, observations: list[dict[str, Any]]) -> Decision:
        decisions = admissible_decisions(task, observations, rung)
        if kind == SEARCH_FIRST:
            if not observations:
                return next(d for d in decisions if d["action"] == "search")
            if finals := [d for d in decisions if d["action"] == "final"]:
                return finals[0] if len(finals) == 1 else rng.choice(finals)
        return rng.choice(decisions)

    return policy


def random_rows(
    kind: str, rung: str, cases: Iterable[_Case], *, seeds: int = SEEDS, seed: int = 0
) -> list[Row]:
    """`seeds` episodes per case of one random baseline (`kind`: RANDOM or SEARCH_FIRST) at `rung`;
    trial t of case c draws from `random.Random(f"{seed + t}:{c}")`, the same on any machine."""
    rows = []
    for case, trial in product(cases, range(seeds)):
        policy = random_baseline(rung, f"{seed + trial}:{case['id']}", kind)
        result = run_case(case, policy, limits=limits_for(case))
        rows.append(episode_row(f"{kind} {rung}", case, trial, result, baseline=kind, rung=rung))
    return rows


def baseline_rows(
    cases: Sequence[_Case] | str = "all", *, rungs: Sequence[str] = RUNGS, seeds: int = SEEDS
) -> list[Row]:
    """Every baseline on `cases` (a case set's name, or cases): both random ones at each of
    `rungs`, then the scripted and adaptive loops; each row's `baseline` names its kind.
    About 0.1 s per 1,000 episodes: the default (24 cases, 4 rungs, 200 seeds) is 38,400."""
    chosen = cases_of(cases) if isinstance(cases, str) else list(cases)
    rows = [row for kind in KINDS for rung in rungs for row in random_rows(kind, rung, chosen, seeds=seeds)]
    for name in SCRIPTED:  # deterministic, but run K_MAX times: shown, not assumed
        rows += [row | {"baseline": name} for row in scripted_trials(name, chosen, K_MAX)]
    return rows
