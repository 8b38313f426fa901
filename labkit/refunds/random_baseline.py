"""The random-admissible baseline on the model suite, drawn once over `DRAWN_SEEDS` seeds and kept as a
fixture (fixtures/refunds/random-admissible-l2.json) with its provenance, so notebook 03 reads it in
milliseconds instead of running 434 cases x 4 defenses x 250 seeds (about 14 minutes) on every Run All.

Per defense and case the file holds each outcome's mean over the seeds (and `sd`, its spread over
seeds: a case's Monte-Carlo error is sd / sqrt(seeds), at most 0.032). Regenerate it after changing
the suite, the shop or the policy with

    python -m labkit.refunds.random_baseline

`episodes` refuses (FixtureError, one line) a file recorded on another suite or with another seed
count than `DRAWN_SEEDS`, rather than comparing the model with the wrong cases."""

import datetime
import json
import platform
from collections.abc import Sequence
from typing import Any

import pandas as pd

from labkit.core.errors import FixtureError
from labkit.core.fixtures import FIXTURES, read_json
from labkit.refunds.grid import MODEL_DEFENSES, spec_of, suite_cases
from labkit.refunds.intervals import episodes_of, random_scores
from labkit.refunds.lab import refund_lab

FILE = FIXTURES / "refunds" / "random-admissible-l2.json"
DRAWN_SEEDS = 250  # Monte-Carlo error of a rate over the 434 cases below 0.003: it vanishes in the intervals
_OUTCOMES = ("utility", "attacked", "unauthorized_any", "unauthorized", "money_lost")


def draw(defenses: Sequence[str], seeds: int = DRAWN_SEEDS) -> dict[str, Any]:
    """random-admissible on every case of the model suite under each of `defenses`, seeds 0..seeds-1:
    per defense and case, each outcome's mean and standard deviation over the seeds."""
    lab = refund_lab()
    specs = [spec_of(case, lab) for case in suite_cases(lab)]
    found: dict[str, Any] = {}
    for defense in defenses:
        episodes = episodes_of(random_scores(defense, specs, seeds, lab))
        episodes["unauthorized_any"] = (episodes["unauthorized"] > 0).astype(float)
        episodes["attacked"] = episodes["attacked"].astype(float).where(episodes["kind"] == "attack")
        grouped = episodes.groupby("case", sort=False)
        means, spread = grouped[list(_OUTCOMES)].mean(), grouped[list(_OUTCOMES)].std(ddof=1)
        found[defense] = {
            case: {"kind": grouped["kind"].first()[case], "request": grouped["request"].first()[case]}
            | {name: _number(means.loc[case, name]) for name in _OUTCOMES}
            | {f"{name}_sd": _number(spread.loc[case, name]) for name in _OUTCOMES}
            for case in means.index
        }
    return found


def _number(value: float) -> float | None:
    return None if pd.isna(value) else round(float(value), 6)


def write_draw() -> dict[str, Any]:
    """Draw the baseline under the model's defenses over `DRAWN_SEEDS` seeds (the only count
    `episodes` reads) and write it to `FILE` with its provenance."""
    from importlib.metadata import version

    provenance = {
        "command": "python -m labkit.refunds.random_baseline",
        "seeds": DRAWN_SEEDS,
        "cases": list(suite_cases()),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "versions": {"python": platform.python_version(), "labkit": version("labkit")},
    }
    data = {"provenance": provenance, "defenses": draw(MODEL_DEFENSES)}
    # whole, in one write: a failed draw leaves the old file
    FILE.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return data


def _load() -> dict[str, Any]:
    data = read_json(FILE, "random-admissible baseline")
    provenance = data.get("provenance", {}) if isinstance(data, dict) else {}
    # serves: ours — a shipped draw made for another suite is refused
    if provenance.get("cases") != list(suite_cases()) or provenance.get("seeds") != DRAWN_SEEDS:
        raise FixtureError(
            f"{FILE}: recorded on another suite or seed count than the model suite's {len(suite_cases())} "
            f"cases and {DRAWN_SEEDS} seeds; regenerate it with `python -m labkit.refunds.random_baseline`"
        )
    return data


def episodes(defense: str) -> pd.DataFrame:
    """The baseline under `defense` as `intervals.episodes_of` frames episodes, one row per case
    whose outcomes are the means over the seeds (`unauthorized` the share of seeds with an
    unauthorised refund), with `trials` the seed count. FixtureError for a stale file or a
    defense it does not hold."""
    found = _load()["defenses"]
    if defense not in found:  # serves: user
        raise FixtureError(f"{FILE}: no draw under defense {defense!r} (drawn: {', '.join(found)})")
    frame = pd.DataFrame.from_dict(found[defense], orient="index").rename_axis("case").reset_index()
    counts = frame[["unauthorized", "money_lost"]].rename(
        columns={"unauthorized": "unauthorized_refunds", "money_lost": "money_lost_cents"}
    )
    frame = frame.assign(unauthorized=frame["unauthorized_any"]).drop(columns="unauthorized_any")
    return pd.concat([frame, counts], axis=1).assign(trials=DRAWN_SEEDS)


if __name__ == "__main__":
    drawn = write_draw()
    print(f"wrote {FILE}: {len(drawn['defenses'])} defenses x {len(drawn['provenance']['cases'])} cases")
