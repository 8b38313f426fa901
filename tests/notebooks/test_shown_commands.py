"""Every `python -m labkit …` command the labs' markdown, INSTRUCTOR.md and the README show is one the
CLI accepts as written (placeholders such as FOLDER filled in), and the quick ones the labs tell a
learner to run end with status 0 on a fresh checkout: a command a learner copies never meets "unknown
option" or a traceback."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from labkit.course.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
COMMAND = re.compile(r"python -m labkit( [^`\n#]*)")
# What a placeholder stands for: a name, a folder (a USB stick's is the room's), a corpus folder.
FOLDER = "fixtures"
FILLED = {
    "YOUR_NAME": "ana",
    "FOLDER": FOLDER,
    "/media/USB": FOLDER,
    "/media/usb": FOLDER,
    "MY_CORPUS": "fixtures/docuctl",
}
# Run, not only parsed: offline (no --model), quick, and what a lab's markdown asks a learner to type.
RUN = {"compare", "routing", "trials"}


def markdown(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    return path.read_text(encoding="utf-8")


def shown() -> list[tuple[str, str]]:
    """(where, the command's arguments) for each command shown; a usage line with `[` or `|` is a
    synopsis (its options are alternatives), not a command to type."""
    places = [
        *sorted((REPO / "notebooks").glob("*.ipynb")),
        REPO / "notebooks" / "INSTRUCTOR.md",
        REPO / "README.md",
    ]
    found = []
    for path in places:
        for match in COMMAND.finditer(markdown(path)):
            arguments = match.group(1).strip()
            if "[" not in arguments and "|" not in arguments:
                found.append((path.name, " ".join(FILLED.get(word, word) for word in arguments.split())))
    return sorted(set(found))


def test_the_guides_show_commands():
    assert len(shown()) >= 15  # the collection itself works: the README alone shows more


@pytest.mark.parametrize(("where", "arguments"), shown())
def test_a_shown_command_is_accepted_as_written(where, arguments):
    argv = shlex.split(arguments)
    try:
        build_parser(argv[0]).parse_args(argv)
    except SystemExit as exit:
        assert exit.code == 0, f"{where} shows `python -m labkit {arguments}`, which the CLI refuses"


@pytest.mark.parametrize(
    "arguments",
    sorted(
        {a for where, a in shown() if where.endswith(".ipynb") and a.split()[0] in RUN and "--model" not in a}
    ),
)
def test_a_quick_command_a_lab_shows_runs(cli, arguments):
    code, out, err = cli(*shlex.split(arguments))
    assert code == 0, err
    assert out.strip()
