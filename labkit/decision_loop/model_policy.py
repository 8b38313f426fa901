"""The docuctl model policy on lab 01's tools: the prompts lab 02 measures (``base``; ``example``
adds one worked episode on a page outside the corpus, so it cannot leak an answer), how a task
is shown, and the state rules of rungs L2 and L3."""

from collections.abc import Mapping, Sequence
from typing import Any

from labkit.baseline.controllers import docuctl_tools
from labkit.baseline.task import Task
from labkit.core.errors import LabError
from labkit.core.fixtures import FIXTURES, read_text
from labkit.core.runtime import Tool
from labkit.model.constraints import StateRules
from labkit.model.policy import ModelPolicy

DOCUCTL_LAB = "docuctl"  # the `lab` of every docuctl recording

_PROMPTS = FIXTURES / "docuctl" / "prompts"  # text files, one trailing newline each
_BASE = read_text(_PROMPTS / "base.txt", "prompt").removesuffix("\n")
PROMPTS = {
    "base": _BASE,
    "example": _BASE + "\n\n" + read_text(_PROMPTS / "example.txt", "prompt").removesuffix("\n"),
}


def describe_docuctl(task: Any) -> str:
    """How a docuctl Task is shown to the model: its question and documentation version."""
    return f"Question: {task.question}\nDocumentation version: {task.version}"


def search_hits(task: Any, observations: Sequence[Mapping[str, Any]]) -> list[str]:
    """Page ids that a search returned in this episode, in the order first seen (L2's ids)."""
    return [
        hit["id"]
        for o in observations
        if o.get("action") == "search" and isinstance(o.get("result"), list)
        for hit in o["result"]
        if isinstance(hit, Mapping) and isinstance(hit.get("id"), str)
    ]


def pages_read(observations: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """L3's extractive finals: each page read in this episode, as (its exact command, its id)."""
    pages = [o.get("result") for o in observations if o.get("action") == "read"]
    finals = {
        page["id"]: {"answer": page["command"], "citation": page["id"]}
        for page in pages
        if isinstance(page, Mapping)
        and isinstance(page.get("id"), str)
        and isinstance(page.get("command"), str)
    }
    return list(finals.values())


# L2: read and cite only what a search returned; L3: answer only with a read page's command.
DOCUCTL_RULES = StateRules(
    slots={("read", "id"): search_hits, ("final", "citation"): search_hits}, finals=pages_read
)


def schema_tools() -> dict[str, Tool]:
    """The docuctl tools, for their names and params (the decision schema ignores versions)."""
    return docuctl_tools(Task("schema", "schema", "schema", "v2"))


def docuctl_policy(prompt: str = "base", *, rung: str = "L1", **options: Any) -> ModelPolicy:
    """A ModelPolicy for docuctl tasks with one of `PROMPTS` at `rung` (LabError names the choices);
    `options` (backend, temperature, seed, trial, max_tokens) go to ModelPolicy."""
    if prompt not in PROMPTS:  # serves: user
        raise LabError(f"unknown prompt {prompt!r} (known: {', '.join(PROMPTS)})")
    options |= {"rung": rung, "rules": DOCUCTL_RULES}
    return ModelPolicy(DOCUCTL_LAB, schema_tools(), PROMPTS[prompt], describe_docuctl, **options)
