"""Lab 02's baselines (no model) on a model's cases, limits, runtime and grader: ``random Lk`` draws each
decision uniformly among those rung Lk admits (the first: the question's search); ``search, then answer
Lk`` draws likewise but answers, uniformly among the finals, once one is admissible; lab 01's scripted and
adaptive loops. Exactly (`expected_pass`), of lab 01's 24 cases random L3 passes 307/120 = 2.558 (L0-L2
1157/525), search-then-answer L3 25/3 = 8.333 (L0-L2 17/3), scripted 17, adaptive 23; of the 40 rewrite
cases, 0; tests/decision_loop/test_lab02_baselines.py draws seeded episodes to check those values."""

import random
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from itertools import product
from typing import Any

from labkit.baseline.grading import outcome
from labkit.baseline.task import Task
from labkit.decision_loop.model_policy import DOCUCTL_RULES, pages_read, schema_tools, search_hits
from labkit.decision_loop.trials import limits_for, run_case
from labkit.model.constraints import admissible_schema

RANDOM, SEARCH_FIRST = "random", "search, then answer"
KINDS = (RANDOM, SEARCH_FIRST)
Decision = dict[str, str]
_Seen = Sequence[Mapping[str, Any]]  # an episode's observations so far
_Case = Mapping[str, Any]


def _values(name: str, spec: Mapping[str, Any], task: Task, observations: _Seen) -> list[Any]:
    """A slot's values, inventing nothing: const, enum, the question, a read command or a search hit."""
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


def _draws(kind: str, task: Task, observations: _Seen, rung: str) -> list[Decision]:
    """The decisions baseline `kind` draws its next one from, uniformly (defined in the module docstring)."""
    decisions = admissible_decisions(task, observations, rung)
    finals = [d for d in decisions if d["action"] == "final"]
    return finals if kind == SEARCH_FIRST and finals else decisions


def random_baseline(rung: str, seed: int | str, kind: str = RANDOM) -> Callable[..., Decision]:
    """One episode's policy: each turn, a decision drawn from `_draws` with `random.Random(seed)`."""
    rng = random.Random(seed)

    def policy(task: Task, observations: list[dict[str, Any]]) -> Decision:
        draws = _draws(kind, task, observations, rung)
        return rng.choice(draws) if kind == RANDOM or len(draws) > 1 else draws[0]

    return policy


def expected_pass(kind: str, rung: str, case: _Case) -> float:
    """The exact probability that an episode of baseline `kind` (RANDOM or SEARCH_FIRST) at `rung`
    passes `case`: each branch of its draws run through the runtime, graded and weighted."""
    total, branches = Fraction(0), [((), Fraction(1))]  # each: the decisions it fixes, its probability
    while branches:
        (prefix, weight), draws = branches.pop(), []

        def policy(task: Task, seen: _Seen, prefix: tuple = prefix, draws: list = draws) -> Decision:
            if len(seen) < len(prefix):  # decision t follows t observations
                return prefix[len(seen)]
            draws += _draws(kind, task, seen, rung)
            return {}  # an invalid decision ends the episode: its branches are run next

        result = run_case(case, policy, limits=limits_for(case))
        branches += [((*prefix, d), weight / len(draws)) for d in draws]
        total += 0 if draws else weight * outcome(case, result)
    return float(total)
