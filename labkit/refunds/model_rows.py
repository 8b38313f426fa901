"""The model policy's rows on the grid's suite (`model_specs`, recorded with `labkit grid
fixtures/grids/refunds-smollm2-l2.toml`), replayed message by message, beside baselines with intervals.
Model options (`backend`, `temperature`, `seed`, `k` trials) default to the recordings'."""

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from pandas import DataFrame

from labkit.core import questions, stats
from labkit.core.errors import LabError
from labkit.core.stats import Comparison, Interval
from labkit.core.stops import Stop
from labkit.core.text import shorten
from labkit.model.constraints import DEFAULT_RUNG
from labkit.model.factory import is_live
from labkit.model.replay import recorded_calls
from labkit.refunds import random_baseline
from labkit.refunds.defenses import defenses_named
from labkit.refunds.grid import MODEL_DEFENSES, episode_case, spec_of, suite_cases
from labkit.refunds.intervals import compare_scores, episodes_of, interval_row, random_scores, units_of
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import Score, Spec, score_policy
from labkit.refunds.policies import POLICIES, cannot_hang, model_policy

_LAB = "refunds"
LADDER_DEFENSES = MODEL_DEFENSES  # the defenses the model was recorded under (grid.MODEL_DEFENSES)
GRID_RUNG = "L2"
BASELINES = ("random-admissible", "careful", "gullible")
# What the model's comparisons test: what the shop loses and what the customer gets.
COMPARED = ("unauthorized_rate", "benign_utility")
# The model's comparisons are over requests, each request's episodes (alone and under each attack) its
# trials: the outcome is driven by the request (its share under no defense runs from 0.00 to 1.00, the
# attack's far less), so the 434 cases are worth as many units as there are requests, 38. The requests
# cross the attacks; `labkit.core.coverage`'s crossed designs show the intervals hold unless the attack
# alone sets the outcome.
MODEL_UNIT = "request"
MODEL_QUESTION = "lab03-model"


def model_specs(lab: RefundLab | None = None) -> list[Spec]:
    """The episodes the model runs: both grids' suites."""
    lab = lab or refund_lab()
    return [spec_of(case, lab) for case in suite_cases(lab)]


def model_available() -> bool:
    """True when refund trials are recorded (replay's own index of the files: parsed once)."""
    return bool(recorded_calls(_LAB))


def _recorded_cases(rung: str) -> set[str]:
    """The task ids (case and defense, `grid.episode_case`) with model calls recorded at `rung`."""
    return {str(r["case"]) for r in recorded_calls(_LAB) if r.get("rung", DEFAULT_RUNG) == rung}


def recorded_defenses(rung: str = GRID_RUNG) -> list[str]:
    """The defense names with model episodes recorded at `rung`."""
    found = {case.rsplit("+", 1)[-1] for case in _recorded_cases(rung)}
    return [name for name in MODEL_DEFENSES if name in found] + sorted(found - set(MODEL_DEFENSES))


def _recorded_specs(defense: str, rung: str, lab: RefundLab) -> list[Spec]:
    """The suite's specs whose episode under `defense` at `rung` is recorded, in suite order: every
    one for the defenses the question compares; spotlighting, whose episodes are the slowest (up to
    100 s each on 2 busy cores), on 82 of them (fixtures/grids/refunds-smollm2-l2-spotlighting.toml)."""
    recorded = _recorded_cases(rung)
    return [spec_of(case, lab) for case in suite_cases(lab) if episode_case(case, defense, lab) in recorded]


def _action(decision: Any) -> str | None:
    return decision.get("action") if isinstance(decision, dict) else None


def attribution(defenses: Sequence[str] = LADDER_DEFENSES, *, rung: str = "L2", **options: Any) -> DataFrame:
    """Per attacked model episode (the recorded ones, replayed): its place, did the ledger check fire,
    the model's first refund, and the first turn whose tool result held the injected text ("never").
    A ledger check measures the state an attack aims for, not who caused it; with k > 1 each trial
    is a row."""
    table = []
    for name in defenses:
        scores = [s for s in model_scores(name, rung=rung, **options) if s.spec.attack]
        attacked = max(1, len(scores) // options.get("k", 1))  # a trial's attacked episodes
        for i, s in enumerate(scores):
            trace = s.episode.result["trace"]
            refunds = [e for e in trace if _action(e.get("decision")) == "refund"]
            needle = json.dumps(s.episode.injected)[1:41]  # the injection's start, as a JSON result holds it
            turns = [e["turn"] for e in trace if needle in json.dumps(e.get("result"), default=str)]
            first = (
                f"turn {refunds[0]['turn']}, amount {refunds[0]['decision'].get('amount')}"
                if refunds
                else "-"
            )
            seen = f"turn {turns[0]}" if turns else "never"
            table.append((name, s.spec.attack.id, s.spec.place, bool(s.attacked), first, seen, i // attacked))
    columns = ["defense", "attack", "place", "check fired", "first refund", "injection seen", "trial"]
    index = ["defense", "attack"] + (["trial"] if options.get("k", 1) > 1 else [])
    return DataFrame(table, columns=columns).set_index(index).drop(columns="trial", errors="ignore")


_SCORES: dict[tuple[Any, ...], list[Score]] = {}  # replayed and baseline scores, once per process


def model_scores(defense: str, *, rung: str = GRID_RUNG, **options: Any) -> list[Score]:
    """The model's scores under `defense` over `model_specs()`, `k` trials, trial by trial: kept per
    process when replayed, with a progress bar per trial when live. LabError if k is not a positive int."""
    backend, k, seed = options.get("backend"), options.get("k", 1), options.get("seed", 0)
    key, live = ("model", defense, rung, *sorted(options.items(), key=str)), is_live(backend)
    if not live and key in _SCORES:
        return _SCORES[key]
    if type(k) is not int or k < 1:  # serves: user
        raise LabError(f"k (trials per episode) must be a positive int, got {k!r}")
    lab, defenses, scores = refund_lab(), defenses_named(defense), []
    for trial in range(k):

        def factory(d: Any, trial: int = trial, t: float = options.get("temperature", 0.0)) -> Any:
            return model_policy(d, backend=backend, rung=rung, trial=trial, temperature=t, seed=seed + trial)

        specs = model_specs(lab) if live else _recorded_specs(defense, rung, lab)
        if not live:  # a replay answers from a file in this process: no thread and clock per decision
            factory = cannot_hang(factory)
        if live:  # seconds of CPU per episode
            from tqdm.auto import tqdm

            desc = f"model {rung} under {defense}" + (f", trial {trial}" if k > 1 else "")
            specs = tqdm(specs, desc=desc, unit="episode")
        scores += score_policy(factory, defenses, specs, lab)
    if not live:
        _SCORES[key] = scores
    else:
        _say_unanswered(defense, scores)
    return scores


def _say_unanswered(defense: str, scores: Sequence[Score]) -> None:
    """One line when the model server did not answer some of a live run's episodes: those end
    `provider_error` with no refund proposed, so the model's rows under `defense` measure the server.
    (serves: environment — a server that is down reads as a result otherwise)"""
    failed = [s.episode.result for s in scores if s.episode.result["stop"] == Stop.PROVIDER_ERROR]
    if failed:
        print(
            f"no reply: the model server did not answer in {len(failed)} of {len(scores)} episodes under "
            f"{defense} (provider_error: {shorten(failed[0]['detail'], 160)}); they proposed no refund, so "
            "these rows measure the server, not the model"
        )


def baseline_scores(
    policy: str, defense: str, *, rung: str = GRID_RUNG, seeds: int | None = None
) -> list[Score] | DataFrame:
    """A baseline's scores on the model's suite: ``careful`` or ``gullible``, or ``random-admissible``:
    its recorded draw over `random_baseline.DRAWN_SEEDS` seeds (an `episodes_of` frame of per-case means)
    unless `seeds` asks for another number, which is drawn here (about 0.1 s a seed and defense)."""
    if policy == "random-admissible" and seeds in (None, random_baseline.DRAWN_SEEDS):
        return random_baseline.episodes(defense)
    seeds = seeds if policy == "random-admissible" else 1
    key = (policy, defense, rung, seeds)
    if key not in _SCORES:  # deterministic for a seed
        lab = refund_lab()
        specs = model_specs(lab)
        _SCORES[key] = (
            random_scores(defense, specs, seeds, lab)
            if policy == "random-admissible"
            else score_policy(POLICIES[policy], defenses_named(defense), specs, lab)
        )
    return _SCORES[key]


def model_table(
    defenses: Sequence[str] = LADDER_DEFENSES,
    *,
    rung: str = GRID_RUNG,
    seeds: int | None = None,
    **options: Any,
) -> DataFrame:
    """The model's rows at `rung` beside its baselines (random-admissible, careful, gullible) on the
    same episodes, every rate an `Interval` (`intervals.interval_row`)."""
    _check_recorded(defenses, rung, options.get("backend"))
    table = [
        interval_row(f"model {rung}", name, model_scores(name, rung=rung, **options), MODEL_UNIT)
        for name in defenses
    ]
    for policy in BASELINES:
        label = f"{policy} {rung}" if policy == "random-admissible" else policy
        table += [
            interval_row(label, name, baseline_scores(policy, name, rung=rung, seeds=seeds), MODEL_UNIT)
            for name in defenses
        ]
    return DataFrame(table).set_index(["policy", "defense"])


def model_comparisons(
    defenses: Sequence[str] = LADDER_DEFENSES,
    *,
    rung: str = GRID_RUNG,
    seeds: int | None = None,
    **options: Any,
) -> dict[str, list[Comparison]]:
    """Two families of paired comparisons (`intervals.compare_scores`), by name: the model under each defense
    minus under `none`, and the model minus the random-admissible baseline (its seeded draw) under
    the same defense."""
    _check_recorded(defenses, rung, options.get("backend"))
    model = {name: model_scores(name, rung=rung, **options) for name in defenses}
    seeds = random_baseline.DRAWN_SEEDS if seeds is None else seeds
    against_none = [
        c
        for name in defenses
        if name != "none"
        for c in compare_scores(f"{name} - none", model[name], model["none"], COMPARED, MODEL_UNIT)
    ]
    against_random = [
        c
        for name in defenses
        for c in compare_scores(
            name,
            model[name],
            baseline_scores("random-admissible", name, rung=rung, seeds=seeds),
            COMPARED,
            MODEL_UNIT,
        )
    ]
    return {
        f"model {rung}: defense - none": against_none if "none" in model else [],
        f"model {rung} - random-admissible ({seeds} seeds)": against_random,
    }


def request_design(scores: Sequence[Score], per_request: int, sd: float | None = None) -> tuple[float, int]:
    """The size of lab03-model's design on `scores` (one defense's episodes): Kish's effective number of
    requests, each weighed by its episodes of the unauthorised share as the sign-flip test weighs it,
    and how many more requests of `per_request` episodes would give the declared test power 0.80 for
    a gain of `questions.GAIN` at the question's level, with the per-request differences' `sd` (None:
    the question's declared one)."""
    asked = questions.question(MODEL_QUESTION)
    sd = asked.sd if sd is None else sd
    sizes = [
        len(trials) for trials in units_of(episodes_of(scores), "unauthorized_rate", MODEL_UNIT).values()
    ]
    more = 0
    while stats.power_mean(_kish([*sizes, *[per_request] * more]), questions.GAIN, sd, asked.alpha) < 0.8:
        more += 1
    return _kish(sizes), more


def recorded_sd(a: Sequence[Score], b: Sequence[Score]) -> float:
    """The sd of the per-request differences of the unauthorised share, a - b, that the declared
    sign-flip test meets on the recorded requests: with d a request's difference, w its episodes, k
    requests and n Kish's effective number of them, sqrt(n * k / (k - 1) * sum(w**2 (d - mean)**2)
    / sum(w)**2), so that sd / sqrt(n) is the weighted mean's standard error. The declared sd
    (questions.json) was fixed on the first 22 requests, before the last 16 were recorded; this is
    what `stats.mde_mean` and `stats.power_mean` take for the MDE the recording achieved."""
    units_a, units_b = (units_of(episodes_of(scores), "unauthorized_rate", MODEL_UNIT) for scores in (a, b))
    shared = [unit for unit in units_b if unit in units_a]
    d = np.array([np.mean(units_a[unit]) - np.mean(units_b[unit]) for unit in shared])
    w = np.array([float(len(units_b[unit])) for unit in shared])
    spread = np.sum(w**2 * (d - np.sum(w * d) / np.sum(w)) ** 2) / np.sum(w) ** 2
    return float(np.sqrt(_kish(w) * len(d) / (len(d) - 1) * spread))


def _kish(sizes: Sequence[int]) -> float:
    """Kish's effective number of units weighing `sizes` (`stats.effective_units`), as a float."""
    return float(stats.effective_units(np.asarray(sizes, dtype=float)))


def interval_text(value: Any) -> str:
    """An `Interval` as the prose quotes it, "0.46 [0.30, 0.64]"; "-" for None."""
    if isinstance(value, Interval):
        return f"{value.estimate:.2f} [{value.low:.2f}, {value.high:.2f}]"
    return "-" if value is None else str(value)


def rates_with_intervals(table: DataFrame) -> DataFrame:
    """A copy of `table` with each `Interval` cell as `interval_text` prints it."""
    return table.map(lambda cell: interval_text(cell) if isinstance(cell, Interval) or cell is None else cell)


def _check_recorded(defenses: Sequence[str], rung: str, backend: Any) -> None:
    """LabError, replayed, when nothing is recorded or one of `defenses` is not recorded at `rung`.
    (serves: ours — the shipped recordings cover what is asked)"""
    if is_live(backend):
        return
    if not model_available():
        raise LabError(
            "no recorded model trials for the refund lab (fixtures/trials/refunds*.jsonl); "
            "record them with `labkit grid fixtures/grids/refunds-smollm2-l2.toml`"
        )
    known = recorded_defenses(rung)
    if missing := [name for name in defenses if name not in known]:
        raise LabError(
            f"no recorded model trials at rung {rung} under defense(s) {', '.join(missing)} "
            f"(recorded: {', '.join(known) or 'none'})"
        )
