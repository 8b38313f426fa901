"""The model reviser over many trials: one variant's run as `labkit grid` records it, and its tables.

`labkit grid fixtures/grids/routing-smollm2-k5.toml` records each control and variant at T=0 and
T=0.7, k=5 trials each, an episode record per run (`variant_record`); `sampled_runs()` replays them.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pandas as pd

from labkit.core.intervals import bootstrap, mcnemar, paired, verdict, wilson
from labkit.model import Backend, read_records
from labkit.routing.experiments import cutter_experiment
from labkit.routing.model_reviser import (
    RECORDED,
    REVISER_LAB,
    VARIANTS,
    run_variant,
    trial_runs,
)

_SAMPLED_T = 0.7  # the recordings: k=5 at T=0.7 per variant and control, plus T=0
_SAMPLED_K = 5


def variant_record(
    backend: Backend,
    *,
    model_name: str,
    label: str,
    variant: str,
    control: str,
    temperature: float,
    seed: int,
    trial: int,
) -> dict[str, Any]:
    """Run one variant on `backend` (the grid's Recorder keeps the calls); its episode record
    (`stop`: the run's status, `passed`: something was published, `texts`: every revision)."""
    start = time.perf_counter()
    reviser, result = run_variant(variant, backend, control, temperature=temperature, seed=seed, trial=trial)
    published = result.results.get("publish")
    return {
        "kind": "episode",
        "run": label,
        "lab": REVISER_LAB,
        "case": reviser.task.id,
        "trial": trial,
        "prompt": "reviser",
        "variant": variant,
        "control": control,
        "rung": reviser.rung,
        "backend": model_name,
        "temperature": float(temperature),
        "seed": seed,
        "max_tokens": reviser.policy.max_tokens,
        "limits": {"max_turns": RECORDED["max_visits"], "max_tools": 0, "budget_tokens": None},
        "stop": result.status,
        "turns": len(reviser.history),
        "tool_calls": 0,
        "answer": published if isinstance(published, str) else None,
        "citation": None,
        "passed": isinstance(published, str),
        "texts": list(reviser.history),
        "lengths": [len(text) for text in reviser.history],
        "elapsed_s": round(time.perf_counter() - start, 3),
    }


def sampled_runs(
    backend: Backend | None = None, *, temperature: float = _SAMPLED_T, k: int = _SAMPLED_K
) -> pd.DataFrame:
    """`model_reviser.trial_runs` as the grid recorded them: one trial at T=0 (greedy decoding repeats
    itself) and `k` at `temperature` (trial t with seed t), a row per run."""
    return trial_runs(backend, {0.0: 1, temperature: k})


def _published(passed: pd.Series) -> dict[str, Any]:
    """The trials, the share published and its Wilson 95% interval."""
    share = wilson(int(passed.sum()), len(passed))
    return {
        "trials": len(passed),
        "published": round(share.estimate, 3),
        "published_ci": f"[{share.low:.2f}, {share.high:.2f}]",
    }


def _summary(runs: pd.DataFrame) -> dict[str, Any]:
    """One group of runs: the share published and the mean last length, each with its 95% interval."""
    lasts = runs["texts"].map(lambda texts: texts[-1] if texts else None)
    chars = bootstrap({str(t): [len(last)] for t, last in zip(runs["trial"], lasts, strict=True)})
    return {
        **_published(runs["published"].notna()),
        "final chars": round(chars.estimate, 1),
        "final chars_ci": f"[{chars.low:.1f}, {chars.high:.1f}]",
        "distinct final texts": lasts.nunique(),
        "status": ", ".join(sorted(set(runs["status"]))),
    }


def reviser_table(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` (`sampled_runs()`) per control, variant and temperature, then the deterministic
    `experiments.WordCutter`: the share published (Wilson 95% interval) and the mean last length
    (bootstrap interval)."""
    summary, cutters = cutter_experiment()
    cut = [
        {
            "reviser": "word cutter (scripted)",
            "control": "L2+cut1",
            "variant": VARIANTS[name],
            "T": "-",
            "trial": 0,
            "texts": cutter.history,
            "status": summary.loc[name, "status"],
            "published": summary.loc[name, "published"],
        }
        for name, cutter in cutters.items()
    ]
    runs = pd.concat([runs.assign(reviser="model"), pd.DataFrame(cut)], ignore_index=True)
    runs["published"] = runs["published"].where(runs["published"] != "-")
    keys = ["reviser", "control", "variant", "T"]
    rows = [
        dict(zip(keys, key, strict=True)) | _summary(group) for key, group in runs.groupby(keys, sort=False)
    ]
    return pd.DataFrame(rows).set_index(keys)


def reviser_comparisons(runs: pd.DataFrame) -> pd.DataFrame:
    """`published` with feedback against without, trial by trial (same seeds), under each control, over
    the sampled trials of `runs` (its highest T): the paired bootstrap 95% interval, McNemar's exact p,
    and "a difference" only when the interval excludes 0 and p < 0.05 (five trials: the bootstrap
    alone is too eager)."""
    rows = []
    for control, group in runs[runs["T"] == runs["T"].max()].groupby("control", sort=False):
        a, b = (
            {str(t): pd.notna(p) for t, p in zip(g["trial"], g["published"], strict=True)}
            for g in (group[group["variant"] == v] for v in ("feedback", "no-feedback"))
        )
        interval, p = (
            paired({t: float(v) for t, v in a.items()}, {t: float(v) for t, v in b.items()}),
            mcnemar(a, b),
        )
        rows.append(
            {
                "control": control,
                "comparison": "feedback - no-feedback",
                "rate": "published",
                "trials": len(a),
                "difference": round(interval.estimate, 3),
                "difference_ci": f"[{interval.low:.2f}, {interval.high:.2f}]",
                "mcnemar_p": f"{p:.3f}",
                "verdict": verdict(interval, p),
            }
        )
    return pd.DataFrame(rows).set_index(["control", "comparison"])


def reviser_grid_table(record: str | os.PathLike[str]) -> pd.DataFrame:
    """Per run label and variant of a routing grid's recording: the trials, the share published
    (Wilson 95% interval) and the mean last length. What `labkit grid` prints at the end."""
    episodes = pd.DataFrame(
        [r for _, r in read_records(record) if r.get("kind") == "episode" and r.get("lab") == REVISER_LAB]
    )
    if episodes.empty:
        return pd.DataFrame()
    rows = [
        {"run": run, "variant": variant, **_published(group["passed"].astype(bool))}
        | {"final chars": round(group["lengths"].str[-1].mean(), 1)}
        for (run, variant), group in episodes.groupby(["run", "variant"], sort=False)
    ]
    return pd.DataFrame(rows).set_index(["run", "variant"])
