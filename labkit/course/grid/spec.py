"""A trial grid as data: the axes of a model study, from a TOML or JSON file (fixtures/grids/) that
spec.schema.json describes. Every combination of the cell axes is a cell (one run label), which runs
k trials of every case (routing: every variant); `load_spec` refuses a bad file in one line."""

from __future__ import annotations

import itertools
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from labkit.core.errors import FixtureError, LabError
from labkit.core.fixtures import read_json, read_text, schema_error
from labkit.core.text import shorten
from labkit.course.argtypes import SEED_MAX
from labkit.decision_loop.model_policy import PROMPTS
from labkit.decision_loop.trials import CASE_SETS, MAX_TOKENS_MAX, MAX_TRIALS, cases_of, default_label
from labkit.model.constraints import RUNGS
from labkit.model.factory import backend_name
from labkit.model.policy import MAX_TOKENS

MAX_EPISODES = 100_000  # a week of model time at 6 s each: more likely a mistyped axis than a study
# Per lab: the axes whose combinations are the cells, and the axis each cell runs k times over.
_CELL_AXES = {
    "docuctl": ("models", "prompts", "rungs", "temperatures", "seeds"),
    "refunds": ("models", "rungs", "temperatures", "seeds", "defenses"),
    "routing": ("models", "controls", "temperatures", "seeds"),
}
_INNER = {"docuctl": "cases", "refunds": "cases", "routing": "variants"}


@dataclass(frozen=True)
class GridEpisode:
    """One episode: it runs with `seed + trial` (`seed`: its cell's); `case`: its records' id; `options`: a
    lab's own settings (refunds: case, defense; routing: control, variant)."""

    lab: str
    model: str
    rung: str
    temperature: float
    seed: int
    case: str
    trial: int
    label: str
    prompt: str | None = None
    max_tokens: int = MAX_TOKENS
    budget_tokens: int | None = None
    options: tuple[tuple[str, str], ...] = ()

    def key(self) -> tuple[Any, ...]:
        """What identifies the episode in a recording (see `record_key`)."""
        head = (self.lab, backend_name(self.model), self.prompt, self.rung, float(self.temperature))
        return (*head, self.seed + self.trial, self.case, self.trial)


def record_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """The key of an episode record, as `labkit trials` and the grid write them, of any grid lab."""
    lab = record.get("lab", "docuctl")
    head = (lab, record["backend"], record["prompt"] if lab == "docuctl" else None, record.get("rung", "L1"))
    return (*head, float(record["temperature"]), record["seed"], record["case"], record["trial"])


@dataclass(frozen=True)
class Grid:
    """A validated grid: its file, its lab, how many cells, and every episode in order."""

    path: str
    lab: str
    cells: int
    episodes: tuple[GridEpisode, ...]


def _schema(lab: str) -> dict[str, Any]:
    """spec.schema.json for a `lab` grid, with the enums and bounds the course defines filled in."""
    schema = json.loads(Path(__file__).with_name("spec.schema.json").read_text(encoding="utf-8"))
    axes = schema["axes"] | schema[lab]
    axes["lab"]["enum"] = list(_CELL_AXES)
    axes["seeds"]["items"]["maximum"] = SEED_MAX - MAX_TRIALS
    axes["k"]["maximum"] = MAX_TRIALS
    if lab == "refunds":
        from labkit.refunds.defenses import DEFENSES
        from labkit.refunds.model_rows import MODEL_DEFENSES

        axes["defenses"] |= {"items": {"enum": list(DEFENSES)}, "default": list(MODEL_DEFENSES)}
    elif lab == "routing":
        from labkit.routing.model_reviser import GRID_CONTROLS, VARIANTS

        for name, values in (("controls", list(GRID_CONTROLS)), ("variants", list(VARIANTS.values()))):
            axes[name] |= {"items": {"enum": values}, "default": values}
    else:
        axes["prompts"]["items"]["enum"], axes["rungs"]["items"]["enum"] = list(PROMPTS), list(RUNGS)
        axes["cases"]["oneOf"][0]["enum"] = list(CASE_SETS)
        axes["max_tokens"]["maximum"] = MAX_TOKENS_MAX
    required = {"required": ["models"], "additionalProperties": False, "$defs": schema["$defs"]}
    return {"type": "object", "properties": axes} | required


def _read(path: Path) -> Any:
    if path.suffix == ".toml":
        try:
            return tomllib.loads(read_text(path, "grid spec"))
        except tomllib.TOMLDecodeError as error:
            raise FixtureError(f"{path}: not valid TOML ({error})") from None
    if path.suffix == ".json":
        return read_json(path, "grid spec")
    raise FixtureError(f"{path}: a grid spec is a .toml or .json file")


def _check(path: Path, data: Any, schema: dict[str, Any]) -> None:
    """FixtureError (one line naming the field) unless `data` fits `schema`."""
    if (error := schema_error(schema, data)) is not None:
        field = "".join(
            f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p)
            for i, p in enumerate(error.absolute_path)
        )
        message = shorten(error.message, 200)
        if field == "cases" and error.validator == "oneOf":  # jsonschema's message would list the schemas
            sets = "model" if data.get("lab") == "refunds" else ", ".join(CASE_SETS)
            message = f"must be one of {sets} or a list of case ids, got {error.instance!r}"
        raise FixtureError(f"{path}: " + (f"field {field!r}: " if field else "") + message)
    for name, value in data.items():  # NaN passes every JSON Schema bound (no comparison with it is true)
        for index, item in enumerate(value) if isinstance(value, list) else [(None, value)]:
            if isinstance(item, float) and not math.isfinite(item):
                field = name if index is None else f"{name}[{index}]"
                raise FixtureError(f"{path}: field {field!r}: not a finite number")


def _check_models(path: Path, models: list[str]) -> None:
    names: dict[str, str] = {}
    for index, model in enumerate(models):
        try:
            name = backend_name(model)
        except LabError as error:
            raise FixtureError(f"{path}: field 'models[{index}]': {error}") from None
        file = model.partition(":")[2]
        if model.startswith("replay:") and not Path(file).is_file():
            raise FixtureError(f"{path}: field 'models[{index}]': {file}: trials file not found")
        if name in names:
            also = f"{model!r} and {names[name]!r} are both {name!r}"
            raise FixtureError(f"{path}: field 'models[{index}]': {also}: their runs would share labels")
        names[name] = model


def _cases(path: Path, lab: str, chosen: str | list[str]) -> list[str]:
    """The grid's case ids, a case set expanded; FixtureError naming the field of an unknown id."""
    if lab == "refunds":
        from labkit.refunds.grid import grid_cases, spec_of

        if chosen == "model":
            return list(grid_cases())
        for index, case in enumerate(chosen):
            try:
                spec_of(case)
            except LabError as error:
                raise FixtureError(f"{path}: field 'cases[{index}]': {error}") from None
        return chosen
    if isinstance(chosen, str):
        return [case["id"] for case in cases_of(chosen)]
    known = {case["id"] for case in cases_of("all")}
    for index, case in enumerate(chosen):
        if case not in known:
            raise FixtureError(f"{path}: field 'cases[{index}]': no docuctl case {case!r}")
    return chosen


def _episode(lab: str, cell: dict[str, Any], inner: str, trial: int, values: dict[str, Any]) -> GridEpisode:
    model, temperature, seed = cell["models"], float(cell["temperatures"]), int(cell["seeds"])
    backend = backend_name(model)
    seeds = f" seed={seed}" if len(values["seeds"]) > 1 else ""
    common = {"lab": lab, "model": model, "temperature": temperature, "seed": seed, "trial": trial}
    if lab == "refunds":
        from labkit.refunds.grid import episode_case

        defense, rung = cell["defenses"], cell["rungs"]
        options = (("case", inner), ("defense", defense))
        label = f"{backend} refunds {rung} T={temperature:g}{seeds} {defense}"
        return GridEpisode(
            **common, rung=rung, case=episode_case(inner, defense), label=label, options=options
        )
    if lab == "routing":
        from labkit.routing.model_reviser import GRID_CONTROLS

        control = cell["controls"]
        rung, cut = GRID_CONTROLS[control]
        case = f"announcement+{inner}" + (f"+cut{cut}" if cut else "")
        label = f"{backend} routing {control} T={temperature:g}{seeds}"
        return GridEpisode(
            **common, rung=rung, case=case, label=label, options=(("control", control), ("variant", inner))
        )
    prompt, rung = cell["prompts"], cell["rungs"]
    label = default_label(SimpleNamespace(name=backend), prompt, temperature, rung) + seeds
    tokens = {
        "max_tokens": int(values.get("max_tokens", MAX_TOKENS)),
        "budget_tokens": values.get("budget_tokens"),
    }
    return GridEpisode(**common, rung=rung, case=inner, label=label, prompt=prompt, **tokens)


def load_spec(path: str | Path) -> Grid:
    """Read and validate a grid spec (see the module docstring); one FixtureError line if it is wrong."""
    path = Path(path)
    data = _read(path)
    lab = data.get("lab", "docuctl") if isinstance(data, dict) else "docuctl"
    if lab not in _CELL_AXES:
        raise FixtureError(f"{path}: field 'lab': must be one of {', '.join(_CELL_AXES)}, got {lab!r}")
    schema = _schema(lab)
    _check(path, data, schema)
    _check_models(path, data["models"])
    axes = schema["properties"]
    values = {name: axis["default"] for name, axis in axes.items() if "default" in axis} | data
    if "cases" in values:
        values["cases"] = _cases(path, lab, values["cases"])
    values["k"] = int(values["k"])  # JSON Schema counts 2.0 as an integer
    axes = _CELL_AXES[lab]  # the cell axes, in order
    cells = math.prod(len(values[axis]) for axis in axes)
    total = cells * values["k"] * len(values[_INNER[lab]])
    if total > MAX_EPISODES:  # counted from the axes: nothing is built for a grid too large
        raise FixtureError(f"{path}: {total:,} episodes; a grid holds at most {MAX_EPISODES:,} (split it)")
    episodes = [
        _episode(lab, dict(zip(axes, combination, strict=True)), inner, trial, values)
        for combination in itertools.product(*(values[axis] for axis in axes))
        for trial in range(values["k"])
        for inner in values[_INNER[lab]]
    ]
    return Grid(str(path), lab, cells, tuple(episodes))
