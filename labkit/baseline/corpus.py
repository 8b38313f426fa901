"""A lab-01 fixture folder (documents, glossary, cases; adaptive and rewrite cases optional), loaded
as untrusted data: each file's schema, unique ids, and every case's page and command in its corpus
are checked, and the first problem is one FixtureError naming file, record and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from labkit.baseline.documents import Documents
from labkit.baseline.task import VERSIONS
from labkit.core.errors import FixtureError
from labkit.core.fixtures import FIXTURES, load_json, record_list, unique_ids

DOCUCTL = FIXTURES / "docuctl"

# The schemas of lab 01's fixture files.
_SHORT = {"type": "string", "minLength": 1, "maxLength": 100}
_TEXT = {"type": "string", "minLength": 1, "maxLength": 2000}
_VERSION = {"enum": list(VERSIONS)}
_DOCUMENTS = record_list(
    {"id": _SHORT, "version": _VERSION, "title": _SHORT, "text": _TEXT, "command": _TEXT}, min_items=1
)
_GLOSSARY = {
    "type": "object",
    "additionalProperties": {"type": "string", "pattern": "^[a-z0-9]+$"},
    "propertyNames": {"pattern": "^[a-z0-9]+$"},
}
_CASE_FIELDS = {
    "id": _SHORT,
    "family": _SHORT,
    "question": {"type": "string", "minLength": 1, "maxLength": 500},
    "version": _VERSION,
    "expected_doc": _SHORT,
    "expected_command": _TEXT,
}
_CASES = record_list(_CASE_FIELDS, min_items=1)  # no cases would score 0 of 0: refused instead
# Adaptive cases also say which observation should change the next action, and why.
ADAPTIVE_CASES = record_list(
    {**_CASE_FIELDS, "observation": {"enum": ["empty_search", "conflicting_page"]}, "why": _TEXT}, min_items=1
)


@dataclass(frozen=True)
class Corpus:
    """Validated contents of one fixture folder."""

    folder: Path
    docs: Documents
    cases: list[dict[str, Any]]
    adaptive_cases: list[dict[str, Any]] = field(default_factory=list)
    rewrite_cases: list[dict[str, Any]] = field(default_factory=list)


def case_problem(case: dict[str, Any], docs: Documents) -> str | None:
    """Why `case` contradicts its corpus (no expected page in its version, or another command), or None."""
    try:
        page = docs.read(case["expected_doc"], case["version"])
    except ValueError:
        return f"field 'expected_doc': no page {case['expected_doc']!r} in version {case['version']}"
    if page["command"] != case["expected_command"]:
        said = f"page {page['id']!r} says {page['command']!r}"
        return f"field 'expected_command': {said}, not {case['expected_command']!r}"
    return None


def load_corpus(folder: str | Path = DOCUCTL) -> Corpus:
    """Load and validate a fixture folder; raise FixtureError naming the first problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FixtureError(f"{folder}: not a folder")
    pages = load_json(folder / "documents.json", _DOCUMENTS)
    unique_ids(folder / "documents.json", pages)
    docs = Documents(pages, load_json(folder / "glossary.json", _GLOSSARY))
    case_files: list[list[dict[str, Any]]] = []
    for name, schema in (
        ("cases.json", _CASES),
        ("adaptive_cases.json", ADAPTIVE_CASES),
        ("rewrite_cases.json", _CASES),
    ):
        path, earlier = folder / name, {case["id"] for cases in case_files for case in cases}
        cases = load_json(path, schema) if name == "cases.json" or path.exists() else []
        unique_ids(path, cases)
        for index, case in enumerate(cases):
            if problem := case_problem(case, docs):
                raise FixtureError(f"{path}: record {index} (id {case['id']!r}): {problem}")
        if clash := earlier & {case["id"] for case in cases}:
            raise FixtureError(f"{path}: case ids used in an earlier case file: {sorted(clash)}")
        case_files.append(cases)
    return Corpus(folder, docs, *case_files)


@lru_cache(maxsize=1)
def docuctl() -> Corpus:
    """The course's own docuctl corpus, loaded once per process."""
    return load_corpus(DOCUCTL)
