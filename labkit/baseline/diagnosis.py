"""Exercise 1's facts: what the workflow's trace on a failed case shows, read by labkit from the run itself,
so a diagnosis is graded against the trace and never against the words of a sentence."""

from typing import Any

from labkit.baseline.controllers import workflow
from labkit.baseline.corpus import Corpus
from labkit.baseline.task import task_from

STAGES = ("retrieval", "control", "answer")
STEPS = {"retrieval": 1, "control": 2}  # the trace step each stage's failure is in: the search, the read


def trace_facts(case: dict[str, Any], corpus: Corpus) -> dict[str, Any]:
    """The workflow's run on `case` (`result`) and the evidence a diagnosis states (`evidence`): the page
    search ranked first, and where `case`'s expected page ranked among the hits (1-based; None when search
    did not return it)."""
    result = workflow(task_from(case), corpus.docs)
    ids = [hit["id"] for hit in result["trace"][0]["result"] or []]
    expected = case["expected_doc"]
    return {
        "result": result,
        "evidence": {
            "first_hit": ids[0] if ids else None,
            "expected_hit": ids.index(expected) + 1 if expected in ids else None,
        },
    }
