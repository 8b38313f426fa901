"""The model reviser over many trials: one variant's run as `labkit grid` records it, and its tables.

`labkit grid fixtures/grids/routing-smollm2-k5.toml` records every control and variant at T=0 and
T=0.7, k=5 trials each (trial t with seed t), one episode record per run (`variant_record`).
`reviser_table()` puts them beside the scripted `experiments.WordCutter` with 95% intervals,
`reviser_comparisons()` pairs the variants trial by trial, `reviser_grid_table(record)` is what
`labkit grid` prints at the end.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pandas as pd

from labkit.core.intervals import bootstrap, mcnemar, paired, verdict, wilson
from labkit.model import Backend, backend_from_env, read_records
from labkit.routing.experiments import LIMIT, cutter_experiment
from labkit.routing.model_reviser import GRID_CONTROLS, RECORDED, REVISER_LAB, VARIANTS, run_variant

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
        "min_cut": reviser.min_cut,
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
        "limit": RECORDED["limit"],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        "elapsed_s": round(time.perf_counter() - start, 3),
    }


def trial_outcomes(
    control: str,
    variant: str,
    *,
    temperature: float = _SAMPLED_T,
    k: int = _SAMPLED_K,
    backend: Backend | None = None,
) -> list[dict[str, Any]]:
    """`k` runs of one variant under one control (trial t with seed t, as the grid records them):
    per trial, whether something was published, the last text's characters, the texts, the status."""
    backend = backend_from_env() if backend is None else backend
    out = []
    for trial in range(k):
        reviser, result = run_variant(
            variant, backend, control, temperature=temperature, seed=trial, trial=trial
        )
        texts = list(reviser.history)
        last = len(texts[-1]) if texts else None
        published = isinstance(result.results.get("publish"), str)
        out.append(
            {
                "trial": trial,
                "published": published,
                "final chars": last,
                "texts": texts,
                "status": result.status,
            }
        )
    return out


def _published(passed: list[bool]) -> dict[str, Any]:
    """The trials, the share published and its Wilson 95% interval."""
    share = wilson(sum(passed), len(passed))
    return {
        "trials": len(passed),
        "published": round(share.estimate, 3),
        "published_ci": f"[{share.low:.2f}, {share.high:.2f}]",
    }


def _row(
    reviser: str, control: str, variant: str, temperature: Any, outcomes: list[dict[str, Any]]
) -> dict[str, Any]:
    chars = bootstrap({str(o["trial"]): [o["final chars"]] for o in outcomes})
    return {
        "reviser": reviser,
        "control": control,
        "variant": variant,
        "T": temperature,
        **_published([o["published"] for o in outcomes]),
        "final chars": round(chars.estimate, 1),
        "final chars_ci": f"[{chars.low:.1f}, {chars.high:.1f}]",
        "distinct final texts": len({o["texts"][-1] for o in outcomes if o["texts"]}),
        "status": ", ".join(sorted({o["status"] for o in outcomes})),
    }


def reviser_table(
    backend: Backend | None = None, *, temperature: float = _SAMPLED_T, k: int = _SAMPLED_K
) -> pd.DataFrame:
    """The model under each control and variant at T=0 (one trial: greedy decoding repeats itself)
    and at `temperature` (`k` trials), then the deterministic `experiments.WordCutter`: the share
    published (Wilson 95% interval) and the mean last length (bootstrap interval)."""
    rows = []
    for control in GRID_CONTROLS:
        for variant in VARIANTS.values():
            for t, trials in ((0.0, 1), (temperature, k)):
                outcomes = trial_outcomes(control, variant, temperature=t, k=trials, backend=backend)
                rows.append(_row("model", control, variant, t, outcomes))
    for name, cutter in cutter_experiment()[1].items():
        fits = len(cutter.history[-1]) <= LIMIT
        status = "completed" if fits else "dead_letter"
        outcome = {
            "trial": 0,
            "published": fits,
            "final chars": len(cutter.history[-1]),
            "texts": cutter.history,
        }
        rows.append(
            _row("word cutter (scripted)", "L2+cut1", VARIANTS[name], "-", [outcome | {"status": status}])
        )
    return pd.DataFrame(rows).set_index(["reviser", "control", "variant", "T"])


def reviser_comparisons(
    backend: Backend | None = None, *, temperature: float = _SAMPLED_T, k: int = _SAMPLED_K
) -> pd.DataFrame:
    """`published` with feedback against without, trial by trial (same seeds), under each control:
    the paired bootstrap 95% interval, McNemar's exact p, and "a difference" only when the
    interval excludes 0 and p < 0.05 (five trials: the bootstrap alone is too eager)."""
    rows = []
    for control in GRID_CONTROLS:
        a, b = (
            {
                str(o["trial"]): o["published"]
                for o in trial_outcomes(control, v, temperature=temperature, k=k, backend=backend)
            }
            for v in ("feedback", "no-feedback")
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
    rows = []
    for (run, variant), group in episodes.groupby(["run", "variant"], sort=False):
        lasts = [lengths[-1] for lengths in group["lengths"] if lengths]
        final = round(sum(lasts) / len(lasts), 1) if lasts else None
        rows.append(
            {
                "run": run,
                "variant": variant,
                **_published([bool(p) for p in group["passed"]]),
                "final chars": final,
            }
        )
    return pd.DataFrame(rows).set_index(["run", "variant"])
