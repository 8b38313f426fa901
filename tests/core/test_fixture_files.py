"""A file from the disk is untrusted data (labkit.core.fixtures): read, parsed and validated with one
line per problem; and a file labkit writes is replaced whole (labkit.core.paths)."""

import copy
import json
import random

import fastjsonschema
import jsonschema
import pytest

from labkit.baseline.corpus import DOCUCTL, fixture_schema
from labkit.core import questions as declared
from labkit.core.errors import FixtureError
from labkit.core.fixtures import read_json, read_text, schema_error
from labkit.course.grid.labs import GRID_LABS
from labkit.course.grid.spec import _schema as grid_schema
from labkit.course.grid.spec import load_spec
from labkit.model import record
from labkit.model.replay import TRIALS
from labkit.refunds.attacks import schema_problem
from labkit.refunds.shop import REFUNDS, SCHEMAS
from labkit.routing import checks as routing

# -- read_text, read_json -------------------------------------------------------------------------


def test_read_text_returns_the_files_text(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("é\n", encoding="utf-8")
    assert read_text(path) == "é\n"


@pytest.mark.parametrize(
    ("read", "what", "message"),
    [(read_text, (), "file not found"), (read_text, ("trials file",), "trials file not found")]
    + [(read_json, ("grid spec",), "grid spec not found")],
)
def test_what_was_not_found_is_named(tmp_path, read, what, message):
    with pytest.raises(FixtureError) as caught:
        read(tmp_path / "nowhere.jsonl", *what)
    assert str(caught.value) == f"{tmp_path / 'nowhere.jsonl'}: {message}"


def test_read_text_refuses_a_file_that_is_not_utf8_in_one_line(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(FixtureError) as caught:
        read_text(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot read (") and "utf-8" in message and "\n" not in message


def test_read_text_refuses_a_folder(tmp_path):
    with pytest.raises(FixtureError, match=r": cannot read \("):
        read_text(tmp_path)


def test_read_json_parses_and_refuses_what_parse_json_refuses(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('{"a": [1, 2.5]}')
    bad.write_text('{"a": NaN}')
    assert read_json(good) == {"a": [1, 2.5]}
    with pytest.raises(FixtureError) as caught:
        read_json(bad)
    assert str(caught.value) == f"{bad}: not valid JSON (NaN is not a number JSON allows)"


# -- schema_error -----------------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_schema_error_is_none_for_valid_data_else_the_best_match_with_its_path():
    assert schema_error(SCHEMA, {"n": 3}) is None
    error = schema_error(SCHEMA, {"n": "three"})
    assert (list(error.absolute_path), error.message) == (["n"], "'three' is not of type 'integer'")
    assert schema_error(SCHEMA, {}).message == "'n' is a required property"


def test_schema_error_lets_recursion_error_through():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        schema_error({"items": {"$ref": "#"}}, deep)


def _shipped():
    """(name, schema, data): every shipped file with a schema, and one trial record of each kind."""
    trials = [json.loads(line) for line in sorted(TRIALS.glob("*.jsonl"))[0].read_text("utf-8").splitlines()]
    docuctl = dict.fromkeys(["documents", "glossary", "cases", "adaptive_cases", "rewrite_cases"], "{}.json")
    docuctl |= {"exercises/lab01": "lab01_exercises", "exercises/lab02": "lab02_contracts"}
    return [
        *((f"refunds/{key}", schema, read_json(REFUNDS / f"{key}.json")) for key, schema in SCHEMAS.items()),
        *(
            (path, fixture_schema(name.format(path)), read_json(DOCUCTL / f"{path}.json"))
            for path, name in docuctl.items()
        ),
        ("routing/checks", routing._SCHEMA, read_json(routing._CASES_FILE)),
        ("questions", declared._SCHEMA, read_json(declared.QUESTIONS)),
        *((f"grid/{lab}", schema := grid_schema(lab), _spec(lab, schema["properties"])) for lab in GRID_LABS),
        *(
            (kind, schema, next(r for r in trials if r["kind"] == kind))
            for kind, schema in record._SCHEMAS.items()
        ),
    ]


def _spec(lab, axes):
    """A grid spec for `lab` of one model and every axis that has a default, at its default."""
    return {name: axis["default"] for name, axis in axes.items() if "default" in axis} | {
        "lab": lab,
        "models": ["local"],
    }


# A value of each JSON type, on the boundaries the schemas draw (empty, blank, long, past 2**53, negative).
ODD = [None, True, 0, -1, 1.5, 2**53 + 1, "", " ", "x" * 5000, "Z-9", [], [1], {}, {"a": 1}]


def _mutated(data, rng):
    """A copy of `data` with one node replaced by an ODD value, or one key of a mapping dropped or added."""
    holder = {"root": copy.deepcopy(data)}  # so that replacing the whole value is one more node
    parent, key, node = holder, "root", holder["root"]
    while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
        key = rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
        parent, node = node, node[key]
    move = rng.randrange(3)
    if move == 0 and isinstance(node, dict) and node:
        del node[rng.choice(list(node))]
    elif move == 1 and isinstance(node, dict):
        node["unexpected"] = rng.choice(ODD)
    else:
        parent[key] = rng.choice(ODD)
    return holder["root"]


@pytest.mark.parametrize(
    "name, schema, data", _shipped(), ids=lambda value: value if isinstance(value, str) else ""
)
def test_fastjsonschema_never_accepts_what_jsonschema_refuses_on_a_shipped_file_mutated(name, schema, data):
    # schema_error returns None as soon as fastjsonschema accepts: right only if it is never the laxer.
    fast, authority = fastjsonschema.compile(copy.deepcopy(schema)), jsonschema.Draft202012Validator(schema)
    assert schema_error(schema, data) is None
    rng, refused = random.Random(name), 0
    for _ in range(150):
        try:
            fast(mutated := _mutated(data, rng))
        except fastjsonschema.JsonSchemaException:
            refused += 1
        else:
            assert authority.is_valid(mutated), json.dumps(mutated)[:300]
    assert refused >= 30  # the mutations cross the schema's rules, not only its free text


def test_an_attack_records_schema_problem_names_the_field():
    assert schema_problem("not a record") == "field 'record': 'not a record' is not of type 'object'"
    gold = [{"order": "o", "amount": "1", "destination": "d"}]
    record = {"id": "a", "template": "t", "goal": "g", "check": {"kind": "nope"}, "gold": gold}
    problem = schema_problem(record | {"places": ["message"]})
    assert problem.startswith("field 'check.kind': 'nope' is not one of [")


def test_a_grid_spec_of_another_kind_is_refused_before_it_is_read(tmp_path):
    with pytest.raises(FixtureError, match=r"spec.yaml: a grid spec is a .toml or .json file$"):
        load_spec(tmp_path / "spec.yaml")


def test_write_whole_replaces_in_one_rename_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    import os

    from labkit.core.paths import write_whole

    target = tmp_path / "deep" / "lab02.json"
    write_whole(target, "old")
    assert write_whole(target, "new", mode=0o644) == target and target.read_text() == "new"
    assert oct(target.stat().st_mode & 0o777) == "0o644"

    def refused(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refused)
    with pytest.raises(OSError, match="disk full"):
        write_whole(target, "half")
    assert target.read_text() == "new" and sorted(p.name for p in target.parent.iterdir()) == ["lab02.json"]
