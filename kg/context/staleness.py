"""Nothing stale served as current: superseded decisions, deprecated or replaced specs.

A node is stale when a ``SUPERSEDES`` edge points at it (a later decision, a replacing spec) or
when its properties say so: ``status`` ``deprecated``/``superseded``/``obsolete``/``replaced``,
which ingestion sets on a document and its sections from front matter or an ADR status line
(:mod:`kg.ingest.status`). A stale node is shown only as what it is ("superseded by X", no
content), ranked below its successor, or left out when the request says so; its successor is
brought into the graph (policy-checked: a denied successor is never named).
"""

from __future__ import annotations

from kg.ingest.status import STALE_STATUSES
from kg.projections.graph_reader import NodeRow

# A stale node keeps this share of its score: still findable, never ahead of what replaced it.
STALE_FACTOR = 0.3


def stale_status(row: NodeRow) -> str:
    """``superseded``, ``deprecated``, ... or ``""`` for a current node."""
    if row.superseded_by:
        return "superseded"
    status = row.properties.get("status")
    if isinstance(status, str) and status.strip().lower() in STALE_STATUSES:
        return status.strip().lower()
    return ""


def successors(row: NodeRow) -> tuple[str, ...]:
    """The node ids that replace ``row``: SUPERSEDES edges, or a ``superseded_by`` property
    that names a node (``document:...``/``section:...``, as ingestion resolves links)."""
    if row.superseded_by:
        return row.superseded_by
    named = row.properties.get("superseded_by")
    if isinstance(named, str) and ":" in named and " " not in named:
        return (named,)
    return ()
