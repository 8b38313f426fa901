"""Text helpers shared by search, routing, grading and the error messages.

`words`: one tokeniser, so that the keyword route, the search index and any checker agree on
what a "word" is: lower-cased runs of ASCII letters and digits, minus a short stop list.

`shorten`: one way to cut a string for a message or a trace line, so that every cut looks
the same ("…" at the end) and none runs past its limit.
"""

from __future__ import annotations

import re

STOPWORDS = frozenset("a an and are can do for how i in is it me my of on the to what with".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """Return the set of content words in `text` (case-folded, stop words removed)."""
    return set(_TOKEN.findall(text.casefold())) - STOPWORDS


def shorten(text: str, limit: int) -> str:
    """`text` if it has at most `limit` characters, else its first `limit - 1` and "…".

    The result is never longer than `limit`. ValueError if `limit` is below 1 (no room even
    for the "…").
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    return text if len(text) <= limit else text[: limit - 1] + "…"
