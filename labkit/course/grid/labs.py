"""Grids of lab 03 (refunds) and lab 04 (routing): their axes, episodes, keys and records.

A grid file names its lab (``lab = "refunds"`` or ``lab = "routing"``; without it, docuctl,
`labkit.course.grid.spec`). A refund grid::

    lab = "refunds"
    models = ["local"]
    rungs = ["L2"]                    # L0-L2 (default ["L2"])
    temperatures = [0.0]              # default [0.0]
    seeds = [0]                       # trial t samples with seed + t
    k = 1                             # trials per case, 1..20
    defenses = ["none", "mediation"]  # default: the four model defenses
    cases = "model"                   # the model suite (refunds.grid.grid_cases) or case ids

One episode is (model, rung, temperature, seed, defense, case = request[+attack@place],
trial), run by `labkit.refunds.grid.refund_episode_record`. A routing grid::

    lab = "routing"
    models = ["local"]
    controls = ["L1", "L2", "L2+cut1"]          # default all three (model_reviser.GRID_CONTROLS)
    variants = ["no-feedback", "feedback"]      # default both
    temperatures = [0.0, 0.7]
    seeds = [0]
    k = 5

One episode is one reviser variant's run (model, control, variant, temperature, seed,
trial), run by `labkit.routing.model_reviser.variant_record`. Both are keyed, resumed and
recorded exactly once by `labkit.course.grid.run`, as docuctl's are.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from labkit.core.errors import FixtureError, LabError
from labkit.model.policy import MAX_TOKENS

REFUND_RUNGS = ("L0", "L1", "L2")


def _list(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "maxItems": 100, "uniqueItems": True, "items": items}


COMMON = ("models", "temperatures", "seeds", "k")  # the axes every lab's grid shares (spec.AXES')


def refund_axes(common: dict[str, Any]) -> dict[str, Any]:
    """A refund grid's axes; `common` holds the shared ones (COMMON) as spec.AXES defines them."""
    from labkit.refunds.defenses import DEFENSES

    return {
        "lab": {"const": "refunds"},
        **{name: common[name] for name in COMMON},
        "rungs": _list({"enum": list(REFUND_RUNGS)}),
        "defenses": _list({"enum": list(DEFENSES)}),
        "cases": {"oneOf": [{"const": "model"}, _list({"type": "string", "minLength": 1, "maxLength": 200})]},
    }


def routing_axes(common: dict[str, Any]) -> dict[str, Any]:
    """A routing grid's axes; `common` as in `refund_axes`."""
    from labkit.routing.model_reviser import VARIANTS
    from labkit.routing.reviser_trials import GRID_CONTROLS

    return {
        "lab": {"const": "routing"},
        **{name: common[name] for name in COMMON},
        "controls": _list({"enum": list(GRID_CONTROLS)}),
        "variants": _list({"enum": list(VARIANTS.values())}),
    }


def _key_hash(key: tuple[Any, ...]) -> str:
    return "labkit-episode-" + hashlib.sha256(json.dumps(key).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class RefundEpisode:
    """One refund grid episode; `seed` is the cell's, the episode samples with `seed + trial`.

    `case` is the grid case (request[+attack@place]); `task` is its task id under the defense,
    the `case` its calls and its episode record carry.
    """

    lab: ClassVar[str] = "refunds"
    model: str
    backend: str  # the backend's name (`spec.backend_name(model)`), part of the key
    rung: str
    temperature: float
    seed: int
    defense: str
    case: str
    task: str
    trial: int
    label: str
    max_tokens: int = MAX_TOKENS
    budget_tokens: None = None

    def key(self) -> tuple[Any, ...]:
        return refund_key(self.backend, self.rung, self.temperature, self.seed + self.trial,
                          self.task, self.trial)

    def task_key(self) -> str:
        return _key_hash(self.key())


def refund_key(backend: str, rung: str, temperature: float, seed: int, task: str, trial: int
               ) -> tuple[Any, ...]:
    """A refund episode's identity; `task` holds request, attack, place and defense."""
    return ("refunds", backend, rung, float(temperature), seed, task, trial)


@dataclass(frozen=True)
class RoutingEpisode:
    """One reviser variant's run; `case` is the reviser's task id (variant and cut)."""

    lab: ClassVar[str] = "routing"
    model: str
    backend: str  # as in RefundEpisode
    control: str
    temperature: float
    seed: int
    variant: str
    case: str
    trial: int
    label: str
    max_tokens: int = MAX_TOKENS
    budget_tokens: None = None

    @property
    def rung(self) -> str:
        from labkit.routing.reviser_trials import GRID_CONTROLS

        return GRID_CONTROLS[self.control][0]

    def key(self) -> tuple[Any, ...]:
        return routing_key(self.backend, self.rung, self.temperature, self.seed + self.trial,
                           self.case, self.trial)

    def task_key(self) -> str:
        return _key_hash(self.key())


def routing_key(backend: str, rung: str, temperature: float, seed: int, case: str, trial: int
                ) -> tuple[Any, ...]:
    """A reviser run's identity (`case` names the variant and the cut; `rung` the rest of the control)."""
    return ("routing", backend, rung, float(temperature), seed, case, trial)


def lab_record_key(record: dict[str, Any]) -> tuple[Any, ...] | None:
    """The key of a refunds or routing episode record; None for another lab's."""
    lab = record.get("lab")
    if lab == "refunds":
        return refund_key(record["backend"], record.get("rung", "L1"), record["temperature"], record["seed"],
                          record["case"], record["trial"])
    if lab == "routing":
        return routing_key(record["backend"], record.get("rung", "L1"), record["temperature"], record["seed"],
                           record["case"], record["trial"])
    return None


def _label(lab: str, backend: str, rung: str, temperature: float, seed: int, seeds: int) -> str:
    label = f"{backend} {lab} {rung} T={temperature:g}"
    return label + (f" seed={seed}" if seeds > 1 else "")


@dataclass(frozen=True)
class RefundGrid:
    """A validated refund grid (see the module docstring)."""

    path: str
    models: tuple[str, ...]
    backends: tuple[str, ...]  # each model's backend name, in order
    rungs: tuple[str, ...] = ("L2",)
    temperatures: tuple[float, ...] = (0.0,)
    seeds: tuple[int, ...] = (0,)
    k: int = 1
    defenses: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    lab: ClassVar[str] = "refunds"

    def cells(self) -> list[tuple[Any, ...]]:
        """(model, rung, temperature, seed, defense) of every cell, in the spec's order."""
        return list(itertools.product(self.models, self.rungs, self.temperatures, self.seeds, self.defenses))

    def episodes(self) -> list[RefundEpisode]:
        """Every episode: cell by cell, trial by trial, case by case."""
        from labkit.refunds.grid import episode_case

        tasks = {(case, d): episode_case(case, d) for case in self.cases for d in self.defenses}
        names = dict(zip(self.models, self.backends, strict=True))
        return [
            RefundEpisode(model, names[model], rung, temperature, seed, defense, case, tasks[case, defense],
                          trial, _label("refunds", names[model], rung, temperature, seed, len(self.seeds))
                          + f" {defense}")
            for model, rung, temperature, seed, defense in self.cells()
            for trial in range(self.k)
            for case in self.cases
        ]


@dataclass(frozen=True)
class RoutingGrid:
    """A validated routing (reviser) grid (see the module docstring)."""

    path: str
    models: tuple[str, ...]
    backends: tuple[str, ...]  # each model's backend name, in order
    controls: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    temperatures: tuple[float, ...] = (0.0,)
    seeds: tuple[int, ...] = (0,)
    k: int = 1
    lab: ClassVar[str] = "routing"

    def cells(self) -> list[tuple[Any, ...]]:
        """(model, control, temperature, seed) of every cell, in the spec's order."""
        return list(itertools.product(self.models, self.controls, self.temperatures, self.seeds))

    def episodes(self) -> list[RoutingEpisode]:
        """Every episode: cell by cell, trial by trial, variant by variant."""
        from labkit.routing.reviser_trials import GRID_CONTROLS

        def case(control: str, variant: str) -> str:
            cut = GRID_CONTROLS[control][1]
            return f"announcement+{variant}" + (f"+cut{cut}" if cut else "")

        names = dict(zip(self.models, self.backends, strict=True))
        return [
            RoutingEpisode(model, names[model], control, temperature, seed, variant, case(control, variant),
                           trial,
                           _label("routing", names[model], control, temperature, seed, len(self.seeds)))
            for model, control, temperature, seed in self.cells()
            for trial in range(self.k)
            for variant in self.variants
        ]


def refund_grid(path: Path, data: dict[str, Any], models: tuple[str, ...], backends: tuple[str, ...]
                ) -> RefundGrid:
    """A RefundGrid from checked data (`backends`: each model's backend name); FixtureError naming
    the field of an unknown case id."""
    from labkit.refunds.grid import grid_cases, spec_of
    from labkit.refunds.model_rows import MODEL_DEFENSES

    chosen = data.get("cases", "model")
    if chosen == "model":
        cases = grid_cases()
    else:
        for index, case in enumerate(chosen):
            try:
                spec_of(case)
            except LabError as error:
                raise FixtureError(f"{path}: field 'cases[{index}]': {error}") from None
        cases = tuple(chosen)
    return RefundGrid(
        path=str(path), models=models, backends=backends, rungs=tuple(data.get("rungs", ("L2",))),
        temperatures=tuple(float(t) for t in data.get("temperatures", (0.0,))),
        seeds=tuple(data.get("seeds", (0,))), k=data.get("k", 1),
        defenses=tuple(data.get("defenses", MODEL_DEFENSES)), cases=cases,
    )


def routing_grid(path: Path, data: dict[str, Any], models: tuple[str, ...], backends: tuple[str, ...]
                 ) -> RoutingGrid:
    """A RoutingGrid from checked data (`backends`: each model's backend name)."""
    from labkit.routing.model_reviser import VARIANTS
    from labkit.routing.reviser_trials import GRID_CONTROLS

    return RoutingGrid(
        path=str(path), models=models, backends=backends,
        controls=tuple(data.get("controls", tuple(GRID_CONTROLS))),
        variants=tuple(data.get("variants", tuple(VARIANTS.values()))),
        temperatures=tuple(float(t) for t in data.get("temperatures", (0.0,))),
        seeds=tuple(data.get("seeds", (0,))), k=data.get("k", 1),
    )


def print_tables(grid: RefundGrid | RoutingGrid, record: str | Path, *, as_json: bool = False) -> int:
    """Print the lab's table of what `record` holds (the end of `labkit grid`); 0."""
    if grid.lab == "refunds":
        from labkit.refunds.model_rows import refund_grid_table

        table = refund_grid_table(record)
    else:
        from labkit.routing.reviser_trials import grid_table

        table = grid_table(record)
    print(table.reset_index().to_json(orient="records") if as_json else table.to_string())
    return 0


def run_lab_episode(episode: RefundEpisode | RoutingEpisode, backend: Any, model_name: str) -> dict[str, Any]:
    """Run a refunds or routing episode on `backend` (a Recorder keeping its calls); its episode record."""
    if isinstance(episode, RefundEpisode):
        from labkit.refunds.grid import refund_episode_record

        return refund_episode_record(backend, model_name=model_name, label=episode.label, case=episode.case,
                              defense=episode.defense, rung=episode.rung, temperature=episode.temperature,
                              seed=episode.seed + episode.trial, trial=episode.trial)
    from labkit.routing.reviser_trials import variant_record

    return variant_record(backend, model_name=model_name, label=episode.label, variant=episode.variant,
                          control=episode.control, temperature=episode.temperature,
                          seed=episode.seed + episode.trial, trial=episode.trial)
