"""A file from the disk is untrusted data (labkit.core.fixtures): read, parsed and validated with one
line per problem; and a file labkit writes is replaced whole (labkit.core.paths)."""

import pytest

from labkit.core.errors import FixtureError
from labkit.core.fixtures import read_json, read_text, schema_error
from labkit.course.grid.spec import load_spec
from labkit.refunds.attacks import schema_problem

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
