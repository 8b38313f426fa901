"""A trial grid as data: the axes of a model study, from a TOML or JSON file (fixtures/grids/) that
spec.schema.json describes. Every combination of the lab's cell axes is a cell (one run label), which
runs k trials of every value of its inner axis (its cases or variants); `load_spec` refuses a bad file in
one line. What differs between labs, each lab's class of `labs.GRID_LABS` says.
(serves: untrusted file — a grid spec)"""

import itertools
import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.core.errors import FixtureError, LabError
from labkit.core.fixtures import read_json, read_text, schema_error
from labkit.core.text import shorten
from labkit.course.argtypes import SEED_MAX
from labkit.course.grid.labs import DEFAULT_LAB, GRID_LABS, grid_lab
from labkit.decision_loop.trials import MAX_TRIALS
from labkit.model.factory import backend_name
from labkit.model.policy import MAX_TOKENS
from labkit.model.record import existing_trials

MAX_EPISODES = 100_000  # a week of model time at 6 s each: more likely a mistyped axis than a study


@dataclass(frozen=True)
class GridEpisode:
    """One episode: it runs with `trial_seed` (`seed`: its cell's); `case` and `prompt`: its records' (the
    prompt is docuctl's system prompt, refunds' defense, routing's "reviser"); `options`: a lab's own
    settings (refunds: case, defense; routing: control, variant)."""

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

    @property
    def trial_seed(self) -> int:
        """The seed this trial runs with: its cell's seed plus the trial's number."""
        return self.seed + self.trial

    def key(self) -> tuple[Any, ...]:
        """What identifies the episode in a recording (see `record_key`)."""
        head = (self.lab, backend_name(self.model), self.prompt, self.rung, float(self.temperature))
        return (*head, self.trial_seed, self.case, self.trial)


def record_key(record: dict[str, Any]) -> tuple[Any, ...]:
    """The key of an episode record, as `labkit trials` and the grid write them, of any grid lab (an old
    recording without `lab` or `rung` is lab 02's at L1, as it was made before either was recorded)."""
    head = (record.get("lab", DEFAULT_LAB), record["backend"], record["prompt"], record.get("rung", "L1"))
    return (*head, float(record["temperature"]), record["seed"], record["case"], record["trial"])


@dataclass(frozen=True)
class Grid:
    """A validated grid: its file, its lab, how many cells, and every episode in order."""

    path: str
    lab: str
    cells: int
    episodes: tuple[GridEpisode, ...]


def _schema(lab: str) -> dict[str, Any]:
    """spec.schema.json for a `lab` grid, with the enums and bounds the course and the lab define."""
    schema = json.loads(Path(__file__).with_name("spec.schema.json").read_text(encoding="utf-8"))
    axes = schema["axes"] | schema[lab]
    axes["lab"]["enum"] = list(GRID_LABS)
    axes["seeds"]["items"]["maximum"] = SEED_MAX - MAX_TRIALS
    axes["k"]["maximum"] = MAX_TRIALS
    grid_lab(lab).fill_schema(axes)
    return {
        "type": "object",
        "properties": axes,
        "required": ["models"],
        "additionalProperties": False,
        "$defs": schema["$defs"],
    }


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
            named = error.validator_value[0]  # the case sets, an enum (or one name, a const)
            sets = ", ".join(named["enum"] if "enum" in named else [named["const"]])
            message = f"must be one of {sets} or a list of case ids, got {error.instance!r}"
        raise FixtureError(f"{path}: " + (f"field {field!r}: " if field else "") + message)
    # NaN passes every JSON Schema bound (no comparison with it is true), and JSON Schema counts 2.0 as
    # an integer: a user's `k = 1.0` would run as if it were right (serves: user).
    for name, value in data.items():
        declared = schema["properties"][name]
        whole = "integer" in (declared.get("type"), declared.get("items", {}).get("type"))
        for index, item in enumerate(value) if isinstance(value, list) else [(None, value)]:
            field = name if index is None else f"{name}[{index}]"
            if isinstance(item, float) and not math.isfinite(item):
                raise FixtureError(f"{path}: field {field!r}: not a finite number")
            if isinstance(item, float) and whole:
                whole_number = f"must be a whole number written without a decimal point, got {item!r}"
                raise FixtureError(f"{path}: field {field!r}: {whole_number}")


def _check_models(path: Path, models: list[str]) -> None:
    names: dict[str, str] = {}
    for index, model in enumerate(models):
        try:
            name = backend_name(model)
            if model.startswith("replay:"):
                existing_trials(model.partition(":")[2])
        except LabError as error:
            raise FixtureError(f"{path}: field 'models[{index}]': {error}") from None
        if name in names:
            also = f"{model!r} and {names[name]!r} are both {name!r}"
            raise FixtureError(f"{path}: field 'models[{index}]': {also}: their runs would share labels")
        names[name] = model


def _episode(lab: str, cell: dict[str, Any], inner: str, trial: int, values: dict[str, Any]) -> GridEpisode:
    """Trial `trial` of the episode of `inner` (a value of the lab's inner axis) in `cell`: the model,
    temperature, seed and trial every lab has, and what the lab's `cell_episode` adds."""
    cell = cell | {"temperatures": float(cell["temperatures"]), "seeds": int(cell["seeds"])}
    seed_tag = f" seed={cell['seeds']}" if len(values["seeds"]) > 1 else ""  # seeds tell the cells apart
    own = grid_lab(lab).cell_episode(
        cell, inner, values, backend=backend_name(cell["models"]), seed_tag=seed_tag
    )
    return GridEpisode(
        lab=lab,
        model=cell["models"],
        temperature=cell["temperatures"],
        seed=cell["seeds"],
        trial=trial,
        **own,
    )


def load_spec(path: str | Path) -> Grid:
    """Read and validate a grid spec (see the module docstring); one FixtureError line if it is wrong."""
    path = Path(path)
    data = _read(path)
    lab = data.get("lab", DEFAULT_LAB) if isinstance(data, dict) else DEFAULT_LAB
    if lab not in GRID_LABS:
        raise FixtureError(f"{path}: field 'lab': must be one of {', '.join(GRID_LABS)}, got {lab!r}")
    schema = _schema(lab)
    _check(path, data, schema)
    _check_models(path, data["models"])
    values = {
        name: axis["default"] for name, axis in schema["properties"].items() if "default" in axis
    } | data
    grid_class = grid_lab(lab)
    axes, inner = grid_class.CELL_AXES, grid_class.INNER_AXIS  # the cell axes, in order
    values[inner] = grid_class.inner_values(path, values[inner])
    cells = math.prod(len(values[axis]) for axis in axes)
    total = cells * values["k"] * len(values[inner])
    if total > MAX_EPISODES:  # counted from the axes: nothing is built for a grid too large
        raise FixtureError(f"{path}: {total:,} episodes; a grid holds at most {MAX_EPISODES:,} (split it)")
    episodes = [
        _episode(lab, dict(zip(axes, combination, strict=True)), value, trial, values)
        for combination in itertools.product(*(values[axis] for axis in axes))
        for trial in range(values["k"])
        for value in values[inner]
    ]
    return Grid(str(path), lab, cells, tuple(episodes))
