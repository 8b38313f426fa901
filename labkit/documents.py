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

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from labkit.task import VERSIONS
from labkit.text import words

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
        self._index: dict[str, dict[str, list[str]]] = {v: defaultdict(list) for v in VERSIONS}
        for page in self.pages:
            postings = self._index[page["version"]]
            for term in words(page["title"] + " " + page["text"]):
                postings[term].append(page["id"])

    def search(
        self, query: str, version: str, *, expand: bool = False, top_k: int = 1
    ) -> list[dict[str, str]]:
        """Rank this version's pages by shared terms; return up to `top_k` `{id, title}` hits.

        Raises ValueError for an unknown version or a top_k outside 1..3.
        """
        _check_search(version, top_k)
        postings = self._index[version]
        scores: Counter[str] = Counter()
        for term in query_terms(query, self.aliases, expand=expand):
            scores.update(postings.get(term, ()))
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:top_k]
        return [{"id": id, "title": self._by_id[id]["title"]} for id, _ in ranked]

    def read(self, id: str, version: str) -> Page:
        """Return a copy of page `id`; ValueError if it does not exist in `version`."""
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
) -> list[dict[str, str]]:
    """The seed's search: rescan and re-tokenise every page. Reference for tests and benchmarks."""
    _check_search(version, top_k)
    terms = query_terms(query, aliases, expand=expand)
    ranked = []
    for page in pages:
        if page["version"] != version:
            continue
        score = len(terms & words(page["title"] + " " + page["text"]))
        if score:
            ranked.append((-score, page["id"], page["title"]))
    return [{"id": id, "title": title} for _, id, title in sorted(ranked)[:top_k]]


