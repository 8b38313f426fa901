"""Text helpers: one tokeniser (`words`) and one way to cut a string (`shorten`)."""

import re

_STOPWORDS = frozenset("a an and are can do for how i in is it me my of on the to what with".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """The content words of `text`: case-folded runs of ASCII letters and digits, stop words removed."""
    return set(_TOKEN.findall(text.casefold())) - _STOPWORDS


def shorten(text: str, limit: int) -> str:
    """`text` if it has at most `limit` (>= 1) characters, else its first `limit - 1` and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
