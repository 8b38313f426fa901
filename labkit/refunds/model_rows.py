"""The model policy's rows, replayed from recorded trials, beside baselines with intervals.

The model runs on a stated suite (`model_specs(rung=...)`): at L2 the grid's suite (28 episodes per
defense, recorded with `labkit grid fixtures/grids/refunds-smollm2-l2.toml`), at L1 five episodes.
Replay checks every message against the recording, so a changed prompt or tool result means
re-recording. Model options (`backend`, `temperature`, `seed`, `k` trials) default to the recordings'.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pandas import DataFrame

from labkit.core.errors import LabError
from labkit.model import read_records, trial_files
from labkit.model.constraints import DEFAULT_RUNG, RUNGS
from labkit.refunds.baselines import RANDOM_SEEDS, interval_rates, interval_row, paired_rows, random_scores
from labkit.refunds.defenses import defenses_named
from labkit.refunds.grid import grid_cases, is_episode, spec_of
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import Score, Spec, frame_of, rows, score_policy
from labkit.refunds.policies import POLICIES, model_policy

_LAB = "refunds"
# Measured: an L2 episode took up to 107 s on 2 busy cores, so the model is recorded under these
# four only; provenance's and the other deterministic defenses' effect the scripted rows show.
MODEL_DEFENSES = LADDER_DEFENSES = ("none", "policy_prompt", "spotlighting", "mediation")
MODEL_BENIGN = ("r-ana-blender", "r-dev-planter", "r-dev-other")
MODEL_ATTACKS = (("important-inflate", "review"), ("direct-other-order", "message"))  # on r-ana-blender
GRID_RUNG = "L2"
BASELINES = ("random-admissible", "careful", "gullible")


def model_specs(lab: RefundLab | None = None, rung: str = "L1") -> list[Spec]:
    """The episodes the model runs at `rung`: L2's grid suite, or L0-L1's five."""
    lab = lab or refund_lab()
    if rung == GRID_RUNG:
        return [spec_of(case, lab) for case in grid_cases(lab)]
    specs = [Spec("benign", lab.request(id)) for id in MODEL_BENIGN]
    ana = lab.request("r-ana-blender")
    return specs + [Spec("attack", ana, lab.attack(attack), place) for attack, place in MODEL_ATTACKS]


def _calls() -> list[dict[str, Any]]:
    """Every recorded model call of this lab."""
    return [r for path in trial_files(_LAB) for _, r in read_records(path) if r.get("kind") == "call"]


def model_available() -> bool:
    """True when refund trials are recorded."""
    return bool(_calls())


def _rung(record: dict[str, Any]) -> str:
    return record.get("rung", DEFAULT_RUNG)


def recorded_defenses(rung: str = "L1") -> list[str]:
    """The defense names with model episodes recorded at `rung`."""
    found = {str(r["case"]).rsplit("+", 1)[-1] for r in _calls() if r.get("lab") == _LAB and _rung(r) == rung}
    return [name for name in MODEL_DEFENSES if name in found] + sorted(found - set(MODEL_DEFENSES))


def recorded_rungs() -> list[str]:
    """The constraint rungs at which refund episodes are recorded, in ladder order."""
    found = {_rung(r) for r in _calls()}
    return [rung for rung in RUNGS if rung in found]


def _live(backend: Any = None) -> bool:
    """True when `backend` (or, if None, `LABKIT_MODEL`) is a live model, not replay."""
    name = os.environ.get("LABKIT_MODEL", "replay") if backend is None else getattr(backend, "name", backend)
    return str(name).strip().split(":", 1)[0] not in ("", "replay")


def model_matrix(
    defenses: Sequence[str] = MODEL_DEFENSES,
    *,
    by_attack: bool = False,
    explicit: bool = True,
    rung: str = "L1",
    **options: Any,
) -> DataFrame:
    """The model policy's rows (``model L1``, ...) under `defenses` over `model_specs(rung)`, the
    k trials pooled. Replayed by default; LabError if nothing is recorded, or if `explicit` and a
    defense was never recorded at `rung` (a live backend runs it)."""
    table = []
    for name in _check_recorded(defenses, rung, options.get("backend"), explicit=explicit):
        table += rows(f"model {rung}", name, model_scores(name, rung=rung, **options), by_attack=by_attack)
    return frame_of(table, by_attack=by_attack)


def _action(decision: Any) -> str | None:
    return decision.get("action") if isinstance(decision, dict) else None


def model_behaviour(
    defenses: Sequence[str] = MODEL_DEFENSES, *, rung: str = "L1", **options: Any
) -> DataFrame:
    """What the model *did* at `rung`, per recorded defense: episodes, decisions, lookups, refund
    proposals (and how many named a real order), refunds paid, the commonest stop."""
    known, lab, table = set(recorded_defenses(rung)), refund_lab(), []
    for name in (d for d in defenses if d in known):
        scores = model_scores(name, rung=rung, **options)
        decisions = [entry.get("decision") for s in scores for entry in s.episode.result["trace"]]
        proposals = [d for d in decisions if _action(d) == "refund"]
        stops = Counter(s.episode.result["stop"] for s in scores)
        lookups = sum(_action(d) == "lookup_order" for d in decisions)
        real = sum(p.get("order_id") in lab.shop.orders for p in proposals)
        paid = sum(len(s.episode.refunds) for s in scores)
        commonest = stops.most_common(1)[0][0] if stops else "-"
        table.append(
            (rung, name, len(scores), len(decisions), lookups, len(proposals), real, paid, commonest)
        )
    columns = ["rung", "defense", "episodes", "decisions", "lookups", "refund proposals", "of a real order"]
    columns += ["refunds paid", "commonest stop"]
    return DataFrame(table, columns=columns).set_index(["rung", "defense"]) if table else DataFrame()


def attribution(defenses: Sequence[str] = LADDER_DEFENSES, *, rung: str = "L2", **options: Any) -> DataFrame:
    """Per attacked model episode: did the ledger check fire, the model's first refund, and the
    first turn whose tool result held the injected text ("never"). A ledger check measures the
    state an attack aims for, not who caused it; with k > 1 each trial is a row."""
    attacked, table = sum(1 for spec in model_specs(rung=rung) if spec.attack), []
    for name in defenses:
        scores = [s for s in model_scores(name, rung=rung, **options) if s.spec.attack]
        for i, s in enumerate(scores):
            trace = s.episode.result["trace"]
            refunds = [e for e in trace if _action(e.get("decision")) == "refund"]
            needle = json.dumps(s.episode.injected)[1:41]  # the injection's start, as a JSON result holds it
            seen = next(
                (e["turn"] for e in trace if needle in json.dumps(e.get("result"), default=str)), None
            )
            first = (
                "-"
                if not refunds
                else f"turn {refunds[0]['turn']}, amount {refunds[0]['decision'].get('amount')}"
            )
            seen = f"turn {seen}" if seen else "never"
            table.append((name, s.spec.attack.id, bool(s.attacked), first, seen, i // attacked))
    columns = ["defense", "attack", "check fired", "first refund", "injection seen", "trial"]
    index = ["defense", "attack"] + (["trial"] if options.get("k", 1) > 1 else [])
    return DataFrame(table, columns=columns).set_index(index).drop(columns="trial", errors="ignore")


_SCORES: dict[tuple[Any, ...], list[Score]] = {}  # replayed and baseline scores, once per process


def model_scores(defense: str, *, rung: str = GRID_RUNG, **options: Any) -> list[Score]:
    """The model's scores under `defense` over `model_specs(rung)`, `k` trials, trial by trial: kept per
    process when replayed, with a progress bar per trial when live. LabError if k is not a positive int."""
    backend, k, seed = options.get("backend"), options.get("k", 1), options.get("seed", 0)
    key, live = ("model", defense, rung, *sorted(options.items(), key=str)), _live(backend)
    if not live and key in _SCORES:
        return _SCORES[key]
    if type(k) is not int or k < 1:
        raise LabError(f"k (trials per episode) must be a positive int, got {k!r}")
    lab, defenses, scores = refund_lab(), defenses_named(defense), []
    for trial in range(k):

        def factory(d: Any, trial: int = trial) -> Any:
            temperature = options.get("temperature", 0.0)
            return model_policy(
                d, backend=backend, rung=rung, trial=trial, temperature=temperature, seed=seed + trial
            )

        specs = model_specs(lab, rung)
        if live:  # seconds of CPU per episode
            from tqdm.auto import tqdm

            desc = f"model {rung} under {defense}" + (f", trial {trial}" if k > 1 else "")
            specs = tqdm(specs, desc=desc, unit="episode")
        scores += score_policy(factory, defenses, specs, lab)
    if not live:
        _SCORES[key] = scores
    return scores


def baseline_scores(
    policy: str, defense: str, *, rung: str = GRID_RUNG, seeds: int | None = None
) -> list[Score]:
    """A baseline's scores on the model's suite: ``random-admissible`` (`seeds` seeds, default
    baselines.RANDOM_SEEDS), ``careful`` or ``gullible``."""
    seeds = (RANDOM_SEEDS if seeds is None else seeds) if policy == "random-admissible" else 1
    key = (policy, defense, rung, seeds)
    if key not in _SCORES:  # deterministic for a seed
        lab = refund_lab()
        specs = model_specs(lab, rung)
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
    same episodes, every rate with its 95% interval (`baselines.interval_row`)."""
    _check_recorded(defenses, rung, options.get("backend"))
    table = [
        interval_row(f"model {rung}", name, model_scores(name, rung=rung, **options)) for name in defenses
    ]
    for policy in BASELINES:
        label = f"{policy} {rung}" if policy == "random-admissible" else policy
        table += [
            interval_row(label, name, baseline_scores(policy, name, rung=rung, seeds=seeds))
            for name in defenses
        ]
    return DataFrame(table).set_index(["policy", "defense"])


def model_comparisons(
    defenses: Sequence[str] = LADDER_DEFENSES,
    *,
    rung: str = GRID_RUNG,
    seeds: int | None = None,
    **options: Any,
) -> DataFrame:
    """Paired comparisons on the same cases (`baselines.paired_rows`): the model under each defense
    against the model under `none`, and against the random-admissible and careful baselines."""
    _check_recorded(defenses, rung, options.get("backend"))
    model = {name: model_scores(name, rung=rung, **options) for name in defenses}
    table = []
    if "none" in model:
        for name in (d for d in defenses if d != "none"):
            table += paired_rows(f"model {rung} {name}", model[name], f"model {rung} none", model["none"])
    for name in defenses:
        for policy in ("random-admissible", "careful"):
            theirs = baseline_scores(policy, name, rung=rung, seeds=seeds)
            table += paired_rows(f"model {rung} {name}", model[name], f"{policy} {name}", theirs)
    return DataFrame(table).set_index(["comparison", "rate"])


def rates_with_intervals(table: DataFrame) -> DataFrame:
    """A copy of `table` with each rate and its ``<rate>_ci`` joined as the prose quotes them,
    "0.46 [0.30, 0.64]" ("-" where the rate has no episodes), the ``_ci`` columns dropped."""
    shown = table.copy()
    for column in [c for c in table.columns if f"{c}_ci" in table.columns]:
        shown[column] = [
            "-" if value is None or value != value or ci == "-" else f"{float(value):.2f} {ci}"
            for value, ci in zip(table[column], table[f"{column}_ci"], strict=True)
        ]
        shown = shown.drop(columns=f"{column}_ci")
    return shown


def _check_recorded(defenses: Sequence[str], rung: str, backend: Any, *, explicit: bool = True) -> list[str]:
    """The defenses the model runs under: all live; replayed, those recorded at `rung` (LabError
    when nothing is recorded, or, if `explicit`, when one of `defenses` is not)."""
    if _live(backend):
        return list(defenses)
    if not model_available():
        raise LabError(
            "no recorded model trials for the refund lab (fixtures/trials/refunds*.jsonl); "
            "record them with `labkit grid fixtures/grids/refunds-smollm2-l2.toml`"
        )
    known = recorded_defenses(rung)
    missing = [name for name in defenses if name not in known]
    if missing and explicit:
        raise LabError(
            f"no recorded model trials at rung {rung} under defense(s) {', '.join(missing)} "
            f"(recorded: {', '.join(known) or 'none'})"
        )
    return [name for name in defenses if name in known]


def refund_grid_table(record: str | Path) -> DataFrame:
    """What `labkit grid` prints at the end of a refund grid, from its episode records (no replay):
    a row per run label, the four rates with Wilson 95% intervals over the episodes (every trial
    counted as one), the unauthorised refunds and the money lost (dollars) in total."""
    lines = DataFrame([line for _, line in read_records(record) if is_episode(line)])
    table = []
    for run, group in lines.groupby("run", sort=False) if len(lines) else []:
        # An episode record holds a Score's outcomes under their names (grid.score_fields); each
        # trial counts as a case of its own.
        kinds = ["attack" if isinstance(attack, str) else "benign" for attack in group["attack"]]
        episodes = group.assign(kind=kinds, case=range(len(group)))
        table.append({"run": run, "episodes": len(group), **interval_rates(episodes)})
        table[-1]["unauthorized_refunds"] = int(group["unauthorized"].sum())
        table[-1]["money_lost"] = round(int(group["money_lost"].sum()) / 100, 2)
    return DataFrame(table).set_index("run") if table else DataFrame()
