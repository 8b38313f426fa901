"""The assertions every exercise test makes about a checker's answer."""

from typing import Any

from labkit.core.check import WIDTH
from labkit.exercises import Check

# The safety net's words (`labkit.core.verdicts._judged`): an answer the checker itself could not
# judge. It is a failing Check like any other, so only its words tell it from the checker's own.
NET = "could not be checked"


def verdict(check: Check, passed: bool, *phrases: str) -> None:
    """`check` passed (or not), reads as a sentence or two without a traceback, fits an output
    area, and names every phrase (line breaks in the wrapped message do not count)."""
    assert isinstance(check, Check) and check.passed is passed, repr(check)
    assert "Traceback" not in repr(check) and len(check.message) < 400
    head = repr(check).splitlines()[: len(repr(Check(passed, check.message)).splitlines())]
    assert all(len(line) <= WIDTH for line in head), repr(check)
    message = " ".join(check.message.split())
    for phrase in phrases:
        assert phrase in message, check.message


def own_verdict(check: Any) -> None:
    """`check` is a Check the checker wrote itself, passed or not: a short message (under 400
    characters) with no traceback and not the safety net's "could not be checked", which a
    checker that crashed on the answer hands back instead; and it passes `verdict`."""
    assert isinstance(check, Check), check
    message = check.message
    assert isinstance(message, str) and 0 < len(message) < 400, message
    assert "Traceback" not in repr(check) and NET not in message, message
    verdict(check, check.passed)
