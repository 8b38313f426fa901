"""A fixture folder is untrusted data: one FixtureError naming the file, the record and the field."""

import json
import shutil

import pytest

from labkit.baseline import load_corpus
from labkit.baseline.corpus import DOCUCTL
from labkit.core import FixtureError


@pytest.fixture
def corpus_dir(tmp_path):
    folder = tmp_path / "corpus"
    shutil.copytree(DOCUCTL, folder)
    return folder


def test_the_course_corpus_loads_and_adaptive_cases_are_optional(corpus_dir):
    corpus = load_corpus(corpus_dir)
    assert (len(corpus.docs.pages), len(corpus.cases), len(corpus.adaptive_cases)) == (21, 18, 6)
    (corpus_dir / "adaptive_cases.json").unlink()
    assert load_corpus(corpus_dir).adaptive_cases == []


@pytest.mark.parametrize(
    "file, fields, message",
    [
        (
            "cases.json",
            {"version": "v9"},
            "record 0 (id 'deploy-build'): field 'version': 'v9' is not one of",
        ),
        ("documents.json", {"id": "rollback-v1"}, "record 1: field 'id': duplicate id 'rollback-v1'"),
        (
            "cases.json",
            {"expected_doc": "deploy-v1"},
            "field 'expected_doc': no page 'deploy-v1' in version v2",
        ),
        ("cases.json", {"expected_command": "x"}, "field 'expected_command': page 'deploy-v2' says"),
        ("adaptive_cases.json", {"observation": "luck"}, "(id 'typo-rollback'): field 'observation'"),
        (
            "adaptive_cases.json",
            {"id": "deploy-build"},
            "case ids used in an earlier case file: ['deploy-build']",
        ),
    ],
)
def test_a_bad_record_is_refused_naming_file_record_and_field(corpus_dir, file, fields, message):
    records = json.loads((corpus_dir / file).read_text())
    records[0].update(fields)
    (corpus_dir / file).write_text(json.dumps(records))
    with pytest.raises(FixtureError) as caught:
        load_corpus(corpus_dir)
    assert str(caught.value).startswith(f"{corpus_dir / file}: ") and message in str(caught.value)
