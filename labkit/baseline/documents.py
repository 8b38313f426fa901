"""The docuctl tools: `search` over an inverted index, and `read` (a copy, of one version only).

A page's score is how many of the query's terms (glossary aliases added if asked) its title and
text hold; pages scoring 0 drop, ties go to the smaller id. `linear_search` rescans every page: the
reference the index is tested and benchmarked against (`benchmarks/search.py`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from labkit.baseline.task import VERSIONS
from labkit.core.text import words

Page = dict[str, str]


def _check_search(version: str, top_k: object) -> None:
    if version not in VERSIONS:
        raise ValueError(f"unknown documentation version {version!r}")
    if type(top_k) is not int or top_k not in (1, 2, 3):
        raise ValueError("top_k must be 1, 2 or 3")


def query_terms(query: str, aliases: Mapping[str, str], *, expand: bool) -> set[str]:
    """The terms a query searches for: its words, plus each word's glossary term if `expand`."""
    terms = words(query)
    if expand:
        terms |= {aliases[term] for term in tuple(terms) if term in aliases}
    return terms


def score(terms: set[str], page: Page) -> int:
    """How many of `terms` a page's title and text hold: what a search ranks by."""
    return len(terms & words(page["title"] + " " + page["text"]))


class Documents:
    """A versioned corpus of pages `{id, version, title, text, command}` (unique ids), with
    `aliases` mapping a word to the glossary term it stands for."""

    def __init__(self, pages: Iterable[Page], aliases: Mapping[str, str] | None = None):
        self.pages: list[Page] = [dict(page) for page in pages]
        self.aliases: dict[str, str] = dict(aliases or {})
        self._by_id = {page["id"]: page for page in self.pages}
        # Per version: the pages sorted by id (a page's position is its tie-break rank) and, per
        # term, the positions of the pages holding it.
        self._ranked: dict[str, list[Page]] = {}
        self._index: dict[str, dict[str, np.ndarray]] = {}
        for version in VERSIONS:
            ranked = sorted((p for p in self.pages if p["version"] == version), key=lambda p: p["id"])
            postings: dict[str, list[int]] = defaultdict(list)
            for position, page in enumerate(ranked):
                for term in words(page["title"] + " " + page["text"]):
                    postings[term].append(position)
            self._ranked[version] = ranked
            self._index[version] = {t: np.array(p, dtype=np.int64) for t, p in postings.items()}

    def search(self, query: str, version: str, *, expand: bool = False, top_k: int = 1) -> list[Page]:
        """Up to `top_k` `{id, title}` hits of this version, best first; ValueError for an
        unknown version or a top_k outside 1..3."""
        _check_search(version, top_k)
        postings = self._index[version]
        hits = [postings[t] for t in query_terms(query, self.aliases, expand=expand) if t in postings]
        if not hits:
            return []
        ranked = self._ranked[version]
        # A page's score is how often its position occurs in the terms' postings (numpy counts
        # them: past 100x the rescan on 100,000 pages, where a Counter of ids reached 12x).
        scores = np.bincount(np.concatenate(hits), minlength=len(ranked))
        keys = scores * len(ranked) + (len(ranked) - 1 - np.arange(len(ranked)))  # score, then id
        k = min(top_k, int(np.count_nonzero(scores)))
        best = np.argpartition(keys, -k)[-k:]
        best = best[np.argsort(-keys[best])]
        return [{"id": ranked[i]["id"], "title": ranked[i]["title"]} for i in best.tolist()]

    def read(self, id: str, version: str) -> Page:
        """A copy of page `id`; ValueError if it does not exist in `version`."""
        page = self._by_id.get(id)
        if page is None or page["version"] != version:
            raise ValueError("page does not exist in the requested version")
        return dict(page)

    def vocabulary(self, version: str) -> set[str]:
        """Every term a search in `version` can match: page words and glossary aliases."""
        return set(self._index[version]) | set(self.aliases)


def linear_search(
    pages: Iterable[Page],
    aliases: Mapping[str, str],
    query: str,
    version: str,
    *,
    expand: bool = False,
    top_k: int = 1,
) -> list[Page]:
    """`Documents.search` by rescanning and re-tokenising every page: the reference."""
    _check_search(version, top_k)
    terms = query_terms(query, aliases, expand=expand)
    ranked = sorted(
        (-score(terms, page), page["id"], page["title"]) for page in pages if page["version"] == version
    )
    return [{"id": id, "title": title} for found, id, title in ranked[:top_k] if found]
