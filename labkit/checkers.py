"""Exercise checkers for lab 01, called from the notebook with the learner's answer.

Each checker returns a short verdict string (and prints nothing else), so a learner can
call it, read why, change the answer and call it again.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pandas as pd

from labkit.controllers import controllers
from labkit.corpus import Corpus, docuctl
from labkit.fixtures import ADAPTIVE_CASES
from labkit.grading import evaluate
from labkit.task import Task, TaskError, task_from

STAGES = ("retrieval", "control", "answer")


def try_adaptive_case(case: dict[str, Any], corpus: Corpus | None = None) -> pd.DataFrame:
    """Validate a proposed adaptive case against the contract, then run every controller on it.

    Raises ValueError naming the problem if the case breaks the schema, asks for something
    `Task` refuses, or expects a page/command the corpus does not have. Returns one row per
    controller: passed, stop, tool calls, what it cited.
    """
    corpus = corpus or docuctl()
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(ADAPTIVE_CASES["items"]).iter_errors(case)
    )
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "case"
        raise ValueError(f"{where}: {error.message}")
    try:
        task_from(case)
        page = corpus.docs.read(case["expected_doc"], case["version"])
    except TaskError as refused:
        raise ValueError(f"the task contract refuses this case: {refused}") from None
    except ValueError:
        raise ValueError(f"expected_doc {case['expected_doc']!r} is not a {case['version']} page") from None
    if page["command"] != case["expected_command"]:
        raise ValueError(f"expected_command: page {page['id']!r} says {page['command']!r}")
    rows = {}
    for name, controller in controllers(corpus.docs).items():
        (row,) = evaluate([case], controller)
        rows[name] = {k: row[k] for k in ("passed", "stop", "tool_calls", "citation")}
    return pd.DataFrame.from_dict(rows, orient="index")


def check_adaptive_case(case: dict[str, Any], corpus: Corpus | None = None) -> str:
    """Verdict on the design exercise: the fixed workflow must fail and the adaptive loop pass."""
    try:
        table = try_adaptive_case(case, corpus)
    except ValueError as problem:
        return f"Not a valid case: {problem}"
    workflow_passed = bool(table.loc["search/read workflow", "passed"])
    adaptive_passed = bool(table.loc["adaptive loop", "passed"])
    if workflow_passed:
        return "The fixed workflow already solves this case: it does not need adaptive control."
    if not adaptive_passed:
        stop = table.loc["adaptive loop", "stop"]
        return f"The adaptive loop fails it too (stop={stop}): name an observation it can act on."
    calls = int(table.loc["adaptive loop", "tool_calls"])
    return (
        f"Yes: the workflow fails, the adaptive loop passes with {calls} tool calls "
        f"(observation: {case['observation']})."
    )


def check_failure_stage(case_id: str, stage: str) -> str:
    """Exercise: which stage made the workflow fail `case_id` — retrieval, control or answer?"""
    if stage not in STAGES:
        return f"Choose one of {', '.join(STAGES)}."
    corpus = docuctl()
    case = next((c for c in corpus.cases if c["id"] == case_id), None)
    if case is None:
        return f"No base case {case_id!r}."
    result = controllers(corpus.docs)["search/read workflow"](task_from(case))
    hits = result["trace"][0]["result"] if result["trace"] else []
    ids = [hit["id"] for hit in hits] if isinstance(hits, list) else []
    if result.get("citation") == case["expected_doc"]:
        return f"The workflow passes {case_id}; pick the case that fails."
    truth = "retrieval" if not ids or ids[0] != case["expected_doc"] else "control"
    if stage == truth:
        return (
            f"Right: search ranked {ids[0] if ids else 'nothing'} first; the expected page was "
            f"{'second' if case['expected_doc'] in ids[1:] else 'not in the hits'}. Fix the ranking, "
            "not the controller."
        )
    return f"Not {stage}: look at the first turn of the trace — what did search rank first?"


def example_task() -> Task:
    """A task learners can poke at: the seed's motivating question."""
    return Task("example", "rollback", "How do I restore the last release?", "v2")
