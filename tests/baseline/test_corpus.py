"""A fixture folder is untrusted data: one FixtureError naming the file, the record and the field."""

import json
import shutil

import pytest

from labkit import FixtureError, load_corpus
from labkit.baseline.corpus import DOCUCTL


@pytest.fixture
def corpus_dir(tmp_path):
    folder = tmp_path / "corpus"
    shutil.copytree(DOCUCTL, folder)
    return folder


def rewrite(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_the_course_corpus_loads_and_adaptive_cases_are_optional(corpus_dir):
    corpus = load_corpus(corpus_dir)
    assert (len(corpus.docs.pages), len(corpus.cases), len(corpus.adaptive_cases)) == (21, 18, 6)
    (corpus_dir / "adaptive_cases.json").unlink()
    assert load_corpus(corpus_dir).adaptive_cases == []


@pytest.mark.parametrize(
    "file, change, message",
    [
        (
            "cases.json",
            lambda cases: cases[3].pop("version"),
            "record 3 (id 'tokens-rotate'): field 'version': 'version' is a required property",
        ),
        (
            "cases.json",
            lambda cases: cases[0].update(version="v9"),
            "record 0 (id 'deploy-build'): field 'version': 'v9' is not one of ['v1', 'v2']",
        ),
        (
            "documents.json",
            lambda pages: pages.append(dict(pages[0])),
            "record 21: field 'id': duplicate id 'deploy-v1'",
        ),
        (
            "cases.json",
            lambda cases: cases[0].update(expected_doc="deploy-v1"),
            "record 0 (id 'deploy-build'): field 'expected_doc': no page 'deploy-v1' in version v2",
        ),
        (
            "cases.json",
            lambda cases: cases[0].update(expected_command="docuctl ship"),
            "record 0 (id 'deploy-build'): field 'expected_command': page 'deploy-v2' says "
            "'docuctl ship --env staging', not 'docuctl ship'",
        ),
        (
            "adaptive_cases.json",
            lambda cases: cases[0].update(observation="luck"),
            "record 0 (id 'typo-rollback'): field 'observation': 'luck' is not one of",
        ),
        (
            "adaptive_cases.json",
            lambda cases: cases[0].update(id="deploy-build"),
            "case ids used in an earlier case file: ['deploy-build']",
        ),
    ],
)
def test_a_bad_record_is_refused_naming_file_record_and_field(corpus_dir, file, change, message):
    rewrite(corpus_dir / file, change)
    with pytest.raises(FixtureError) as caught:
        load_corpus(corpus_dir)
    assert str(caught.value).startswith(f"{corpus_dir / file}: {message}")
