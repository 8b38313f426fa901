"""Tokenisation shared by search, routing and grading.

One function, so that the keyword route, the search index and any checker agree on what a
"word" is: lower-cased runs of ASCII letters and digits, minus a short stop list.
"""

from __future__ import annotations

import re

STOPWORDS = frozenset("a an and are can do for how i in is it me my of on the to what with".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """Return the set of content words in `text` (case-folded, stop words removed)."""
    return set(_TOKEN.findall(text.casefold())) - STOPWORDS
