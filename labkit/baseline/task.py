"""The task contract, checked at the boundary: a `Task` asks one question about one documentation version,
for staging; anything else is refused here, so no policy is asked (an application rule, not a prompt).
(serves: lesson — lab 01's task contract, what the lab teaches)"""

from dataclasses import dataclass
from typing import Any

VERSIONS = ("v1", "v2")


class TaskError(ValueError):
    """A request the assistant does not accept; the message names the field."""


@dataclass(frozen=True)
class Task:
    """One validated request (TaskError otherwise): id, family, version and environment non-blank
    strs of at most 100 characters, question 1..500; version "v1" or "v2"; environment "staging"."""

    id: str
    family: str
    question: str
    version: str = "v2"
    environment: str = "staging"

    def __post_init__(self) -> None:
        for name in ("id", "family", "version", "environment"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip() or len(value) > 100:
                raise TaskError(f"Task.{name} must be a non-blank string of at most 100 characters")
        if not isinstance(self.question, str) or not self.question.strip() or len(self.question) > 500:
            raise TaskError("Task.question must contain 1..500 characters")
        if self.version not in VERSIONS:
            raise TaskError(f"Task.version {self.version!r} is not supported (v1 or v2)")
        if self.environment != "staging":
            raise TaskError(
                f"Task.environment {self.environment!r} is refused: this assistant only covers staging"
            )


def task_from(case: dict[str, Any]) -> Task:
    """The Task a case asks for (its id, family, question and version)."""
    return Task(case["id"], case["family"], case["question"], case["version"])
