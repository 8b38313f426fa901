"""The model reviser over many trials as `labkit grid` records them (`routing-smollm2-k50.toml`: k=50 at
T=0.7, trial t with seed t; `routing-smollm2-t0.toml`: once at T=0), and its statistics. The trials
answer `FEEDBACK_QUESTION`: 50 paired trials per control give power 0.90 for a gain of 0.20 at 0.025.
One task per variant, so a T=0.7 rate is over trials; T=0 and the word cutter are one deterministic
run: no interval. `RoutingGrid` is how `labkit grid` runs the reviser's episodes and what it prints."""

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from labkit.core import stats
from labkit.model import Backend, read_records
from labkit.routing.experiments import cutter_experiment
from labkit.routing.model_reviser import (
    GRID_CONTROLS,
    RECORDED,
    REVISER_LAB,
    VARIANTS,
    run_variant,
    trial_runs,
)

_SAMPLED_T = 0.7  # the recordings: k=50 at T=0.7 per variant and control, and one run at T=0
_SAMPLED_K = 50
DETERMINISTIC = "one deterministic run"
RATE = "rate [95% interval]"
FEEDBACK_QUESTION = "lab04-feedback"  # what the trials were recorded to answer (fixtures/questions)
_PROMPT = "reviser"  # an episode record's `prompt`: the reviser has one prompt, the same in every episode


def sampled_runs(backend: Backend | None = None, *, k: int = _SAMPLED_K) -> pd.DataFrame:
    """`model_reviser.trial_runs` as the grid recorded them: one trial at T=0 (greedy decoding repeats
    itself) and `k` at T=0.7 (trial t with seed t), a row per run. When the model server did not answer,
    one line says so: those runs are `provider_error` and count as not published."""
    runs = trial_runs(backend, {0.0: 1, _SAMPLED_T: k})
    failed = int((runs["status"] == "provider_error").sum())
    if failed:
        print(
            f"no reply: the model server did not answer in {failed} of {len(runs)} runs (provider_error); "
            "they count as not published, so these rates measure the server, not the model"
        )
    return runs


def _by_trial(runs: pd.DataFrame) -> dict[str, int]:
    """Trial -> 1 if the run published, else 0: the unit of a sampled rate."""
    return {str(t): int(pd.notna(p)) for t, p in zip(runs["trial"], runs["published"], strict=True)}


def _rate(by_trial: dict[str, int], deterministic: bool = False) -> dict[str, str]:
    """How many trials published and the rate over trials with its interval (or DETERMINISTIC)."""
    rate = DETERMINISTIC if deterministic else str(stats.rate(by_trial))
    return {"published": f"{sum(by_trial.values())} of {len(by_trial)}", RATE: rate}


def _span(lengths: pd.Series) -> str:
    """The final lengths' range, "25" or "36-52" (a description of the runs, not an estimate)."""
    low, high = int(lengths.min()), int(lengths.max())
    return str(low) if low == high else f"{low}-{high}"


def _cutter() -> dict[str, bool]:
    """Variant (task suffix) -> whether the scripted word cutter published: one deterministic run."""
    summary, _ = cutter_experiment()
    return {VARIANTS[name]: summary.loc[name, "status"] == "completed" for name in VARIANTS}


def reviser_table(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` (`sampled_runs()`) a row per control and variant: at the highest T the trials that
    published and the rate over trials with its 95% interval (`stats.rate`); at T=0 and for the word
    cutter, one deterministic run's outcome."""
    sampled, greedy, cutter = runs[runs["T"] == runs["T"].max()], runs[runs["T"] == 0.0], _cutter()
    outcome, rows = {True: "yes", False: "no"}, []
    for (control, variant), group in sampled.groupby(["control", "variant"], sort=False):
        once = greedy[(greedy["control"] == control) & (greedy["variant"] == variant)]
        at_t0 = outcome[bool(once["published"].notna().all())] if len(once) else "-"
        rows.append(
            {
                "control": control,
                "variant": variant,
                **_rate(_by_trial(group)),
                "T=0, one run": at_t0,
                "word cutter, one run": outcome[cutter[variant]],
            }
        )
        if (runs["status"] == "provider_error").any():  # only when the server failed: the column says where
            rows[-1]["provider_error"] = int((group["status"] == "provider_error").sum())
    return pd.DataFrame(rows).set_index(["control", "variant"])


def reviser_comparisons(runs: pd.DataFrame) -> list[stats.Comparison]:
    """Paired by trial (same seeds) at the highest T: feedback - no-feedback under each control,
    L2+cut1 - L2 for each variant, and the model at L2+cut1 - the word cutter (its one deterministic
    run is the exact rate of every trial). `questions.answer(FEEDBACK_QUESTION, ..)` decides the declared ones
    (feedback - none at L1 and L2; L2+cut1 is at its ceiling, so it left the family)."""
    sampled, cutter = runs[runs["T"] == runs["T"].max()], _cutter()
    by = {key: _by_trial(group) for key, group in sampled.groupby(["control", "variant"], sort=False)}
    compare, told = stats.compare_rows, "feedback - none"
    rows = [compare(f"{c}: {told}", by[c, "feedback"], by[c, "no-feedback"]) for c in GRID_CONTROLS]
    rows += [compare(f"{v}: L2+cut1 - L2", by["L2+cut1", v], by["L2", v]) for v in VARIANTS.values()]
    # The cutter's one deterministic run, as the exact rate of each of the model's trials.
    exact = {v: dict.fromkeys(by["L2+cut1", v], float(cutter[v])) for v in VARIANTS.values()}
    return rows + [
        compare(f"{v}: L2+cut1 model - cutter", by["L2+cut1", v], exact[v], known=True)
        for v in VARIANTS.values()
    ]


def reviser_grid_table(record: str | os.PathLike[str]) -> pd.DataFrame:
    """Per run label and variant of a routing grid's recording: the trials, how many published and
    the rate over trials (or "one deterministic run" at T=0), and the final lengths' range. What
    `labkit grid` prints at the end."""
    episodes = pd.DataFrame(
        [r for _, r in read_records(record) if r.get("kind") == "episode" and r.get("lab") == REVISER_LAB]
    )
    if episodes.empty:
        return pd.DataFrame()
    rows = []
    for (run, variant), group in episodes.groupby(["run", "variant"], sort=False):
        passed = {str(t): int(p) for t, p in zip(group["trial"], group["passed"], strict=True)}
        greedy = len(group) == 1 and group["temperature"].iloc[0] == 0
        chars = _span(group["lengths"].str[-1])
        rows.append({"run": run, "variant": variant, **_rate(passed, greedy), "final chars": chars})
    return pd.DataFrame(rows).set_index(["run", "variant"])


class RoutingGrid:
    """Lab 04's grid, as `labkit.course.grid.labs` asks of every grid lab: a cell per model, control,
    temperature and seed, each running k trials of every chosen variant."""

    CELL_AXES = ("models", "controls", "temperatures", "seeds")
    INNER_AXIS = "variants"

    @staticmethod
    def fill_schema(axes: dict[str, Any]) -> None:
        """Fill in, in place, a routing grid's axes (spec.schema.json's `routing`): the controls, any of
        GRID_CONTROLS, and the variants, any of VARIANTS' task suffixes; each by default all of them."""
        for name, values in (("controls", list(GRID_CONTROLS)), ("variants", list(VARIANTS.values()))):
            axes[name] |= {"items": {"enum": values}, "default": values}

    @staticmethod
    def inner_values(path: Path, chosen: list[str]) -> list[str]:
        """The variants as chosen: the schema's enum has already refused any other (`path` is unused)."""
        return chosen

    @staticmethod
    def cell_episode(
        cell: Mapping[str, Any], variant: str, values: Mapping[str, Any], *, backend: str, seed_tag: str
    ) -> dict[str, Any]:
        """The lab's fields of the episode of `variant` in `cell` (a value of each of CELL_AXES): the rung of
        the cell's control, its task id (the variant, and the fewest words cut where the control sets it:
        what its calls and record are keyed by), its label, and the control and the variant as options."""
        control = cell["controls"]
        rung, cut = GRID_CONTROLS[control]
        case = f"announcement+{variant}" + (f"+cut{cut}" if cut else "")
        label = f"{backend} routing {control} T={cell['temperatures']:g}{seed_tag}"
        return {
            "rung": rung,
            "case": case,
            "label": label,
            "prompt": _PROMPT,
            "options": (("control", control), ("variant", variant)),
        }

    @staticmethod
    def record_episode(backend: Backend, episode: Any, model_name: str) -> dict[str, Any]:
        """Run one grid episode (a `labkit.course.grid.spec.GridEpisode`: its options' variant under its
        options' control, at its settings) on `backend`; its episode record (`stop`: the run's status,
        `passed`: something was published, `texts` and `lengths`: each revision)."""
        start = time.perf_counter()
        options = dict(episode.options)
        settings = {"temperature": episode.temperature, "seed": episode.trial_seed, "trial": episode.trial}
        reviser, result = run_variant(options["variant"], backend, options["control"], **settings)
        published = result.results.get("publish")
        answer = published if isinstance(published, str) else None
        return {
            "kind": "episode",
            "run": episode.label,
            "lab": REVISER_LAB,
            "case": reviser.task.id,
            "trial": episode.trial,
            "prompt": _PROMPT,
            "variant": options["variant"],
            "control": options["control"],
            "rung": reviser.rung,
            "backend": model_name,
            "temperature": float(episode.temperature),
            "seed": episode.trial_seed,
            "max_tokens": reviser.policy.max_tokens,
            "limits": {"max_turns": RECORDED["max_visits"], "max_tools": 0, "budget_tokens": None},
            "stop": result.status,
            "turns": len(reviser.history),
            "tool_calls": 0,
            "answer": answer,
            "citation": None,
            "passed": answer is not None,
            "texts": list(reviser.history),
            "lengths": [len(text) for text in reviser.history],
            "elapsed_s": round(time.perf_counter() - start, 3),
        }

    @staticmethod
    def grid_report(record: str, *, as_json: bool, width: int) -> str:
        """`reviser_grid_table` of the recording: as JSON records with `as_json`, else text `width` wide."""
        table = reviser_grid_table(record)
        return table.reset_index().to_json(orient="records") if as_json else table.to_string(line_width=width)
