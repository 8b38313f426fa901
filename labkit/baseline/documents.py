"""The docuctl documentation tools: `search` over an inverted index, and `read`.

Semantics (seed 000, kept exactly): a page's score is how many of the query's terms —
after alias expansion, if asked — occur among the words of its title and text; pages of
other versions are never ranked; pages scoring 0 are dropped; ties are broken by page id;
at most `top_k` (1..3) hits are returned as `{id, title}`. `read` returns a copy of a page
and refuses a page of another version, because a policy can propose any id.

The seed rescans every page for every query. Here the terms → pages index is built once,
so a query touches only the pages that share a term with it (`benchmarks/search.py`
measures both on 100,000 pages); `linear_search` keeps the seed's scan as the reference
the property tests compare against.
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


class Documents:
    """A versioned documentation corpus with `search` and `read`.

    `pages` are records `{id, version, title, text, command}` with unique ids (the fixture
    loader checks this); `aliases` maps a word to the glossary term it stands for.
    """

    def __init__(self, pages: Iterable[Page], aliases: Mapping[str, str] | None = None):
        self.pages: list[Page] = [dict(page) for page in pages]
        self.aliases: dict[str, str] = dict(aliases or {})
        self._by_id: dict[str, Page] = {page["id"]: page for page in self.pages}
        # Per version: pages sorted by id, so a page's position is its tie-break rank, and
        # each term's postings are an array of those positions.
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

    def search(
        self, query: str, version: str, *, expand: bool = False, top_k: int = 1
    ) -> list[dict[str, str]]:
        """Rank this version's pages by shared terms; return up to `top_k` `{id, title}` hits.

        Raises ValueError for an unknown version or a top_k outside 1..3.
        """
        _check_search(version, top_k)
        postings = self._index[version]
        hits = [postings[t] for t in query_terms(query, self.aliases, expand=expand) if t in postings]
        if not hits:
            return []
        ranked = self._ranked[version]
        # Each page's score is how often its position occurs across the query terms'
        # postings. Measured on 100,000 pages (benchmarks/search.py): a Counter over string
        # ids was only 12x faster than the seed's scan, because frequent words have long
        # postings; counting positions with numpy brings it past the 100x goal.
        scores = np.bincount(np.concatenate(hits), minlength=len(ranked))
        # Best score first, then lowest position (= smallest id): one sortable key per page.
        keys = scores * len(ranked) + (len(ranked) - 1 - np.arange(len(ranked)))
        k = min(top_k, int(np.count_nonzero(scores)))
        best = np.argpartition(keys, -k)[-k:]
        best = best[np.argsort(-keys[best])]
        return [{"id": ranked[i]["id"], "title": ranked[i]["title"]} for i in best.tolist()]

    def read(self, id: str, version: str) -> Page:
        """Return a copy of page `id`; ValueError if it does not exist in `version`."""
        page = self._by_id.get(id)
        if page is None or page["version"] != version:
            raise ValueError("page does not exist in the requested version")
        return dict(page)

    def vocabulary(self, version: str) -> set[str]:
        """Every term a search in `version` can match: page words and glossary aliases."""
        return set(self._index[version]) | set(self.aliases)


def score(terms: set[str], page: Page) -> int:
    """How many of the query's `terms` a page's title and text hold: what `linear_search` ranks by
    (and `Documents.search` counts from its index)."""
    return len(terms & words(page["title"] + " " + page["text"]))


def linear_search(
    pages: Iterable[Page],
    aliases: Mapping[str, str],
    query: str,
    version: str,
    *,
    expand: bool = False,
    top_k: int = 1,
) -> list[dict[str, str]]:
    """The seed's search: rescan and re-tokenise every page. Reference for tests and benchmarks."""
    _check_search(version, top_k)
    terms = query_terms(query, aliases, expand=expand)
    ranked = []
    for page in pages:
        if page["version"] != version:
            continue
        found = score(terms, page)
        if found:
            ranked.append((-found, page["id"], page["title"]))
    return [{"id": id, "title": title} for _, id, title in sorted(ranked)[:top_k]]
