"""A trial grid as data: which episodes to run, read from a small TOML or JSON file.

A grid names the axes of a model study; every combination is one *cell* (one run label,
one row of the evaluation), and each cell runs k trials of every chosen case::

    models = ["local", "ollama:qwen2.5:0.5b"]   # backends, as `labkit trials --model` takes them
    prompts = ["base", "example"]               # default ["base"]
    rungs = ["L1", "L3"]                        # default ["L1"]
    temperatures = [0.0, 0.7]                   # default [0.0]
    seeds = [0]                                 # default [0]; trial t uses seed + t
    k = 5                                       # trials per case, 1..20 (default 1)
    cases = "base"                              # a case set (base, adaptive, all) or case ids
    max_tokens = 160                            # optional, as `labkit trials --max-tokens`
    budget_tokens = 2000                        # optional, as `labkit trials --budget-tokens`

A grid may name its lab: ``lab = "docuctl"`` (the default, above), ``"refunds"`` (lab 03's
model policy) or ``"routing"`` (lab 04's model reviser); the last two have their own axes
(`labkit.course.grid.labs`). Every lab's episodes are keyed, resumed and recorded once alike.

A cell's episode is exactly the episode `labkit trials` records with the same model,
prompt, rung, temperature, seed and limits, labelled as `trials` labels it (plus
`seed=S` when the grid has more than one seed, so cells stay apart in the evaluation).
`load_spec` refuses anything else with one line naming the file and the field: an unknown
axis, a value of the wrong type or out of range, an unknown model, prompt, rung, case set
or case id, a repeated value, or two models that would share a run label.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

from labkit.core.errors import FixtureError, LabError
from labkit.core.fixtures import read_json, read_text, schema_error
from labkit.core.text import shorten
from labkit.course.argtypes import SEED_MAX
from labkit.decision_loop.model_policy import DOCUCTL_LAB as LAB
from labkit.decision_loop.model_policy import PROMPTS
from labkit.decision_loop.trials import CASE_SETS, MAX_TOKENS_MAX, MAX_TRIALS, cases_of, default_label
from labkit.model.constraints import RUNGS
from labkit.model.factory import backend_name
from labkit.model.policy import MAX_TOKENS

GRID_LABS = (LAB, "refunds", "routing")  # a grid's `lab` (see labkit.course.grid.labs)
# More episodes than this is a week of model time at 6 s each: more likely an axis typed
# wrong than a study, so it is refused rather than queued.
MAX_EPISODES = 100_000


def _list(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "maxItems": 100, "uniqueItems": True, "items": items}


AXES: dict[str, Any] = {
    "lab": {"const": LAB},
    "models": _list({"type": "string", "minLength": 1, "maxLength": 200}),
    "prompts": _list({"enum": list(PROMPTS)}),
    "rungs": _list({"enum": list(RUNGS)}),
    "temperatures": _list({"type": "number", "minimum": 0, "maximum": 2}),
    "seeds": _list({"type": "integer", "minimum": 0, "maximum": SEED_MAX - MAX_TRIALS}),
    "k": {"type": "integer", "minimum": 1, "maximum": MAX_TRIALS},
    "cases": {
        "oneOf": [
            {"enum": list(CASE_SETS)},
            _list({"type": "string", "minLength": 1, "maxLength": 100}),
        ]
    },
    "max_tokens": {"type": "integer", "minimum": 1, "maximum": MAX_TOKENS_MAX},
    "budget_tokens": {"type": "integer", "minimum": 1, "maximum": 2**53},
}
SCHEMA = {"type": "object", "properties": AXES, "required": ["models"]}


@dataclass(frozen=True)
class Episode:
    """One episode of a grid: a cell (model .. budget_tokens, label) and a case and trial.

    `seed` is the cell's seed; the episode runs, and is recorded, with seed `seed + trial`.
    """

    lab: ClassVar[str] = LAB  # which lab's episodes (labs.py's grids name theirs)

    model: str
    prompt: str
    rung: str
    temperature: float
    seed: int
    case: str
    trial: int
    label: str
    max_tokens: int = MAX_TOKENS
    budget_tokens: int | None = None

    def key(self) -> tuple[Any, ...]:
        """What identifies the episode in a recording: lab, backend, prompt, rung, T, seed, case, trial."""
        return key_of(
            backend_name(self.model),
            self.prompt,
            self.rung,
            self.temperature,
            self.seed + self.trial,
            self.case,
            self.trial,
        )

    def task_key(self) -> str:
        """A Dask key for the episode: the same episode always has the same key."""
        digest = hashlib.sha256(json.dumps(self.key()).encode()).hexdigest()[:20]
        return f"labkit-episode-{digest}"


def key_of(
    backend: str, prompt: str, rung: str, temperature: float, seed: int, case: str, trial: int
) -> tuple[Any, ...]:
    """An episode's identity; `seed` is the one it ran with (the cell's seed + trial)."""
    return (LAB, backend, prompt, rung, float(temperature), seed, case, trial)


def record_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """The key of an episode record (as `labkit trials` and the grid write them), of any grid lab."""
    if record.get("lab", LAB) != LAB:
        from labkit.course.grid.labs import lab_record_key

        key = lab_record_key(record)
        if key is not None:
            return key
    return key_of(
        record["backend"],
        record["prompt"],
        record.get("rung", "L1"),
        record["temperature"],
        record["seed"],
        record["case"],
        record["trial"],
    )


@dataclass(frozen=True)
class Grid:
    """A validated grid: its axes, and the episodes they expand to (`episodes()`)."""

    lab: ClassVar[str] = LAB  # which lab's episodes (labs.py's grids name theirs)

    path: str
    models: tuple[str, ...]
    prompts: tuple[str, ...] = ("base",)
    rungs: tuple[str, ...] = ("L1",)
    temperatures: tuple[float, ...] = (0.0,)
    seeds: tuple[int, ...] = (0,)
    k: int = 1
    cases: tuple[str, ...] = ()
    max_tokens: int = MAX_TOKENS
    budget_tokens: int | None = None

    def label(self, model: str, prompt: str, rung: str, temperature: float, seed: int) -> str:
        """The run label of a cell: `labkit trials`' default label, plus the seed if seeds vary."""
        label = default_label(SimpleNamespace(name=backend_name(model)), prompt, temperature, rung)
        return label + (f" seed={seed}" if len(self.seeds) > 1 else "")

    def cells(self) -> list[tuple[str, str, str, float, int]]:
        """(model, prompt, rung, temperature, seed) of every cell, in the spec's order."""
        return list(itertools.product(self.models, self.prompts, self.rungs, self.temperatures, self.seeds))

    def episodes(self) -> list[Episode]:
        """Every episode: cell by cell, trial by trial, case by case (as `trials` orders them)."""
        return [
            Episode(
                model,
                prompt,
                rung,
                temperature,
                seed,
                case,
                trial,
                self.label(model, prompt, rung, temperature, seed),
                self.max_tokens,
                self.budget_tokens,
            )
            for model, prompt, rung, temperature, seed in self.cells()
            for trial in range(self.k)
            for case in self.cases
        ]


def _read(path: Path) -> Any:
    if path.suffix == ".toml":
        try:
            return tomllib.loads(read_text(path, "grid spec"))
        except tomllib.TOMLDecodeError as error:
            raise FixtureError(f"{path}: not valid TOML ({error})") from None
    if path.suffix == ".json":
        return read_json(path, "grid spec")
    raise FixtureError(f"{path}: a grid spec is a .toml or .json file")


def _not_finite(data: dict[str, Any]) -> str | None:
    """The field of the first NaN or infinite number in `data` (TOML writes them `nan`, `inf`), or None."""
    for name, value in data.items():
        for index, item in enumerate(value) if isinstance(value, list) else [(None, value)]:
            if isinstance(item, float) and not math.isfinite(item):
                return name if index is None else f"{name}[{index}]"
    return None


def _size(data: dict[str, Any]) -> int:
    """How many episodes the (schema-checked) axes expand to, counted without building any."""
    cases = data.get("cases", "all")
    counts = [len(data["models"]), len(data.get("prompts", [0])), len(data.get("rungs", [0])),
              len(data.get("temperatures", [0])), len(data.get("seeds", [0])), data.get("k", 1),
              len(cases_of(cases)) if isinstance(cases, str) else len(cases)]
    return math.prod(counts)


def _check(path: Path, data: Any, axes: dict[str, Any] = AXES) -> None:
    if not isinstance(data, dict):
        raise FixtureError(f"{path}: a grid spec is an object of axes ({', '.join(axes)})")
    unknown = [name for name in data if name not in axes]
    if unknown:
        raise FixtureError(f"{path}: unknown axis {unknown[0]!r} (known: {', '.join(axes)})")
    field = _not_finite(data)
    if field is not None:  # NaN passes every JSON Schema bound (no comparison with it is true)
        raise FixtureError(f"{path}: field {field!r}: not a finite number")
    schema = SCHEMA if axes is AXES else {"type": "object", "properties": axes, "required": ["models"]}
    error = schema_error(schema, data)
    if error is not None:
        field = "".join(
            f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p)
            for i, p in enumerate(error.absolute_path)
        )
        if error.validator == "required":
            field = error.message.split("'")[1]
        where = f"field {field!r}: " if field else ""
        raise FixtureError(f"{path}: {where}{_plain(error)}")
    # JSON Schema counts 1.0 as an integer; a count or a seed written 1.0 is refused instead.
    for name in ("k", "max_tokens", "budget_tokens", "seeds"):
        values = data.get(name, [])
        for value in values if isinstance(values, list) else [values]:
            if type(value) is not int:
                raise FixtureError(f"{path}: field {name!r}: {value!r} is not an integer")
    total = _size(data) if axes is AXES else 0  # labs 03-04 are counted as built (`_count`)
    if total > MAX_EPISODES:  # counted from the axes' lengths: nothing is built for a grid too large
        raise FixtureError(f"{path}: {total:,} episodes; a grid holds at most {MAX_EPISODES:,} (split it)")


def _plain(error: Any) -> str:
    """jsonschema's message, except for `cases`, whose oneOf message would list the schemas."""
    if error.absolute_path and error.absolute_path[0] == "cases" and error.validator == "oneOf":
        sets = "model" if error.schema["oneOf"][0].get("const") == "model" else ", ".join(CASE_SETS)
        return f"must be one of {sets} or a list of case ids, got {error.instance!r}"
    return shorten(error.message, 200)


def load_spec(path: str | Path) -> Any:
    """Read and validate a grid spec (see the module docstring); one FixtureError line if it is wrong.

    A case set is expanded here to its case ids, in lab 01's order. A spec naming lab
    ``refunds`` or ``routing`` is a `labs.RefundGrid` or `labs.RoutingGrid` (see
    `labkit.course.grid.labs`); without `lab`, or with ``lab = "docuctl"``, a Grid.
    """
    path = Path(path)
    data = _read(path)
    lab = data.get("lab", LAB) if isinstance(data, dict) else LAB
    if lab not in GRID_LABS:
        raise FixtureError(f"{path}: field 'lab': must be one of {', '.join(GRID_LABS)}, got {lab!r}")
    if lab != LAB:
        from labkit.course.grid import labs

        _check(path, data, labs.refund_axes(AXES) if lab == "refunds" else labs.routing_axes(AXES))
        models = _models(path, data)
        names = tuple(backend_name(model) for model in models)
        grid = (labs.refund_grid if lab == "refunds" else labs.routing_grid)(path, data, models, names)
        _count(path, len(grid.episodes()))
        return grid
    _check(path, data)
    models = _models(path, data)
    cases = _cases(path, data.get("cases", "all"))
    grid = Grid(
        path=str(path),
        models=models,
        prompts=tuple(data.get("prompts", ("base",))),
        rungs=tuple(data.get("rungs", ("L1",))),
        temperatures=tuple(float(t) for t in data.get("temperatures", (0.0,))),
        seeds=tuple(data.get("seeds", (0,))),
        k=data.get("k", 1),
        cases=cases,
        max_tokens=data.get("max_tokens", MAX_TOKENS),
        budget_tokens=data.get("budget_tokens"),
    )
    _count(path, len(grid.cells()) * grid.k * len(grid.cases))
    return grid


def _count(path: Path, total: int) -> None:
    if total > MAX_EPISODES:
        raise FixtureError(f"{path}: {total:,} episodes; a grid holds at most {MAX_EPISODES:,} (split it)")


def _models(path: Path, data: dict[str, Any]) -> tuple[str, ...]:
    models = tuple(data["models"])
    for index, model in enumerate(models):
        try:
            backend_name(model)
        except LabError as error:
            raise FixtureError(f"{path}: field 'models[{index}]': {error}") from None
        if model.startswith("replay:") and not Path(model.partition(":")[2]).is_file():
            raise FixtureError(
                f"{path}: field 'models[{index}]': {model.partition(':')[2]}: trials file not found"
            )
    names = [backend_name(model) for model in models]
    for index, name in enumerate(names):
        if names.index(name) != index:
            raise FixtureError(
                f"{path}: field 'models[{index}]': {models[index]!r} and "
                f"{models[names.index(name)]!r} are both {name!r}: their runs would share "
                "labels (run one grid per recording)"
            )
    return models


def _cases(path: Path, chosen: str | list[str]) -> tuple[str, ...]:
    if isinstance(chosen, str):
        return tuple(case["id"] for case in cases_of(chosen))
    known = [case["id"] for case in cases_of("all")]
    for index, case in enumerate(chosen):
        if case not in known:
            raise FixtureError(f"{path}: field 'cases[{index}]': no {LAB} case {case!r}")
    return tuple(chosen)
