"""JSON files from the disk or the room are untrusted data, parsed strictly and validated by schema: a
violation is one FixtureError naming the file, the record and the field (so nothing downstream of a
loader guards against a missing key or a value Python cannot hold)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastjsonschema

from labkit.core.errors import FixtureError

if TYPE_CHECKING:
    import jsonschema

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _where(data: Any, error: jsonschema.ValidationError) -> str:
    """Where in a list of records `error` is: "record 0 (id 'x'): field 'f': "."""
    if not (path := list(error.absolute_path)):
        return ""
    head, rest = path[0], path[1:]
    where = f"key {head!r}"
    if isinstance(head, int):
        record = data[head]
        where = f"record {head}" + (
            f" (id {record['id']!r})" if isinstance(record, dict) and "id" in record else ""
        )
    if rest:
        where += f": field {'.'.join(map(str, rest))!r}"
    elif error.validator == "required":
        where += ": field " + repr(error.message.split("'")[1])
    return where + ": "


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:20]} is too large for a float")
    return value


def parse_json(text: str) -> Any:
    """`json.loads(text)`, refusing in one line (ValueError) a syntax error ("line L, column C:
    ..."), NaN, the infinities (1e400 too), an int of more than 4,300 digits, too deep a nesting."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as error:
        raise ValueError(f"line {error.lineno}, column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as error:  # the int digit limit, or one of the refusals above
        raise ValueError(str(error).split(";")[0]) from None


def read_text(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of `path`, or one FixtureError: ``<path>: <what> not found`` if there is
    no such file, ``<path>: cannot read (<why>)`` if it cannot be read or is not UTF-8."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FixtureError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FixtureError(f"{path}: cannot read ({error})") from None


def read_json(path: str | Path, what: str = "file") -> Any:
    """`parse_json` of `read_text(path, what)`; ``<path>: not valid JSON (<why>)`` if it is not."""
    text = read_text(path, what)  # outside the try: FixtureError is a ValueError
    try:
        return parse_json(text)
    except ValueError as error:
        raise FixtureError(f"{path}: not valid JSON ({error})") from None


# fastjsonschema's compiled validators, by the id of the schema they were compiled from (held here, so
# no other schema takes that id); a schema is never changed after its first use.
_COMPILED: dict[int, tuple[dict[str, Any], Any]] = {}


def schema_error(schema: dict[str, Any], data: Any) -> jsonschema.ValidationError | None:
    """jsonschema's `best_match` error in `data` for `schema` (None if valid); RecursionError if too deep.

    Valid data is recognised by fastjsonschema's compiled validator, about fifty times faster and never
    laxer for the keywords labkit's schemas use (tests/core/test_fixtures.py holds the two to that on
    mutated records); only data it refuses is judged again by jsonschema, the authority, which names the
    field. So jsonschema, whose import builds an RFC 3987 parser where jupyter-events installed it
    (about 1.5 s), is imported in a learner's kernel only when a file may be wrong."""
    if id(schema) not in _COMPILED:
        _COMPILED[id(schema)] = schema, fastjsonschema.compile(schema)
    try:
        _COMPILED[id(schema)][1](data)
    except fastjsonschema.JsonSchemaException:
        import jsonschema

        return jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    return None


def load_json(path: str | Path, schema: dict[str, Any]) -> Any:
    """Read `path` and validate it against `schema`; raise one FixtureError if either fails."""
    data = read_json(path)
    try:
        error = schema_error(schema, data)
    except RecursionError:  # parsed, but too deep for the validator's own recursion
        raise FixtureError(f"{path}: nested too deeply to validate") from None
    if error is not None:
        raise FixtureError(f"{path}: {_where(data, error)}{error.message}")
    return data


def unique_ids(path: str | Path, records: list[dict[str, Any]]) -> None:
    """Refuse a list of records in which two share an id."""
    ids = [record["id"] for record in records]
    for index, id in enumerate(ids):
        if id in ids[:index]:
            raise FixtureError(f"{path}: record {index}: field 'id': duplicate id {id!r}")
