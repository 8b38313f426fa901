"""labkit: the helper package of Agent Engineering Labs.

The notebooks import everything they need from here::

    from labkit import Task, Documents, run, outcome, compare
"""

from labkit.controllers import (
    adaptive_policy,
    conflict,
    controllers,
    docuctl_tools,
    fallback_workflow,
    keyword_route,
    revise_query,
    scripted,
    workflow,
)
from labkit.corpus import Corpus, docuctl, load_corpus
from labkit.documents import Documents, linear_search
from labkit.errors import FixtureError, LabError, ProviderError
from labkit.grading import compare, evaluate, outcome
from labkit.runtime import STOP_REASONS, Budget, Result, Tool, run, validate_decision
from labkit.task import Task, TaskError, task_from
from labkit.text import words

__all__ = [
    "STOP_REASONS",
    "Budget",
    "Corpus",
    "Documents",
    "FixtureError",
    "LabError",
    "ProviderError",
    "Result",
    "Task",
    "TaskError",
    "Tool",
    "adaptive_policy",
    "compare",
    "conflict",
    "controllers",
    "docuctl",
    "docuctl_tools",
    "evaluate",
    "fallback_workflow",
    "keyword_route",
    "linear_search",
    "load_corpus",
    "outcome",
    "revise_query",
    "run",
    "scripted",
    "task_from",
    "validate_decision",
    "workflow",
    "words",
]
