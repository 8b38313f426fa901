"""A learner's work on one lab as one JSON file: built from their progress, read back as data.

`build(lab, name)` reads `runs/progress/labNN.json` (written by every checker, see
`labkit.core.progress`) and keeps, per exercise, whether it passed and after how many
attempts. For lab 03 it adds the attacks the learner wrote (the payload of exercise
`intent_attack`: one record in attacks.json's shape) and their guards as guard tables (any
exercise whose payload is one; see `labkit.refunds.guard_table`).

`read(path)` is the other side, run by the instructor over files from thirty laptops: it
never executes anything (JSON only, no pickle, no code) and refuses, with one phrase, a file
that is not a regular file, is larger than MAX_BYTES, is not UTF-8 JSON, is nested too
deeply, holds a number Python cannot hold, or breaks SUBMISSION (which bounds every string,
list and count). An attack must also make sense for the shop, and a guard table must fit it.

Shape: {"format": "labkit-submission/1", "lab": "03", "name": "ana", "submitted": ISO time,
"exercises": {name: {"passed": bool, "attempts": int, "first_passed_attempt": int | null}},
"attacks": [attack record, ...], "guards": {exercise name: guard table}}.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.core.fixtures import parse_json, schema_error
from labkit.core.progress import LABS, load_progress
from labkit.core.text import shorten

FORMAT = "labkit-submission/1"
MAX_BYTES = 1_000_000  # a lab-03 submission with two guard tables is about 25 kB
ATTACK_EXERCISES = ("intent_attack",)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"
_EXERCISE = {"type": "string", "pattern": "^[a-z0-9_]{1,40}$"}
_COUNT = {"type": "integer", "minimum": 0, "maximum": 1_000_000}


def _schema() -> dict[str, Any]:
    from labkit.refunds.attacks import ATTACKS
    from labkit.refunds.guard_table import FORMAT as TABLE

    table = {
        "type": "object",
        "properties": {"format": {"const": TABLE}, "shop": {"type": "string", "maxLength": 64},
                       "size": _COUNT, "verdicts": {"type": "string", "maxLength": 200_000}},
        "required": ["format", "shop", "size", "verdicts"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "format": {"const": FORMAT},
            "lab": {"enum": list(LABS)},
            "name": {"type": "string", "pattern": NAME_PATTERN},
            "submitted": {"type": "string", "maxLength": 40},
            "exercises": {
                "type": "object", "maxProperties": 40, "propertyNames": _EXERCISE,
                "additionalProperties": {
                    "type": "object",
                    "properties": {"passed": {"type": "boolean"}, "attempts": _COUNT,
                                   "first_passed_attempt": {"oneOf": [_COUNT, {"type": "null"}]}},
                    "required": ["passed", "attempts", "first_passed_attempt"],
                    "additionalProperties": False,
                },
            },
            "attacks": {**ATTACKS, "maxItems": 10},
            "guards": {"type": "object", "maxProperties": 5, "propertyNames": _EXERCISE,
                       "additionalProperties": table},
        },
        "required": ["format", "lab", "name", "submitted", "exercises", "attacks", "guards"],
        "additionalProperties": False,
    }


def lab_number(text: str | int) -> str:
    """3, '3', '03' or 'lab03' as '03'; LabError otherwise."""
    digits = str(text).lower().removeprefix("lab")
    if digits.isdigit() and digits.zfill(2) in LABS:
        return digits.zfill(2)
    raise LabError(f"unknown lab {text!r} (known: {', '.join(LABS)})")


def check_name(name: str) -> str:
    import re

    if not re.fullmatch(NAME_PATTERN, name):
        raise LabError(f"name {name!r} must be 1-32 letters, digits, '.', '_' or '-', starting with a "
                       "letter or digit (it names the file)")
    return name


def _attack_problem(record: Any) -> str | None:
    """Why `record` is not an attack on the course's shop (one phrase), or None."""
    from labkit.refunds.attacks import attack_from, load_templates, schema_problem
    from labkit.refunds.lab import refund_lab

    if (problem := schema_problem(record)) is not None:
        return shorten(problem, 200)
    lab = refund_lab()
    try:
        attack_from(record, load_templates(lab.shop.folder / "templates.json"), lab.shop, "attack")
    except LabError as refused:
        return shorten(str(refused), 200)
    return None


def build(lab: str | int, name: str) -> tuple[dict[str, Any], list[str]]:
    """The submission for `lab` from the recorded progress, and notes on what was left out.

    LabError if no checker of that lab has run yet.
    """
    from labkit.refunds.guard_table import FORMAT as TABLE
    from labkit.refunds.guard_table import table_problem

    lab, name = lab_number(lab), check_name(name)
    recorded = load_progress(lab)["exercises"]
    if not recorded:
        raise LabError(f"no checker of lab {lab} has run yet: run the lab's exercise cells, then submit")
    exercises, attacks, guards, notes = {}, [], {}, []
    for exercise, entry in sorted(recorded.items()):
        if not isinstance(entry, dict):
            continue
        first, attempts = entry.get("first_passed_attempt"), entry.get("attempts")
        exercises[exercise] = {"passed": entry.get("passed") is True,
                               "attempts": attempts if isinstance(attempts, int) else 0,
                               "first_passed_attempt": first if isinstance(first, int) else None}
        payload = entry.get("payload")
        if lab != "03" or payload is None:
            continue
        if exercise in ATTACK_EXERCISES:
            problem = _attack_problem(payload)
            if problem is None:
                attacks.append(payload)
            else:
                notes.append(f"your {exercise} attack is left out: {problem}")
        elif isinstance(payload, dict) and payload.get("format") == TABLE:
            problem = table_problem(payload)
            if problem is None:
                guards[exercise] = payload
            else:
                notes.append(f"your {exercise} guard is left out: {problem} (run its checker again)")
    submission = {"format": FORMAT, "lab": lab, "name": name,
                  "submitted": datetime.now(UTC).isoformat(timespec="seconds"),
                  "exercises": exercises, "attacks": attacks, "guards": guards}
    return submission, notes


def write(submission: dict[str, Any], path: Path) -> Path:
    """Write `submission` to `path` whole (through a temporary file): no partial file is left."""
    import json
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8",
                                     prefix=".submission-") as tmp:
        json.dump(submission, tmp, indent=1, sort_keys=True)
    os.chmod(tmp.name, 0o644)  # a temporary file is private; a submission is meant to be handed over
    os.replace(tmp.name, path)
    return path


def submit(lab: str | int, name: str, output: str | Path | None = None) -> Path:
    """`labkit submit` from a notebook cell: write the submission, print where, return the path.

    LabError (one line) if no checker of the lab has run yet or the name is not a plain name.
    """
    from labkit.core.paths import runs_dir

    submission, notes = build(lab, name)
    default = f"lab{submission['lab']}-{submission['name']}.json"
    path = Path(output) if output is not None else runs_dir() / "submissions" / default
    if path.is_dir():
        path = path / default
    write(submission, path)
    for note in notes:
        print(f"labkit submit: {note}", file=sys.stderr)
    passed = sum(e["passed"] for e in submission["exercises"].values())
    extra = (f", {len(submission['attacks'])} attack(s), {len(submission['guards'])} guard(s)"
             if submission["lab"] == "03" else "")
    print(f"wrote {path}: lab {submission['lab']}, {passed} of {len(submission['exercises'])} exercises "
          f"passed{extra}. Hand this file to your instructor.")
    return path


class SubmissionError(ValueError):
    """A file that is not a usable submission; the message is one phrase naming why."""


@dataclass(frozen=True)
class Submission:
    file: str  # the file's name, printable
    data: dict[str, Any]

    @property
    def lab(self) -> str:
        return self.data["lab"]

    @property
    def name(self) -> str:
        return self.data["name"]


def shown(name: str) -> str:
    """A file name as it can be printed on one line: as is if plain, else Python's ascii()."""
    return name if name.isascii() and name.isprintable() else ascii(name)


def read(path: Path) -> Submission:
    """Read and check one submission file; SubmissionError (one phrase) if it is not usable."""
    from labkit.refunds.guard_table import table_problem

    try:
        info = path.lstat()
    except OSError as error:
        raise SubmissionError(f"cannot read it ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionError("not a regular file (a link, a folder or a device): not read")
    if info.st_size > MAX_BYTES:
        raise SubmissionError(f"{info.st_size:,} bytes: larger than the {MAX_BYTES:,} a submission may be")
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
        text = raw.decode("utf-8")
    except OSError as error:
        raise SubmissionError(f"cannot read it ({error.strerror})") from None
    except UnicodeDecodeError:
        raise SubmissionError("not UTF-8 text") from None
    if len(raw) > MAX_BYTES:
        raise SubmissionError(f"larger than the {MAX_BYTES:,} bytes a submission may be")
    try:
        data = parse_json(text)
    except ValueError as error:
        raise SubmissionError(f"not valid JSON ({error})") from None
    try:
        error = schema_error(_schema(), data)
    except RecursionError:
        raise SubmissionError("nested too deeply") from None
    if error is not None:
        where = ".".join(shown(str(part)) for part in error.absolute_path) or "the file"
        raise SubmissionError(shorten(f"{where}: {error.message}", 300))
    if data["lab"] != "03" and (data["attacks"] or data["guards"]):
        raise SubmissionError(f"attacks and guards belong to lab 03, not lab {data['lab']}")
    for index, record in enumerate(data["attacks"]):
        if (problem := _attack_problem(record)) is not None:
            raise SubmissionError(f"attacks.{index}: {problem}")
    for exercise, table in data["guards"].items():
        if (problem := table_problem(table)) is not None:
            raise SubmissionError(f"guards.{exercise}: {problem}")
    return Submission(shown(path.name), data)
