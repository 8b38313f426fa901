"""A learner's work on one lab as one JSON file: built from their progress, read back as data.

`build(lab, name)` reads `runs/progress/labNN.json` (written by every checker, see
`labkit.core.progress`) and keeps, per exercise, whether it was ever passed, after how many
attempts it first was, and how many attempts there were. For lab 03 it adds the attacks the
learner wrote (the payload of exercise `intent_attack`: one record in attacks.json's shape)
and their guards as guard tables (any exercise whose payload is one; see
`labkit.refunds.guard_table`). The progress file is read as untrusted too (a learner may have
edited it): an entry that `read` would refuse is left out with a note, and the built
submission is checked by `check` before it is written, so `submit` never hands over a file
`labkit class` rejects.

`read(path)` is the other side, run by the instructor over files from thirty laptops: it
never executes anything (JSON only, no pickle, no code), opens the file once without blocking
(`labkit.course.classroom.files.read_regular`), and refuses, with one phrase, a file that is
not a regular file, is larger than MAX_BYTES, is not UTF-8 JSON, is nested too deeply, holds
a number Python cannot hold, breaks SUBMISSION (which bounds every string, list and count),
or fails `check`: `submitted` not an ISO date, an exercise the lab does not have, counts that
contradict each other (passed with no attempt, a first pass after the last attempt), an
attack goal whose placeholders are more than plain `{name}`s (a format spec such as
`{amount:.2f}` or `{user:>10000000}` is refused: goals are filled as data), an attack that
does not make sense for the shop, or a guard table that does not fit it or raised on every call.

Shape: {"format": "labkit-submission/1", "lab": "03", "name": "ana", "submitted": ISO time,
"exercises": {name: {"passed": bool (ever), "attempts": int, "first_passed_attempt": int | null}},
"attacks": [attack record, ...], "guards": {exercise name: guard table}}. The counts are the
learner's own report: `labkit class` labels them self-reported.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.core.fixtures import parse_json, schema_error
from labkit.core.paths import write_whole
from labkit.core.progress import LABS, progress_path
from labkit.core.text import shorten
from labkit.course.classroom.files import Refused, hand_in, read_regular

FORMAT = "labkit-submission/1"
MAX_BYTES = 1_000_000  # a lab-03 submission with two guard tables is about 25 kB
MAX_PROGRESS_BYTES = 10_000_000  # a progress file: the payloads of a few guard tables
MAX_ATTEMPTS = 10_000  # more attempts at one exercise than a workshop has minutes
ATTACK_EXERCISES = ("intent_attack",)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"
_EXERCISE = {"type": "string", "pattern": "^[a-z0-9_]{1,40}$"}
_ATTEMPTS = {"type": "integer", "minimum": 1, "maximum": MAX_ATTEMPTS}
_SIZE = {"type": "integer", "minimum": 0, "maximum": 1_000_000}
# The module whose checkers are each lab's exercises (their @exercise names).
CHECKERS = {"01": "labkit.exercises.lab01", "02": "labkit.exercises.lab02", "03": "labkit.exercises.lab03",
            "04": "labkit.exercises.lab04"}


def _schema() -> dict[str, Any]:
    from labkit.refunds.attacks import ATTACKS
    from labkit.refunds.guard_table import TABLE_FORMAT as TABLE

    table = {
        "type": "object",
        "properties": {"format": {"const": TABLE}, "shop": {"type": "string", "maxLength": 64},
                       "size": _SIZE, "verdicts": {"type": "string", "maxLength": 200_000}},
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
                    "properties": {"passed": {"type": "boolean"}, "attempts": _ATTEMPTS,
                                   "first_passed_attempt": {"oneOf": [_ATTEMPTS, {"type": "null"}]}},
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
    raise LabError(f"unknown lab {shorten(str(text), 40)!r} (known: {', '.join(LABS)})")


def check_name(name: str) -> str:
    import re

    if not re.fullmatch(NAME_PATTERN, name):
        raise LabError(f"name {shorten(name, 40)!r} must be 1-32 letters, digits, '.', '_' or '-', starting "
                       "with a letter or digit (it names the file)")
    return name


@cache
def exercises_of(lab: str) -> frozenset[str]:
    """The exercise names lab `lab`'s checkers record (their `@exercise` names)."""
    import importlib

    module = importlib.import_module(CHECKERS[lab])
    return frozenset(value.exercise[1] for value in vars(module).values()
                     if isinstance(getattr(value, "exercise", None), tuple) and value.exercise[0] == lab)


def _attack_problem(record: Any) -> str | None:
    """Why `record` is not an attack on the course's shop (one phrase), or None."""
    from labkit.refunds.attacks import (
        GOAL_FIELDS,
        attack_from,
        load_templates,
        placeholder_problem,
        schema_problem,
    )
    from labkit.refunds.lab import refund_lab

    if (problem := schema_problem(record)) is not None:
        return shorten(problem, 200)
    if (problem := placeholder_problem("goal", record["goal"], GOAL_FIELDS)) is not None:
        return problem
    lab = refund_lab()
    try:
        attack_from(record, load_templates(lab.shop.folder / "templates.json"), lab.shop, "attack")
    except LabError as refused:
        return shorten(str(refused), 200)
    return None


def _guard_problem(table: Any) -> str | None:
    from labkit.refunds.guard_table import RAISED, table_problem

    if (problem := table_problem(table)) is not None:
        return problem
    if not table["verdicts"].strip(RAISED):
        return ("the guard raised on every call it was asked about: it is no guard "
                "(fix it and run its checker)")
    return None


def _entry_problem(entry: dict[str, Any]) -> str | None:
    """Why one exercise's counts contradict each other (one phrase), or None."""
    first, attempts = entry["first_passed_attempt"], entry["attempts"]
    if first is not None and first > attempts:
        return f"first passed at attempt {first} of only {attempts}"
    if entry["passed"] and first is None:
        return "passed, but no attempt passed it"
    return None


def check(data: dict[str, Any]) -> str | None:
    """What the schema cannot say about a submission (schema-checked already), one phrase, or None."""
    try:
        datetime.fromisoformat(data["submitted"])
    except ValueError:
        return f"submitted: {shorten(data['submitted'], 40)!r} is not an ISO date (as `labkit submit` writes)"
    lab = data["lab"]
    known = exercises_of(lab)
    for exercise, entry in data["exercises"].items():
        if exercise not in known:
            return f"exercises: lab {lab} has no exercise {exercise!r} (it has: {', '.join(sorted(known))})"
        if (problem := _entry_problem(entry)) is not None:
            return f"exercises.{exercise}: {problem}"
    if lab != "03" and (data["attacks"] or data["guards"]):
        return f"attacks and guards belong to lab 03, not lab {lab}"
    for index, record in enumerate(data["attacks"]):
        if (problem := _attack_problem(record)) is not None:
            return f"attacks.{index}: {problem}"
    for exercise, table in data["guards"].items():
        if exercise not in data["exercises"]:
            return f"guards.{exercise}: no exercise {exercise!r} was attempted in this submission"
        if (problem := _guard_problem(table)) is not None:
            return f"guards.{exercise}: {problem}"
    return None


def _progress(lab: str) -> dict[str, Any]:
    """The lab's recorded exercises, read as untrusted input: LabError (one line) if unusable."""
    path = progress_path(lab)
    fix = "delete it and run the lab's exercise cells again"
    try:
        data = parse_json(read_regular(path, MAX_PROGRESS_BYTES).decode("utf-8"))
    except Refused as error:
        if not path.exists() and not path.is_symlink():
            return {}
        raise LabError(f"{path}: {error}; {fix}") from None
    except UnicodeDecodeError:
        raise LabError(f"{path}: not UTF-8 text; {fix}") from None
    except ValueError as error:
        raise LabError(f"{path}: not valid JSON ({shorten(str(error), 100)}); {fix}") from None
    if not isinstance(data, dict) or not isinstance(data.get("exercises"), dict):
        raise LabError(f"{path}: not a progress file (no exercises); {fix}")
    return data["exercises"]


def _count(value: Any) -> int | None:
    """A count as recorded (an int from 1 to MAX_ATTEMPTS, never a bool), or None."""
    return value if type(value) is int and 1 <= value <= MAX_ATTEMPTS else None


def _exercise(name: str, entry: Any, known: frozenset[str], lab: str) -> tuple[dict | None, str | None]:
    """One progress entry as a submission entry, or None and the note saying why it is left out."""
    if name not in known:
        return None, f"exercise {shorten(ascii(name), 40)} is left out: lab {lab} has no such exercise"
    if not isinstance(entry, dict):
        return None, f"exercise {name} is left out: its record is not an object"
    attempts, first = _count(entry.get("attempts")), entry.get("first_passed_attempt")
    if attempts is None:
        return None, (f"exercise {name} is left out: its attempt count is not a whole number from 1 to "
                      f"{MAX_ATTEMPTS:,}")
    if first is not None and (_count(first) is None or first > attempts):
        return None, (f"exercise {name} is left out: its first passing attempt does not fit its "
                      f"{attempts} attempt(s)")
    # Passed ever, not at the last attempt: experimenting after a pass keeps the pass.
    return {"passed": first is not None, "attempts": attempts, "first_passed_attempt": first}, None


def build(lab: str | int, name: str) -> tuple[dict[str, Any], list[str]]:
    """The submission for `lab` from the recorded progress, and notes on what was left out.

    `passed` is whether any attempt passed (a learner who passed and then experimented keeps
    the pass). LabError (one line) if no checker of that lab has run yet or the progress file
    cannot be used.
    """
    from labkit.refunds.guard_table import TABLE_FORMAT as TABLE

    lab, name = lab_number(lab), check_name(name)
    recorded = _progress(lab)
    if not recorded:
        raise LabError(f"no checker of lab {lab} has run yet: run the lab's exercise cells, then submit")
    known = exercises_of(lab)
    exercises, attacks, guards, notes = {}, [], {}, []
    for exercise, entry in sorted(recorded.items())[:200]:
        kept, note = _exercise(exercise, entry, known, lab)
        if kept is None:
            notes.append(note)
            continue
        exercises[exercise] = kept
        payload = entry.get("payload")
        if lab != "03" or payload is None:
            continue
        if exercise in ATTACK_EXERCISES:
            problem = _attack_problem(payload)
            if problem is None and len(attacks) < 10:
                attacks.append(payload)
            elif problem is not None:
                notes.append(f"your {exercise} attack is left out: {problem}")
        elif isinstance(payload, dict) and payload.get("format") == TABLE:
            problem = _guard_problem(payload)
            if problem is None:
                guards[exercise] = payload
            else:
                notes.append(f"your {exercise} guard is left out: {problem} (run its checker again)")
    if not exercises:
        raise LabError(f"no exercise of lab {lab} is recorded in a usable form ({'; '.join(notes)[:200]}); "
                       "run the lab's exercise cells, then submit")
    submission = {"format": FORMAT, "lab": lab, "name": name,
                  "submitted": datetime.now(UTC).isoformat(timespec="seconds"),
                  "exercises": exercises, "attacks": attacks, "guards": guards}
    problem = _problem(submission)
    if problem is not None:  # never hand over a file the class round would refuse
        raise LabError(f"this submission would be refused by `labkit class` ({problem}); nothing was written")
    return submission, notes


def write(submission: dict[str, Any], path: Path) -> Path:
    """Write `submission` to `path` whole (through a temporary file): no partial file is left."""
    # A temporary file is private; a submission is meant to be handed over.
    return write_whole(path, json.dumps(submission, indent=1, sort_keys=True), mode=0o644)


def submit(lab: str | int, name: str, output: str | Path | None = None, *,
           to: str | Path | None = None) -> Path:
    """`labkit submit` from a notebook cell: write the submission, print where, return the path.

    `output`: a file (replaced if there) or a folder to write `labNN-NAME.json` in (default
    runs/submissions/). `to`: a shared folder (a USB stick): the file goes in as `labNN-NAME.json`,
    or `labNN-NAME-2.json`... if that name is taken, never replacing a file; the line printed
    says which. LabError (one line) if no checker of the lab has run yet, the name is not a
    plain name, or the file cannot be written there.
    """
    from labkit.core.paths import runs_dir
    from labkit.course.argtypes import output_path

    if output is not None and to is not None:
        raise LabError("give -o or --to, not both")
    try:
        target = None if output is None else output_path(output, folder_ok=True)
        folder = None if to is None else output_path(to, folder_ok=True)
    except ValueError as error:
        raise LabError(str(error)) from None
    if folder is not None and not folder.is_dir():
        raise LabError(f"--to {folder}: not a folder (the USB stick or shared folder to hand the file in)")
    submission, notes = build(lab, name)
    stem = f"lab{submission['lab']}-{submission['name']}"
    taken = ""
    try:
        if folder is not None:
            path = hand_in(json.dumps(submission, indent=1, sort_keys=True), folder, stem)
            if path.name != f"{stem}.json":
                taken = (f" ({stem}.json is already there, yours or another learner's: it was left as "
                         f"it is; if both are yours, delete the older one)")
        else:
            path = target if target is not None else runs_dir() / "submissions" / f"{stem}.json"
            if path.is_dir():
                path = path / f"{stem}.json"
            write(submission, path)
    except OSError as error:
        raise LabError(f"cannot write the submission ({error.strerror or error}); "
                       "nothing was written") from None
    for note in notes:
        print(f"labkit submit: {note}", file=sys.stderr)
    passed = sum(e["passed"] for e in submission["exercises"].values())
    extra = (f", {len(submission['attacks'])} attack(s), {len(submission['guards'])} guard(s)"
             if submission["lab"] == "03" else "")
    print(f"wrote {path}{taken}: lab {submission['lab']}, {passed} of {len(submission['exercises'])} "
          f"exercises passed{extra}. Hand this file to your instructor.")
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
    return shorten(name if name.isascii() and name.isprintable() else ascii(name), 120)


def _problem(data: Any) -> str | None:
    """Why parsed JSON `data` is not a usable submission (one phrase), or None."""
    try:
        error = schema_error(_schema(), data)
    except RecursionError:
        return "nested too deeply"
    if error is not None:
        where = ".".join(shown(str(part)) for part in error.absolute_path) or "the file"
        return shorten(f"{where}: {error.message}", 300)
    return check(data)


def read(path: Path) -> Submission:
    """Read and check one submission file; SubmissionError (one phrase) if it is not usable."""
    try:
        raw = read_regular(path, MAX_BYTES)
    except Refused as error:
        raise SubmissionError(str(error)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SubmissionError("not UTF-8 text") from None
    try:
        data = parse_json(text)
    except ValueError as error:
        raise SubmissionError(f"not valid JSON ({error})") from None
    problem = _problem(data)
    if problem is not None:
        raise SubmissionError(shorten(problem, 300))
    return Submission(shown(path.name), data)
