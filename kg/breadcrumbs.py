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


def headings_above(node_id: str, properties: Mapping[str, Any]) -> str:
    """The headings above a Markdown section (``Product requirements > Non-Functional
    Requirements``): its breadcrumb without the file, which its id names, and without its own
    heading, which its name is. What a context graph shows, where every token counts."""
    if not breadcrumb(node_id, "", properties):
        return ""
    parents = properties.get("path")
    return SEPARATOR.join(str(h) for h in parents) if isinstance(parents, list) else ""
