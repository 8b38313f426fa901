"""Lab 01's Exercise 1: which stage made the workflow fail, judged on the trace's facts.

`trace_facts` reads the workflow's trace on a case (the hits in order, the page read, each hit's
score, whether that page conflicts with the task). A reason passes for retrieval when it names how
the ranking went (`ranking_named`: the first hit with a ranking word, the tie, or the expected page
ranking lower) and for control when it names that the expected page was among the hits and the
step that never looked at it (`step_named`). Before either, `contradiction` finds a claim the trace
refutes (the page was not found, it ranked first, the workflow read it, the question is misspelt,
another version, a conflict) and `what_it_shows` says what the trace does show. These are patterns
over a sentence, not understanding: they catch the claims learners make, and a rejected reason is
always told what to name.
"""

from __future__ import annotations

import re
from typing import Any

from labkit.baseline import controllers as _controllers
from labkit.baseline.controllers import workflow
from labkit.baseline.corpus import Corpus
from labkit.baseline.documents import query_terms, score
from labkit.baseline.task import task_from

STAGES = ("retrieval", "control", "answer")
REASON_LIMIT = 1000  # characters: a reason is a sentence or two
# A retrieval reason names how the ranking went: which page came first, the tie, or where the
# expected page ranked. A control reason names that the expected page was among the hits and
# that the fixed next step (read the first) never looked at it.
RANKING = r"rank|first|order|score|tie|above|ahead|before|top|higher|sort|alphabet|beat|won|win"
TIE = (r"\btie|\btied|same score|equal score|scored? the same|both score|score (of )?2|smaller id|"
       r"alphabet|by id")
LOWER = r"second|2nd|hit 2|#2|number 2|position 2|below|lower|behind|not first|\blost|after"
IN_HITS = (r"second|2nd|hit 2|#2|returned|found|among|in the (hits|results|list)|retrieved|listed|"
           r"a hit|the hits")
STEP = r"read|pick|chose|choose|select|check|only|always|next|blind|look|open"
RIGHT_PAGE = r"(right|correct|expected|relevant|proper|needed|wanted) (page|doc|document|hit|one|result)"
NEGATION = r"(not|never|n't|no|without|instead of|rather than|failed to|unable to)\W+(\w+\W+){0,3}$"


def said(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


def names(page_id: str) -> str:
    """A pattern for a page named by its id ("rollback-v2") or its topic ("rollback")."""
    topic = page_id.rsplit("-", 1)[0]
    return rf"\b({re.escape(page_id)}|{re.escape(topic)})\b"


def _affirmed(pattern: str, text: str) -> bool:
    """`pattern` occurs in `text` at least once without a negation just before it."""
    return any(not re.search(NEGATION, text[: match.start()][-40:]) for match in re.finditer(pattern, text))


def contradiction(
    text: str, first: str, expected: str, read: str | None, found: bool, conflicts: bool
) -> str:
    """What `text` claims that the trace contradicts (a phrase for the verdict), or ""."""
    page = rf"({names(expected)}|{RIGHT_PAGE}|it\b)"
    clauses = re.split(r"[.;,:!?]|\bbut\b|\bwhile\b|\bthough\b", text)
    if found:
        negated_find = (r"(not|never|n't|failed to|unable to)\W+(\w+\W+){0,2}"
                        r"(find|found|return|retrieve|surface|include|list|show|get|hit)")
        for clause in clauses:
            if said(negated_find, clause) and not said(r"first|top|highest|above|ahead|\bread\b", clause):
                return f"that search did not find {expected!r}"
        nothing = r"no (hits|results)|found nothing|returned nothing|empty (search|result|list)|nothing came"
        missing = (rf"{page}\W+(\w+\W+){{0,3}}(missing|absent)|"
                   r"(not|never) (in|among) (the )?(hits|results|list)")
        if said(nothing, text) or said(missing, text):
            return f"that search did not find {expected!r}"
    ranked = r"\W+(was |is |came |got |ranked |scored )?(ranked )?"
    if _affirmed(rf"{names(expected)}{ranked}(first|top|1st|hit 1)\b", text):
        return f"that {expected!r} ranked first"
    if _affirmed(rf"{names(first)}{ranked}(second|2nd|last|lower)\b", text):
        return f"that {first!r} ranked below {expected!r}"
    if read != expected and _affirmed(rf"\bread (the )?({names(expected)}|{RIGHT_PAGE})", text):
        return f"that the workflow read {expected!r}"
    if said(r"misspel|typo|spelling|spelt", text):
        return "that the question is misspelt"
    if said(r"\bv1\b|wrong version|other version|older version", text):
        return "that a page of another version was involved"
    if not conflicts and _affirmed(r"production|deprecated|conflict", text):
        return f"that {read!r} conflicts with the task"
    return ""


def trace_facts(case: dict[str, Any], corpus: Corpus) -> dict[str, Any]:
    """The facts of the workflow's trace on `case` that a diagnosis can name."""
    task = task_from(case)
    result = workflow(task, corpus.docs)
    ids = [hit["id"] for hit in result["trace"][0]["result"] or []]
    read = result["trace"][1]["decision"]["id"] if len(result["trace"]) > 1 else None
    terms = query_terms(case["question"], corpus.docs.aliases, expand=True)
    scores = {}
    for page_id in ids:
        page = corpus.docs.read(page_id, task.version)
        scores[page_id] = score(terms, page)
    page = corpus.docs.read(read, task.version) if read else None
    return {"result": result, "ids": ids, "read": read, "scores": scores,
            "conflicts": page is not None and _controllers.conflict(task, page) is not None}


def what_it_shows(facts: dict[str, Any], expected: str) -> str:
    ids, scores = facts["ids"], facts["scores"]
    where = f"{expected!r} hit {ids.index(expected) + 1}" if expected in ids else f"no {expected!r}"
    scored = " and ".join(f"{page} {score}" for page, score in scores.items())
    return (f"search returned {ids} ({where}; scores {scored}), and the workflow read {facts['read']!r} "
            "and answered with its command")




def ranking_named(text: str, ids: list[str], expected: str) -> bool:
    """A retrieval reason: the first hit with a ranking word, the tie, or `expected` ranking lower."""
    first = ids[0] if ids else ""
    named_first = bool(first) and said(names(first), text) and said(RANKING, text)
    named_lower = expected in ids[1:] and said(names(expected), text) and said(LOWER, text)
    return named_first or named_lower or said(TIE, text)


def step_named(text: str, ids: list[str], expected: str) -> bool:
    """A control reason: `expected` (or "the right page") was among the hits, and a step cue."""
    page = said(names(expected), text) or said(RIGHT_PAGE, text)
    return expected in ids[1:] and page and said(IN_HITS, text) and said(STEP, text)

