"""The docuctl tools' corpus: `search` ranks one version's pages by how many query terms (glossary aliases
added if asked) title and text hold, 0 dropped, ties to the smaller id; `read` returns a copy of one page."""

from collections.abc import Iterable, Mapping

from labkit.baseline.task import VERSIONS
from labkit.core.text import words

Page = dict[str, str]


def query_terms(query: str, aliases: Mapping[str, str], *, expand: bool) -> set[str]:
    """The terms a query searches for: its words, plus each word's glossary term if `expand`."""
    terms = words(query)
    if expand:
        terms |= {aliases[term] for term in tuple(terms) if term in aliases}
    return terms


def shared_terms(terms: set[str], page: Page) -> int:
    """How many of `terms` a page's title and text hold: what a search ranks by."""
    return len(terms & words(page["title"] + " " + page["text"]))


class Documents:
    """Pages `{id, version, title, text, command}` (unique ids); `aliases`: a word -> its glossary term."""

    def __init__(self, pages: Iterable[Page], aliases: Mapping[str, str] | None = None):
        self.pages: list[Page] = [dict(page) for page in pages]
        self.aliases: dict[str, str] = dict(aliases or {})
        self._by_id = {page["id"]: page for page in self.pages}

    def search(self, query: str, version: str, *, expand: bool = False, top_k: int = 1) -> list[Page]:
        """Up to `top_k` (1..3) `{id, title}` hits of this version, best first; ValueError otherwise.
        (serves: user — notebooks call it with their own version and top_k)"""
        if version not in VERSIONS:
            raise ValueError(f"unknown documentation version {version!r}")
        if type(top_k) is not int or top_k not in (1, 2, 3):
            raise ValueError("top_k must be 1, 2 or 3")
        terms = query_terms(query, self.aliases, expand=expand)
        ranked = sorted(
            (-shared_terms(terms, p), p["id"], p["title"]) for p in self.pages if p["version"] == version
        )
        return [{"id": id, "title": title} for found, id, title in ranked[:top_k] if found]

    def read(self, id: str, version: str) -> Page:
        """A copy of page `id`; ValueError if it does not exist in `version`.
        (serves: policy — the read tool checks its own boundary)"""
        page = self._by_id.get(id)
        if page is None or page["version"] != version:
            raise ValueError("page does not exist in the requested version")
        return dict(page)

    def vocabulary(self, version: str) -> set[str]:
        """Every term a search in `version` can match: page words and glossary aliases."""
        pages = (p["title"] + " " + p["text"] for p in self.pages if p["version"] == version)
        return set().union(*map(words, pages)) | set(self.aliases)
