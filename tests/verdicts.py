"""The one assertion every exercise test makes about a checker's answer."""

from labkit.core.check import WIDTH
from labkit.exercises import Check


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
