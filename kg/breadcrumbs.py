"""Where a node sits in its document: ``docs/prd.md > Non-Functional Requirements > Performance``.

Shared by the context rendering (so a passage says where it comes from) and the embedding text
(so a section's vector knows its document and headings, not only its own words).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEPARATOR = " > "


def breadcrumb(node_id: str, name: str, properties: Mapping[str, Any]) -> str:
    """The heading path of a Markdown section (file, ancestor headings, its own heading); empty
    for any other node."""
    kind, _, rest = node_id.partition(":")
    if kind != "section" or "#" not in rest:
        return ""
    path = rest.rsplit("#", 1)[0]
    parents = properties.get("path")
    headings = [str(h) for h in parents] if isinstance(parents, list) else []
    return SEPARATOR.join([path, *headings, name])


def headings_above(node_id: str, properties: Mapping[str, Any], limit: int | None = None) -> str:
    """The headings above a Markdown section (``Product requirements > Non-Functional
    Requirements``): its breadcrumb without the file, which its id names, and without its own
    heading, which its name is. What a context graph shows, where every token counts."""
    if not breadcrumb(node_id, "", properties):
        return ""
    parents = properties.get("path")
    if not isinstance(parents, list):
        return ""
    return shortened([str(h) for h in parents], limit)


ELLIPSIS = "\u2026"


def shortened(headings: list[str], limit: int | None) -> str:
    """``headings`` joined, within ``limit`` characters when given: the outermost heading (the
    document's title) and the innermost (the section's parent), each cut at a word, the ones
    between elided. The id names the file and the anchor, so the title may be cut first; the
    parent says what the section is part of; the middle is what an agent needs least."""
    whole = SEPARATOR.join(headings)
    if limit is None or len(whole) <= limit:
        return whole
    if len(headings) == 1:
        return _cut(headings[0], limit)
    first, last = headings[0], headings[-1]
    middle = [ELLIPSIS] if len(headings) > 2 else []
    room = limit - len(SEPARATOR) * (1 + len(middle)) - len(middle)
    first = _cut(first, max(room // 3, room - len(last)))  # the id names the file already
    last = _cut(last, room - len(first))
    return SEPARATOR.join([first, *middle, last])


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: max(1, limit - 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-\u2014") + ELLIPSIS
