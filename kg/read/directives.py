"""The project's directives as the ranking needs them (:mod:`kg.directives`), read again only
when they change.

A ``query_directives`` call must stay within milliseconds at thousands of directives, so the
directive rows (text, scope, embedding) are read in one query and kept per (pool, tenant,
project), with the database they came from and a marker of their state: how many there are
and the newest log position among them. Counting them costs a scan of every directive's index
entry (1.5-3 ms of the server's time at 5,000), so a call first asks a question that costs a
few index probes: has the node projection taken any event that can change a node
(``NodeAsserted``, ``NodeRetired`` and the events that amount to nodes) since the rows were
last known current, and has any content been erased since? Most calls follow only other
calls, whose ``DirectivesServed`` events change no node; only a yes reads the marker, and an
erasure reads the rows again. What policies govern a directive is not cached:
:func:`governed_by` reads it per call for the directives about to be served.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import numpy as np
import numpy.typing as npt

from kg.gc_pause import settle_long_lived
from kg.projections.nodes import NodesProjection
from kg.read.reader import Snapshot

_ROWS = """
SELECT n.node_id, n.content, n.properties, n.labels, n.embedding::text AS embedding
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_type = $3
 ORDER BY n.node_id
"""
_MARKER = """
SELECT count(*) AS n, coalesce(max(last_position), 0) AS newest,
       (SELECT position FROM projection_checkpoints WHERE tenant_id = $1 AND name = 'kg_nodes')
         AS position
  FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 AND node_type = $3
"""
# Whether the node projection has taken any event that can change a node in (after, its
# checkpoint], and the newest erasure (an erasure rewrites rows in its own append): each by
# index, over the few positions a call's predecessors appended.
_CHANGED_SINCE = """
SELECT c.position, current_database() AS database,
       coalesce((SELECT max(e.position) FROM kg_events e
                  WHERE e.tenant_id = $1 AND e.event_type = 'ContentErased'), 0) AS erased,
       EXISTS (SELECT 1 FROM kg_events e
                WHERE e.tenant_id = $1 AND e.position > $2 AND e.position <= c.position
                  AND e.event_type = ANY($3::text[])) AS changed
  FROM projection_checkpoints c
 WHERE c.tenant_id = $1 AND c.name = 'kg_nodes'
"""
_NODE_EVENTS = sorted(NodesProjection.event_types)
_GOVERNED_BY = """
SELECT from_node, array_agg(to_node ORDER BY to_node) AS policies
  FROM kg_edges
 WHERE tenant_id = $1 AND project_id = $2 AND from_node = ANY($3::text[])
   AND edge_type = 'GOVERNED_BY'
 GROUP BY from_node
"""
_KEEP = 8
#: the node type of directives (kg.directives.model.DIRECTIVE; tests/read ties the two)
DIRECTIVE = "Directive"
#: the words of each condition saying when a directive applies, from its conditions, section
#: and description: kg.directives.model.when_words, given by the caller so that the read side
#: does not import the directives package that scores these rows
WhenWords = Callable[[tuple[str, ...], str, str], tuple[frozenset[str], ...]]


@dataclass(frozen=True, slots=True)
class DirectiveRow:
    node_id: str
    text: str
    strength: str
    negated: bool
    source: str
    file: str
    line: int
    globs: tuple[str, ...]
    layers: tuple[str, ...]
    languages: frozenset[str]
    frameworks: frozenset[str]
    topics: frozenset[str]
    authoritative_for: frozenset[str]
    conditions: tuple[str, ...]
    description: str
    condition_topics: tuple[frozenset[str], ...]  # the topics of each condition
    when_words: tuple[frozenset[str], ...]  # the words of each condition (kg.directives.words)
    severity: str | None
    always_apply: bool
    subject: str
    section: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Catalogue:
    position: int  # the projection's position when read (the as-of position of a result)
    rows: tuple[DirectiveRow, ...]
    vectors: npt.NDArray[np.float32] | None  # row i's unit vector (zeros when it has none)
    #: what callers derive from these rows once (kg.directives.score's index), shared by
    #: every Catalogue of the same cached rows
    memo: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass
class _Cached:
    marker: tuple[int, int]  # (directives, newest position among them)
    catalogue: Catalogue
    current_at: int  # the node projection's checkpoint at which the rows were known current
    erased: int  # the newest erasure then
    database: str  # which database they came from (a later pool can reuse a pool's id)


_cache: OrderedDict[tuple[int, str, str], _Cached] = OrderedDict()


async def load(snap: Snapshot, pool_key: int, when_words: WhenWords) -> Catalogue:
    """The directives as ``snap`` sees them."""
    conn, scope = snap.conn, snap.scope
    key = (pool_key, scope.tenant_id, scope.project_id)
    found = _cache.get(key)
    since = await conn.fetchrow(
        _CHANGED_SINCE, scope.tenant_id, -1 if found is None else found.current_at, _NODE_EVENTS
    )
    database = str(since["database"]) if since is not None else ""
    if found is not None and found.database != database:
        found = None
    # no checkpoint row yet (nothing projected in this tenant): read the marker
    position, erased = (0, 0) if since is None else (int(since["position"]), int(since["erased"]))
    if (
        found is not None
        and since is not None
        and not since["changed"]
        and erased == found.erased
        and position >= found.current_at  # not a rebuild under way
    ):
        found.current_at = position
        _cache.move_to_end(key)
        return _at(found.catalogue, position)
    mark = await conn.fetchrow(_MARKER, scope.tenant_id, scope.project_id, DIRECTIVE)
    marker = (int(mark["n"]), int(mark["newest"]))
    position = int(mark["position"] or 0)
    # An erasure rewrites the rows it touches in place (same count, same positions): after
    # one, the kept rows may hold what was erased, so they are read again.
    if found is not None and found.marker == marker and erased == found.erased:
        found.current_at, found.erased = position, erased
        _cache.move_to_end(key)
        return _at(found.catalogue, position)
    records = await conn.fetch(_ROWS, scope.tenant_id, scope.project_id, DIRECTIVE)
    rows = tuple(_row(r, when_words) for r in records)
    catalogue = Catalogue(position, rows, _vectors([r["embedding"] for r in records]))
    settle_long_lived()  # kept until the directives change: no full collection walks it
    _cache[key] = _Cached(marker, catalogue, position, erased, database)
    while len(_cache) > _KEEP:
        _cache.popitem(last=False)
    return catalogue


def _at(cached: Catalogue, position: int) -> Catalogue:
    return Catalogue(position, cached.rows, cached.vectors, cached.memo)


async def governed_by(snap: Snapshot, node_ids: list[str]) -> dict[str, tuple[str, ...]]:
    """The policies attached (GOVERNED_BY) to each of these directives."""
    if not node_ids:
        return {}
    rows = await snap.conn.fetch(
        _GOVERNED_BY, snap.scope.tenant_id, snap.scope.project_id, node_ids
    )
    return {r["from_node"]: tuple(r["policies"]) for r in rows}


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _row(r: asyncpg.Record, when_words: WhenWords) -> DirectiveRow:
    p: dict[str, Any] = dict(r["properties"])
    return DirectiveRow(
        node_id=r["node_id"],
        text=r["content"],
        strength=str(p.get("strength", "SHOULD")),
        negated=bool(p.get("negated")),
        source=str(p.get("source", "")),
        file=str(p.get("file", "")),
        line=int(p.get("line", 1) or 1),
        globs=_strs(p.get("globs")),
        layers=_strs(p.get("layers")),
        languages=frozenset(v.casefold() for v in _strs(p.get("languages"))),
        frameworks=frozenset(v.casefold() for v in _strs(p.get("frameworks"))),
        topics=frozenset(_strs(p.get("topics"))),
        authoritative_for=frozenset(_strs(p.get("authoritative_for"))),
        conditions=_strs(p.get("conditions")),
        description=str(p.get("description") or ""),
        condition_topics=tuple(frozenset(t.split()) for t in _strs(p.get("condition_topics")) if t),
        when_words=when_words(
            _strs(p.get("conditions")), str(p.get("section", "")), str(p.get("description") or "")
        ),
        severity=p.get("severity") if isinstance(p.get("severity"), str) else None,
        always_apply=bool(p.get("always_apply")),
        subject=str(p.get("subject", "")),
        section=str(p.get("section", "")),
        labels=tuple(r["labels"]),
    )


def _vectors(texts: list[str | None]) -> npt.NDArray[np.float32] | None:
    present = [t for t in texts if t]
    if not present:
        return None
    dims = present[0].count(",") + 1
    matrix = np.zeros((len(texts), dims), dtype=np.float32)
    for i, text in enumerate(texts):
        if text:
            matrix[i] = np.array(text.strip("[]").split(","), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: npt.NDArray[np.float32] = matrix / norms
    return unit
