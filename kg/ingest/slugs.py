"""GitHub-compatible heading anchors (the rules of github-slugger).

Lowercase, drop every character that is not a letter, digit, ``-``, ``_`` or space, then turn
each space into ``-`` (runs are not collapsed, as on GitHub). Repeated slugs in one file get
``-1``, ``-2``, ... in document order, so the ids of earlier headings never change when a later
duplicate is added.

Unlike GitHub, a slug is cut at :data:`MAX_SLUG` characters (link anchors are cut the same way)
so that a paragraph accidentally turned into a setext heading still gives a usable node id.
"""

from __future__ import annotations

import re

_DROP = re.compile(r"[^\w\- ]")
MAX_SLUG = 200


def slugify(text: str) -> str:
    return _DROP.sub("", text.strip().lower()).replace(" ", "-")[:MAX_SLUG]


class Slugger:
    """Assigns distinct slugs within one document, exactly like GitHub's slugger."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def slug(self, text: str) -> str:
        original = slugify(text)
        result = original
        while result in self._seen:
            self._seen[original] += 1
            result = f"{original}-{self._seen[original]}"
        self._seen[result] = 0
        return result
