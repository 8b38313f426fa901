"""What a newcomer sees before running a cell: no committed output names a folder of the machine it
ran on, and lab 00's setup check shows the optional model backends as a fresh install shows them."""

import html
import json
import re
from pathlib import Path

import pytest

from labkit.course import setup_check

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(path for path in NOTEBOOKS.rglob("*.ipynb") if ".ipynb_checkpoints" not in path.parts)
# An absolute path (POSIX or Windows), a temporary folder or a virtual environment's insides.
FOLDER = re.compile(
    r"(?<![\w.:/])(/(work|home|Users|tmp|private|var|opt|root|mnt)/|[A-Za-z]:\\)|venv/(bin|lib)|site-packages"
)


def outputs(path: Path) -> list[tuple[int, str]]:
    """(cell index, the text of one output: stream, plain, HTML, markdown or traceback)."""
    found = []
    for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            parts = [out.get("text", ""), out.get("traceback", [])]
            parts += [data.get(kind, "") for kind in ("text/plain", "text/html", "text/markdown")]
            found.append((index, "".join("".join(p) if isinstance(p, list) else p for p in parts)))
    return found


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.relative_to(NOTEBOOKS).as_posix())
def test_no_committed_output_names_a_folder_of_the_machine(path):
    found = [(index, match.group()) for index, text in outputs(path) if (match := FOLDER.search(text))]
    assert not found, f"{path.name}: cell and folder {found}: hide it, or re-execute where it prints none"


def test_the_folder_pattern_catches_what_a_machine_prints():
    caught = ["/work/main/.venv/bin/python", "kernel: /home/ana/x", "C:\\Users\\ana", "/Users/bo/course"]
    caught += ["/tmp/labkit-solutions-x1", ".venv/lib/python3.11/site-packages/pandas"]
    kept = ["OPENAI_BASE_URL=http://HOST:8000/v1", "kernel: this checkout's .venv", "fixtures/trials/", "3/4"]
    assert all(FOLDER.search(text) for text in caught) and not any(FOLDER.search(text) for text in kept)


def test_lab_00_shows_the_optional_backends_as_a_fresh_install_does(monkeypatch):
    for variable in ("LABKIT_MODEL", "OLLAMA_HOST", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    rows = ("model: local (SmolLM2 in-process)", "model: ollama:<tag>", "room model server (openai:)")
    fresh = setup_check.report({row: setup_check._CHECKS[row] for row in rows})
    (table,) = [
        text for _, text in outputs(NOTEBOOKS / "00_start_here.ipynb") if ">fixtures load</th>" in text
    ]
    for row in rows:
        cells = re.search(
            rf"<th[^>]*>{re.escape(html.escape(row))}</th>\s*<td[^>]*>([^<]*)</td>\s*<td[^>]*>([^<]*)</td>", table
        )
        assert cells, row
        committed = tuple(html.unescape(cell) for cell in cells.groups())
        assert committed == tuple(fresh.loc[row, ["status", "found"]]), (
            f"{row}: re-execute lab 00 with it unset"
        )
