"""Exercise 1's judge, patterns over a sentence: `contradiction` finds a claim the workflow's trace refutes;
`ranking_named` and `step_named` the facts a retrieval or a control reason names, by what it says of them."""

from __future__ import annotations

import re
from typing import Any

from labkit.baseline.controllers import conflict, workflow
from labkit.baseline.corpus import Corpus
from labkit.baseline.documents import query_terms, shared_terms
from labkit.baseline.task import task_from

STAGES = ("retrieval", "control", "answer")
REASON_LIMIT = 1000  # characters: a reason is a sentence or two
_RANKING = r"rank|first|order|score|tie|above|ahead|before|top|higher|sort|alphabet|beat|won|win"
_TIE = r"\btie|same score|equal score|scored? the same|both score|score (of )?2|smaller id|alphabet|by id"
_LOWER = r"second|2nd|hit 2|#2|number 2|position 2|below|lower|behind|not first|\blost|after"
_IN_HITS = r"second|2nd|hit 2|#2|returned|found|among|in the (results|list)|retrieved|listed|(a|the) hits?"
_STEP = r"read|pick|chose|choose|select|check|only|always|next|blind|look|open|took|use|trust|assum|ignor"
_RIGHT_PAGE = r"(right|correct|expected|relevant|proper|needed|wanted) (page|doc|document|hit|one|result)"
_NEGATION = r"(not|never|n't|no|without|instead of|rather than|failed to|unable to)\W+(\w+\W+){0,3}$"
_FIND = r"(find|found|return|retrieve|surface|include|list|show|get|hit)"
_NEGATED_FIND = rf"(not|never|n't|failed to|unable to)\W+(\w+\W+){{0,2}}{_FIND}"
_NOTHING = r"no (hits|results)|found nothing|returned nothing|empty (search|result|list)|nothing came"
_RANKED = r"\W+(was |is |came |got |ranked |scored )?(ranked )?"
# A claim about the scores: a value ("releases-v2 scored 3"), or one hit scoring above or below another.
_NUMBERS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5"}
_VALUE = rf"\W+(\w+\W+){{0,2}}?(scor|had|has|got|shar|match)\w*\W+((of|only)\W+)*(\d+|{'|'.join(_NUMBERS)})\b"
_MORE, _LESS = r"higher|more|better|greater|bigger|above|outscor", r"lower|less|fewer|worse|smaller|below"
_CMP = f"{_MORE}|{_LESS}"
_SCORE = (
    rf"(scor|match|shar)\w*\W+(\w+\W+){{0,2}}?({_CMP})\b|\b({_CMP})\W+(scor|terms|match|points)|\boutscor"
)
_HEDGE = r"\b(not|never|no|neither|nor|should|would|could|must|need\w*)\b|n't"  # no claim about the trace
# Words that say the hits held the expected page without naming it ("both pages", "the other hit").
_ALL_HITS = r"\b(both|two|all|the other|second|next)\W+(\w+\W+)?(pages?|hits?|results?|one|candidates|docs)\b"
_WRONG = r"(wrong|irrelevant|unrelated) (page|one|hit|doc|result)"  # the first hit, unnamed


def _said(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


def _names(page_id: str) -> str:
    """A pattern for a page named by its id ("rollback-v2") or its topic ("rollback")."""
    topic = page_id.rsplit("-", 1)[0]
    return rf"\b({re.escape(page_id)}|{re.escape(topic)})\b"


def _affirmed(pattern: str, text: str) -> bool:
    """`pattern` occurs in `text` at least once without a negation just before it."""
    return any(not re.search(_NEGATION, text[: match.start()][-40:]) for match in re.finditer(pattern, text))


def _score_claim(text: str, scores: dict[str, int]) -> str:
    """A score, or an order of two hits' scores, that `text` states and the trace's `scores` refute, or ""."""
    for page, score in scores.items():
        for match in re.finditer(_names(page) + _VALUE, text):
            if int(_NUMBERS.get(said := match.group(match.lastindex or 0), said)) != score:
                return f"that {page!r} scored {said}"
    for clause in re.split(r"[.;,:!?]|\bbut\b|\bwhile\b|\band\b", text) if len(scores) > 1 else ():
        for match in re.finditer(_SCORE, clause):
            before, more = clause[: match.start()], re.search(_MORE, match.group()) is not None
            subject, other = sorted(scores, key=lambda page: -before.rfind(page.rsplit("-", 1)[0]))[:2]
            if re.search(_HEDGE, before[-40:] + match.group()):
                continue
            if len(set(scores.values())) == 1 or (scores[subject] > scores[other]) != more:
                side = "above" if more else "below"
                who = f"{subject!r} scored {side} {other!r}" if _said(_names(subject), before) else ""
                return f"that {who or 'a hit scored ' + side + ' the other'}"
    return ""


def contradiction(text: str, facts: dict[str, Any], expected: str) -> str:
    """What `text` claims that the trace (`trace_facts`) contradicts (a phrase for the verdict), or ""."""
    page = rf"({_names(expected)}|{_RIGHT_PAGE}|it\b)"
    first, read = (facts["ids"] or [""])[0], facts["read"]
    if claim := _score_claim(text, facts["scores"]):
        return claim
    if expected in facts["ids"]:
        clauses = re.split(r"[.;,:!?]|\bbut\b|\bwhile\b|\bthough\b", text)
        missing = rf"{page}\W+(\w+\W+){{0,3}}(missing|absent)|(not|never) (in|among) (the )?(hits|results)"
        ranking = r"first|top|highest|above|ahead|\bread\b"  # "not first" speaks of the ranking, not finding
        denied = any(_said(_NEGATED_FIND, c) and not _said(ranking, c) for c in clauses)
        if denied or _said(_NOTHING, text) or _said(missing, text):
            return f"that search did not find {expected!r}"
    if _affirmed(rf"{_names(expected)}{_RANKED}(first|top|1st|hit 1)\b", text):
        return f"that {expected!r} ranked first"
    if _affirmed(rf"{_names(first)}{_RANKED}(second|2nd|last|lower)\b", text):
        return f"that {first!r} ranked below {expected!r}"
    if read != expected and _affirmed(rf"\bread (the )?({_names(expected)}|{_RIGHT_PAGE})", text):
        return f"that the workflow read {expected!r}"
    if _said(r"misspel|typo|spelling|spelt", text):
        return "that the question is misspelt"
    if _said(r"\bv1\b|wrong version|other version|older version", text):
        return "that a page of another version was involved"
    if not facts["conflicts"] and _affirmed(r"production|deprecated|conflict", text):
        return f"that {read!r} conflicts with the task"
    return ""


def trace_facts(case: dict[str, Any], corpus: Corpus) -> dict[str, Any]:
    """The facts of the workflow's trace on `case` that a diagnosis can name."""
    task, docs = task_from(case), corpus.docs
    result = workflow(task, docs)
    ids = [hit["id"] for hit in result["trace"][0]["result"] or []]
    read = result["trace"][1]["decision"]["id"] if len(result["trace"]) > 1 else None
    terms = query_terms(case["question"], docs.aliases, expand=True)
    page = docs.read(read, task.version) if read else None
    return {
        "result": result,
        "ids": ids,
        "read": read,
        "scores": {page_id: shared_terms(terms, docs.read(page_id, task.version)) for page_id in ids},
        "conflicts": page is not None and conflict(task, page) is not None,
    }


def what_it_shows(facts: dict[str, Any], expected: str) -> str:
    """What the trace shows: the hits, where `expected` ranked, the scores, the page read."""
    ids = facts["ids"]
    where = f"{expected!r} hit {ids.index(expected) + 1}" if expected in ids else f"no {expected!r}"
    scored = " and ".join(f"{page} {value}" for page, value in facts["scores"].items())
    return (
        f"search returned {ids} ({where}; scores {scored}), and the workflow read {facts['read']!r} "
        "and answered with its command"
    )


def ranking_named(text: str, ids: list[str], expected: str) -> bool:
    """A retrieval reason: the first hit with a ranking word, the tie, or `expected` ranking lower."""
    first = ids[0] if ids else ""
    named_first = bool(first) and _said(_names(first), text) and _said(_RANKING, text)
    named_first |= _said(_WRONG, text) and _said(r"\brank|\bsort|\border|\btop\b|above|ahead|higher", text)
    named_lower = expected in ids[1:] and _said(_names(expected), text) and _said(_LOWER, text)
    return named_first or named_lower or _said(_TIE, text)


def step_named(text: str, ids: list[str], expected: str) -> bool:
    """A control reason: `expected` (or "the right page", "both hits") was among the hits, and a step cue."""
    found = (_said(_names(expected), text) or _said(_RIGHT_PAGE, text)) and _said(_IN_HITS, text)
    return expected in ids[1:] and (found or _said(_ALL_HITS, text)) and _said(_STEP, text)
