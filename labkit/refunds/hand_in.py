"""What a lab-03 submission carries besides its verdicts, as `labkit submit` builds it and `labkit class`
reads it back: the learner's intent attack (a record as attacks.json holds them) and each guard as a
table of its verdicts (`guard_table`), never code. The course wing asks this module, by the lab's
number in `labkit.course.classroom.submission`, and knows nothing of attacks or guards itself."""

from typing import Any

from labkit.core.errors import LabError
from labkit.core.text import shorten
from labkit.refunds import attacks
from labkit.refunds.guard_table import RAISED, TABLE_FORMAT, table_problem
from labkit.refunds.lab import refund_lab

ATTACK_EXERCISE = "intent_attack"  # the exercise whose payload is an attack


def attack_problem(record: Any) -> str | None:
    """Why `record` is not an attack on the course's shop (one phrase), or None. (serves: untrusted
    file — a submission is read back from the room)"""
    problem = attacks.schema_problem(record)
    if problem is not None:
        return shorten(problem, 200)
    problem = attacks.placeholder_problem("goal", record["goal"], attacks.GOAL_FIELDS)
    if problem is not None:
        return problem
    shop = refund_lab().shop
    try:
        attacks.attack_from(record, attacks.load_templates(shop.folder / "templates.json"), shop, "attack")
    except LabError as refused:
        return shorten(str(refused), 200)
    return None


def guard_problem(table: Any) -> str | None:
    """Why `table` is not a usable guard table (one phrase), or None; a guard that raised on every call
    it was asked about is no guard. (serves: untrusted file)"""
    problem = table_problem(table)
    if problem is not None:
        return problem
    if not table["verdicts"].strip(RAISED):
        return "the guard raised on every call it was asked about: it is no guard (fix it, run its checker)"
    return None


def handed_in(exercise: str, payload: Any) -> tuple[str, str | None] | None:
    """Where the recorded `payload` of `exercise` goes in a submission, and why it may not: ("attacks",
    None) for a usable intent attack, ("guards", None) for a usable guard table, the field with the
    phrase that refuses it otherwise; None for a payload that is neither (nothing to hand in)."""
    if exercise == ATTACK_EXERCISE:
        return "attacks", attack_problem(payload)
    if isinstance(payload, dict) and payload.get("format") == TABLE_FORMAT:
        return "guards", guard_problem(payload)
    return None
