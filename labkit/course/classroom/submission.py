"""A learner's work on one lab as one JSON file (submission.schema.json): built from their recorded
verdicts (lab 03: the attack and each guard as a table of verdicts, never code), read back from the
room as untrusted data. `build` leaves out what `read` would refuse, with a note."""

import errno
import importlib
import json
import os
import re
import secrets
import stat
import sys
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.core.fixtures import parse_json, schema_error
from labkit.core.paths import runs_dir, write_whole
from labkit.core.text import shorten
from labkit.core.verdicts import LABS, progress_path

_FORMAT = "labkit-submission/1"
MAX_BYTES = 1_000_000  # a lab-03 submission with two guard tables is about 25 kB
_MAX_PROGRESS_BYTES = 10_000_000  # a progress file: the payloads of a few guard tables
_MAX_COPIES = 99  # labNN-NAME.json .. labNN-NAME-99.json in a shared folder
# A name as people write it: letters of any script, digits, spaces, '.', '-', '_' and apostrophes, up to
# 32, starting with a letter or digit ("José", "Ana Maria", "O'Neil", "李雷"); no slash: it names a file.
_NAME_PATTERN = r"^[^\W_][\w .'’-]{0,31}\Z"
_NAME_RULE = (
    "1-32 letters (any script), digits, spaces, '.', '-', '_' or apostrophes, starting with a letter or digit"
)
# A random token made once per checkout (runs/progress/author): two learners who type the same name
# hand in files with different tokens, and the class round keeps both instead of merging them.
_AUTHOR_PATTERN = r"^[0-9a-f]{16}\Z"


class SubmissionError(ValueError):
    """A file that is not a usable submission; the message is one phrase naming why."""


@dataclass(frozen=True)
class Submission:
    file: str  # the file's name, printable
    lab: str
    name: str
    data: dict[str, Any]


def printable(name: str) -> str:
    """A file name as it can be printed on one line: as is if plain, else Python's ascii()."""
    return shorten(name if name.isascii() and name.isprintable() else ascii(name), 120)


def _read_json_file(path: Path, max_bytes: int) -> Any:
    """The UTF-8 JSON in the regular file `path` (at most `max_bytes`); SubmissionError (one phrase) if
    not. Opened once, non-blocking, not following a link: a FIFO or a device is refused, never waited on."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    not_regular = "not a regular file (a link, a folder or a device): not read"
    try:
        fd = os.open(path, flags)
    except OSError as error:
        irregular = error.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO)
        why = f"cannot read it ({error.strerror or error})"
        raise SubmissionError(not_regular if irregular else why) from None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        raw = os.read(fd, max_bytes + 1) if regular else b""  # a regular file reads whole, up to EOF
    finally:
        os.close(fd)
    if not regular:
        raise SubmissionError(not_regular)
    if len(raw) > max_bytes:
        raise SubmissionError(f"larger than the {max_bytes:,} bytes it may be")
    try:
        return parse_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SubmissionError("not UTF-8 text") from None
    except ValueError as error:
        raise SubmissionError(f"not valid JSON ({error})") from None


@cache
def _schema() -> dict[str, Any]:
    """submission.schema.json, with what the course defines elsewhere filled in."""
    from labkit.refunds.attacks import ATTACKS
    from labkit.refunds.guard_table import TABLE_FORMAT as TABLE

    schema = json.loads(Path(__file__).with_name("submission.schema.json").read_text(encoding="utf-8"))
    schema["properties"] |= {
        "format": {"const": _FORMAT},
        "lab": {"enum": list(LABS)},
        "name": {"type": "string", "pattern": _NAME_PATTERN},
        "author": {"type": "string", "pattern": _AUTHOR_PATTERN},
        "attacks": {**ATTACKS, "maxItems": 10},
    }
    schema["$defs"]["table"]["properties"]["format"] = {"const": TABLE}
    return schema


def lab_number(text: str | int) -> str:
    """3, '3', '03' or 'lab03' as '03'; LabError otherwise (serves: user)."""
    digits = str(text).lower().removeprefix("lab")
    if digits.isdigit() and digits.zfill(2) in LABS:
        return digits.zfill(2)
    raise LabError(f"unknown lab {shorten(str(text), 40)!r} (known: {', '.join(LABS)})")


@cache
def _exercises_of(lab: str) -> frozenset[str]:
    """The exercise names lab `lab`'s checkers record (their `@exercise` names)."""
    module = importlib.import_module(f"labkit.exercises.lab{lab}")
    return frozenset(
        value.exercise[1]
        for value in vars(module).values()
        if isinstance(getattr(value, "exercise", None), tuple) and value.exercise[0] == lab
    )


def _schema_problem(schema: dict[str, Any], data: Any) -> str | None:
    try:
        if (error := schema_error(schema, data)) is None:
            return None
    except RecursionError:
        return "nested too deeply"
    where = ".".join(printable(str(part)) for part in error.absolute_path) or "the file"
    return shorten(f"{where}: {error.message}", 300)


def _entry_problem(entry: Any) -> str | None:
    """Why one exercise's counts are not a valid entry or contradict each other, or None."""
    schema = {"$ref": "#/$defs/entry", "$defs": _schema()["$defs"]}
    if (problem := _schema_problem(schema, entry)) is not None:
        return problem.removeprefix("the file: ")
    first, attempts = entry["first_passed_attempt"], entry["attempts"]
    if first is not None and first > attempts:
        return f"first passed at attempt {first} of only {attempts}"
    if entry["passed"] and first is None:
        return "passed, but no attempt passed it"
    return None


# The labs whose submissions carry more than verdicts (attacks, guards' tables), and the module that says
# which (`handed_in`) and why one is unusable (`attack_problem`, `guard_problem`): the course wing names a
# lab here and nowhere else.
_HAND_INS = {"03": "labkit.refunds.hand_in"}


def _carried(lab: str) -> Any:
    """The module lab `lab` hands more than verdicts in with, or None."""
    return importlib.import_module(_HAND_INS[lab]) if lab in _HAND_INS else None


def _problem(data: Any) -> str | None:
    """Why parsed JSON `data` is not a usable submission (one phrase), or None."""
    if (found := _schema_problem(_schema(), data)) is not None:
        return found
    try:
        datetime.fromisoformat(data["submitted"])
    except ValueError:
        return f"submitted: {shorten(data['submitted'], 40)!r} is not an ISO date (as `labkit submit` writes)"
    lab, known = data["lab"], _exercises_of(data["lab"])
    for exercise, entry in data["exercises"].items():
        if exercise not in known:
            return f"exercises: lab {lab} has no exercise {exercise!r} (it has: {', '.join(sorted(known))})"
        if (found := _entry_problem(entry)) is not None:
            return f"exercises.{exercise}: {found}"
    hand_in = _carried(lab)
    if hand_in is None:
        if data["attacks"] or data["guards"]:
            return f"attacks and guards belong to lab {', '.join(_HAND_INS)}, not lab {lab}"
        return None
    for index, record in enumerate(data["attacks"]):
        found = hand_in.attack_problem(record)
        if found is not None:
            return f"attacks.{index}: {found}"
    for exercise, table in data["guards"].items():
        if exercise not in data["exercises"]:
            return f"guards.{exercise}: no exercise {exercise!r} was attempted in this submission"
        found = hand_in.guard_problem(table)
        if found is not None:
            return f"guards.{exercise}: {found}"
    return None


def read(path: Path) -> Submission:
    """Read and check one submission file; SubmissionError (one phrase) if it is not usable."""
    data = _read_json_file(path, MAX_BYTES)
    if (found := _problem(data)) is not None:
        raise SubmissionError(shorten(found, 300))
    return Submission(printable(path.name), data["lab"], data["name"], data)


def _progress(lab: str) -> dict[str, Any]:
    """The lab's recorded exercises, read as untrusted input: LabError (one line) if unusable."""
    path = progress_path(lab)
    if not os.path.lexists(path):
        return {}
    try:
        data = _read_json_file(path, _MAX_PROGRESS_BYTES)
        if not isinstance(data, dict) or not isinstance(data.get("exercises"), dict):
            raise SubmissionError("not a progress file (no exercises)")
    except SubmissionError as error:
        raise LabError(f"{path}: {error}; delete it and run the lab's exercise cells again") from None
    return data["exercises"]


def build(lab: str | int, name: str) -> tuple[dict[str, Any], list[str]]:
    """The submission for `lab` from the recorded verdicts, and notes on what was left out; LabError if
    nothing usable is recorded. `passed`: any attempt passed (its payload is handed in, not the last)."""
    lab = lab_number(lab)
    name = unicodedata.normalize("NFC", " ".join(str(name).split()))  # "José" typed either way is one name
    if not re.fullmatch(_NAME_PATTERN, name):  # serves: user
        raise LabError(f"name {shorten(name, 40)!r} must be {_NAME_RULE} (it names the file)")
    recorded = _progress(lab)
    if not recorded:  # serves: user — nothing to submit yet
        raise LabError(f"no checker of lab {lab} has run yet: run the lab's exercise cells, then submit")
    exercises, attacks, guards, notes = {}, [], {}, []
    hand_in = _carried(lab)
    for exercise, raw in sorted(recorded.items())[:200]:
        raw = raw if isinstance(raw, dict) else {}
        first = raw.get("first_passed_attempt")
        entry = {"passed": first is not None, "attempts": raw.get("attempts"), "first_passed_attempt": first}
        why = "lab has no such exercise" if exercise not in _exercises_of(lab) else _entry_problem(entry)
        if why is not None:
            notes.append(f"exercise {shorten(ascii(exercise), 40)} is left out: {why}")
            continue
        exercises[exercise] = entry
        payload = raw.get("passed_payload" if first is not None and "passed_payload" in raw else "payload")
        placed = None if hand_in is None or payload is None else hand_in.handed_in(exercise, payload)
        if placed is None:
            continue
        field, why = placed
        if why is not None:
            notes.append(
                f"your {exercise} {field.removesuffix('s')} is left out: {why} (run its checker again)"
            )
        elif field == "attacks":
            attacks.append(payload)
        else:
            guards[exercise] = payload
    if not exercises:  # serves: user — nothing usable to submit
        raise LabError(
            f"no exercise of lab {lab} is recorded in a usable form ({'; '.join(notes)[:200]}); "
            "run the lab's exercise cells, then submit"
        )
    submission = {
        "format": _FORMAT,
        "lab": lab,
        "name": name,
        "author": author(),
        "submitted": datetime.now(UTC).isoformat(timespec="seconds"),
        "exercises": exercises,
        "attacks": attacks,
        "guards": guards,
    }
    # That `read` takes what `build` writes is the course's own consistency: the class-round tests read
    # back every submission they build, so it is checked there, not again in every learner's kernel.
    return submission, notes


def author() -> str:
    """This checkout's author token (`runs/progress/author`), made on first use: who made a file, told
    apart from what they typed as their name. Not a secret and not a login: names stay self-reported.
    (serves: untrusted file — an unreadable or odd token is replaced)"""
    path = runs_dir() / "progress" / "author"
    try:
        token = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        token = ""
    if not re.fullmatch(_AUTHOR_PATTERN, token):
        token = secrets.token_hex(8)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(token + "\n", encoding="ascii")
    return token


def file_stem(lab: str, name: str) -> str:
    """`labNN-NAME` with spaces as "-" and apostrophes left out: a file name any shell and USB stick takes."""
    return f"lab{lab}-" + re.sub(r"['’]", "", name).replace(" ", "-")


def _hand_in(text: str, folder: Path, stem: str) -> Path:
    """Write `text` to `folder` as `stem.json` or the first free `stem-N.json`: no file replaced (O_EXCL)."""
    for copy in range(1, _MAX_COPIES + 1):
        target = folder / (f"{stem}.json" if copy == 1 else f"{stem}-{copy}.json")
        try:
            with open(target, "x", encoding="utf-8") as handle:  # "x": O_CREAT | O_EXCL
                handle.write(text)
        except FileExistsError:
            continue
        except OSError:
            target.unlink(missing_ok=True)
            raise
        return target
    raise FileExistsError(f"{folder} already holds {stem}.json to {stem}-{_MAX_COPIES}.json")


def submit(
    lab: str | int, name: str, output: str | Path | None = None, *, to: str | Path | None = None
) -> Path:
    """`labkit submit` from a notebook cell: write the submission, print where, return the path (LabError if
    not): `output`, a file or folder (runs/submissions/); `to`, a shared folder (see `_hand_in`).
    (serves: user — -o and --to)"""
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
    stem = file_stem(submission["lab"], submission["name"])
    text = json.dumps(submission, indent=1, sort_keys=True, ensure_ascii=False)
    try:
        if folder is not None:
            path = _hand_in(text, folder, stem)
        else:
            path = target if target is not None else runs_dir() / "submissions" / f"{stem}.json"
            path = write_whole(path / f"{stem}.json" if path.is_dir() else path, text, mode=0o644)
    except OSError as error:  # serves: environment — a folder that cannot be written
        raise LabError(f"cannot write the submission ({error.strerror or error}): nothing written") from None
    for note in notes:
        print(f"labkit submit: {note}", file=sys.stderr)
    line = f"wrote {path}"
    if path.name != f"{stem}.json":  # the class round counts the latest under a name
        line += f" ({stem}.json is already there, left as it is: the class round counts the later one)"
    passed = sum(e["passed"] for e in submission["exercises"].values())
    line += f": lab {submission['lab']}, {passed} of {len(submission['exercises'])} exercises passed"
    if submission["lab"] in _HAND_INS:
        line += f", {len(submission['attacks'])} attack(s), {len(submission['guards'])} guard(s)"
    print(line + ". Hand this file to your instructor.")
    return path
