"""The model reviser over many trials: one variant's run as `labkit grid` records it, and its tables.

`labkit grid fixtures/grids/routing-smollm2-k5.toml` records every control (GRID_CONTROLS) and
variant at T=0 and T=0.7, k=5 trials each (trial t with seed t), one episode record per run
(`variant_record`), into fixtures/trials/routing-trials-smollm2-k5.jsonl. `reviser_table()` puts
the model's runs beside the scripted `experiments.WordCutter` with 95% intervals,
`reviser_comparisons()` pairs the variants trial by trial, and `reviser_grid_table(record)` is
what `labkit grid` prints at the end.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pandas as pd

from labkit.core.errors import LabError
from labkit.model import Backend, backend_from_env
from labkit.routing.clock import FakeClock
from labkit.routing.experiments import LIMIT, loop_graph
from labkit.routing.model_reviser import RECORDED, REVISER_LAB, VARIANTS, ModelReviser
from labkit.routing.result import RunResult

# A grid's control names: the rung and the fewest words cut per visit (CONTROLS, by rung label).
GRID_CONTROLS = {"L1": ("L1", 0), "L2": ("L2", 0), "L2+cut1": ("L2", 1)}


def _run_variant(
    variant: str,
    backend: Backend | None,
    *,
    control: str = "L1",
    temperature: float = 0.0,
    seed: int = 0,
    trial: int = 0,
    max_visits: int = RECORDED["max_visits"],
    limit: int = RECORDED["limit"],
) -> tuple[ModelReviser, RunResult]:
    """One variant (`VARIANTS`' name or task suffix) of the loop under one control: the reviser
    and the run. LabError for an unknown variant or control."""
    names = {suffix: name for name, suffix in VARIANTS.items()} | {name: name for name in VARIANTS}
    if variant not in names:
        raise LabError(f"unknown reviser variant {variant!r} (known: {', '.join(VARIANTS.values())})")
    if control not in GRID_CONTROLS:
        raise LabError(f"unknown reviser control {control!r} (known: {', '.join(GRID_CONTROLS)})")
    rung, min_cut = GRID_CONTROLS[control]
    name = names[variant]
    reviser = ModelReviser(
        name,
        backend=backend,
        limit=limit,
        rung=rung,
        min_cut=min_cut,
        temperature=temperature,
        seed=seed,
        trial=trial,
    )
    graph, _ = loop_graph(feedback=name == "with feedback", limit=limit, reviser=reviser)
    return reviser, graph.run(max_visits=max_visits, clock=FakeClock())


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
    reviser, result = _run_variant(
        variant, backend, control=control, temperature=temperature, seed=seed, trial=trial
    )
    published = result.results.get("publish")
    rung, min_cut = GRID_CONTROLS[control]
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    return {
        "kind": "episode",
        "run": label,
        "lab": REVISER_LAB,
        "case": reviser.task.id,
        "trial": trial,
        "prompt": "reviser",
        "variant": VARIANTS.get(variant, variant),
        "control": control,
        "rung": rung,
        "min_cut": min_cut,
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
        "usage": usage,
        "elapsed_s": round(time.perf_counter() - start, 3),
    }


# -- the reviser table: k trials, the scripted baseline, intervals --------------------------

_SAMPLED_T = 0.7  # the recordings: k=5 at T=0.7 per variant and control, plus T=0
_SAMPLED_K = 5


def trial_outcomes(
    control: str,
    variant: str,
    *,
    temperature: float = _SAMPLED_T,
    k: int = _SAMPLED_K,
    backend: Backend | None = None,
) -> list[dict[str, Any]]:
    """`k` runs of one variant under one control (trial t with seed t, as the grid records them):
    per trial, whether something was published, the last text's characters and the texts."""
    backend = backend_from_env() if backend is None else backend
    out = []
    for trial in range(k):
        reviser, result = _run_variant(
            variant, backend, control=control, temperature=temperature, seed=trial, trial=trial
        )
        published = result.results.get("publish")
        out.append(
            {
                "trial": trial,
                "published": isinstance(published, str),
                "final chars": len(reviser.history[-1]) if reviser.history else None,
                "texts": list(reviser.history),
                "status": result.status,
            }
        )
    return out


def _row(
    reviser: str, control: str, variant: str, temperature: float | None, outcomes: list[dict[str, Any]]
) -> dict[str, Any]:
    from labkit.core.intervals import bootstrap, wilson

    published = wilson(sum(o["published"] for o in outcomes), len(outcomes))
    chars = bootstrap({str(o["trial"]): [o["final chars"]] for o in outcomes})
    return {
        "reviser": reviser,
        "control": control,
        "variant": variant,
        "T": "-" if temperature is None else temperature,
        "trials": len(outcomes),
        "published": round(published.estimate, 3),
        "published_ci": f"[{published.low:.2f}, {published.high:.2f}]",
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
    from labkit.routing.experiments import cutter_experiment

    rows = []
    for control in GRID_CONTROLS:
        for variant in VARIANTS.values():
            for t, trials in ((0.0, 1), (temperature, k)):
                outcomes = trial_outcomes(control, variant, temperature=t, k=trials, backend=backend)
                rows.append(_row("model", control, variant, t, outcomes))
    for name, cutter in cutter_experiment()[1].items():
        fits = len(cutter.history[-1]) <= LIMIT
        outcome = {
            "trial": 0,
            "published": fits,
            "final chars": len(cutter.history[-1]),
            "texts": cutter.history,
            "status": "completed" if fits else "dead_letter",
        }
        rows.append(_row("word cutter (scripted)", "L2+cut1", VARIANTS[name], None, [outcome]))
    return pd.DataFrame(rows).set_index(["reviser", "control", "variant", "T"])


def reviser_comparisons(
    backend: Backend | None = None, *, temperature: float = _SAMPLED_T, k: int = _SAMPLED_K
) -> pd.DataFrame:
    """`published` with feedback against without, trial by trial (same seeds), under each control:
    the paired bootstrap 95% interval, McNemar's exact p, and "a difference" only when the
    interval excludes 0 and p < 0.05 (five trials: the bootstrap alone is too eager)."""
    from labkit.core.intervals import mcnemar, paired, verdict

    rows = []
    for control in GRID_CONTROLS:
        a, b = (
            {
                str(o["trial"]): o["published"]
                for o in trial_outcomes(control, variant, temperature=temperature, k=k, backend=backend)
            }
            for variant in ("feedback", "no-feedback")
        )
        interval = paired({t: float(v) for t, v in a.items()}, {t: float(v) for t, v in b.items()})
        p = mcnemar(a, b)
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
    from labkit.core.intervals import wilson
    from labkit.model import read_records

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _, record_ in read_records(record):
        if record_.get("kind") == "episode" and record_.get("lab") == REVISER_LAB:
            groups.setdefault((record_["run"], record_["variant"]), []).append(record_)
    rows = []
    for (run, variant), episodes in groups.items():
        interval = wilson(sum(bool(e["passed"]) for e in episodes), len(episodes))
        lasts = [e["lengths"][-1] for e in episodes if e["lengths"]]
        rows.append(
            {
                "run": run,
                "variant": variant,
                "trials": len(episodes),
                "published": round(interval.estimate, 3),
                "published_ci": f"[{interval.low:.2f}, {interval.high:.2f}]",
                "final chars": round(sum(lasts) / len(lasts), 1) if lasts else None,
            }
        )
    return pd.DataFrame(rows).set_index(["run", "variant"]) if rows else pd.DataFrame()
