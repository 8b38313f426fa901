"""Fixture validation: one FixtureError naming the file, the record and the field."""

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


def error_for(folder):
    with pytest.raises(FixtureError) as caught:
        load_corpus(folder)
    return str(caught.value)


def test_the_course_corpus_loads(corpus_dir):
    corpus = load_corpus(corpus_dir)
    assert (len(corpus.docs.pages), len(corpus.cases), len(corpus.adaptive_cases)) == (21, 18, 6)


def test_missing_field_names_file_record_and_field(corpus_dir):
    rewrite(corpus_dir / "cases.json", lambda cases: cases[3].pop("version"))
    assert error_for(corpus_dir) == (
        f"{corpus_dir / 'cases.json'}: record 3 (id 'tokens-rotate'): field 'version': "
        "'version' is a required property"
    )


def test_bad_value_names_the_field(corpus_dir):
    rewrite(corpus_dir / "cases.json", lambda cases: cases[0].update(version="v9"))
    assert error_for(corpus_dir) == (
        f"{corpus_dir / 'cases.json'}: record 0 (id 'deploy-build'): field 'version': "
        "'v9' is not one of ['v1', 'v2']"
    )


def test_unknown_field_is_refused(corpus_dir):
    rewrite(corpus_dir / "documents.json", lambda pages: pages[1].update(owner="me"))
    message = error_for(corpus_dir)
    assert message.startswith(f"{corpus_dir / 'documents.json'}: record 1 (id 'rollback-v1'): ")
    assert "'owner' was unexpected" in message


def test_not_json_names_line_and_column(corpus_dir):
    (corpus_dir / "glossary.json").write_text('{"restore": "rollback",\n}')
    assert error_for(corpus_dir).startswith(
        f"{corpus_dir / 'glossary.json'}: not valid JSON (line 2, column 1"
    )


def test_missing_file(corpus_dir):
    (corpus_dir / "documents.json").unlink()
    assert error_for(corpus_dir) == f"{corpus_dir / 'documents.json'}: file not found"


def test_glossary_terms_must_be_single_words(corpus_dir):
    rewrite(corpus_dir / "glossary.json", lambda glossary: glossary.update(undo="roll back"))
    message = error_for(corpus_dir)
    assert message.startswith(f"{corpus_dir / 'glossary.json'}: key 'undo': 'roll back' does not match")


def test_duplicate_page_id(corpus_dir):
    rewrite(corpus_dir / "documents.json", lambda pages: pages.append(dict(pages[0])))
    assert error_for(corpus_dir) == (
        f"{corpus_dir / 'documents.json'}: record 21: field 'id': duplicate id 'deploy-v1'"
    )


def test_case_whose_expected_page_is_in_another_version(corpus_dir):
    rewrite(corpus_dir / "cases.json", lambda cases: cases[0].update(expected_doc="deploy-v1"))
    assert error_for(corpus_dir) == (
        f"{corpus_dir / 'cases.json'}: record 0 (id 'deploy-build'): field 'expected_doc': "
        "no page 'deploy-v1' in version v2"
    )


def test_case_whose_command_contradicts_its_page(corpus_dir):
    rewrite(corpus_dir / "cases.json", lambda cases: cases[0].update(expected_command="docuctl ship"))
    assert error_for(corpus_dir) == (
        f"{corpus_dir / 'cases.json'}: record 0 (id 'deploy-build'): field 'expected_command': "
        "page 'deploy-v2' says 'docuctl ship --env staging', not 'docuctl ship'"
    )


def test_adaptive_cases_are_optional(corpus_dir):
    (corpus_dir / "adaptive_cases.json").unlink()
    assert load_corpus(corpus_dir).adaptive_cases == []


def test_adaptive_case_needs_its_observation(corpus_dir):
    rewrite(corpus_dir / "adaptive_cases.json", lambda cases: cases[0].update(observation="luck"))
    assert "record 0 (id 'typo-rollback'): field 'observation': 'luck' is not one of" in error_for(corpus_dir)
