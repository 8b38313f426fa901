"""A lab-01 fixture folder (documents, glossary, cases; adaptive and rewrite cases optional) as untrusted
data: schemas, unique ids, each case's page and command checked; the first problem is one FixtureError."""

from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from labkit.baseline.documents import Documents
from labkit.core.errors import FixtureError
from labkit.core.fixtures import FIXTURES, load_json, read_json, unique_ids

DOCUCTL = FIXTURES / "docuctl"


@cache
def fixture_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a lab 01/02 fixture (`name`: a `$defs` key of fixtures/docuctl/schemas.json)."""
    defs = read_json(DOCUCTL / "schemas.json", "schema file")["$defs"]
    return {"$defs": defs, "$ref": f"#/$defs/{name}"}


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
    pages = load_json(folder / "documents.json", fixture_schema("documents.json"))
    unique_ids(folder / "documents.json", pages)
    docs = Documents(pages, load_json(folder / "glossary.json", fixture_schema("glossary.json")))
    case_files: list[list[dict[str, Any]]] = []
    for name in ("cases.json", "adaptive_cases.json", "rewrite_cases.json"):
        path, earlier = folder / name, {case["id"] for cases in case_files for case in cases}
        cases = load_json(path, fixture_schema(name)) if name == "cases.json" or path.exists() else []
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
