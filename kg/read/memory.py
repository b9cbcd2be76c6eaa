"""Queries over the memory entities and relations in kg_nodes / kg_edges (``snap.memory``).

They return ids, ranks and relation ends only: a memory entity's name and observations are
handed out by :meth:`kg.read.governed.Governed.nodes`, after the policies (so a caller cannot
forget them), and a relation is shown only when both its ends were admitted there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from kg.config import Scope
from kg.events.memory import EDGE_PREFIX, NODE_TYPE


@dataclass(frozen=True)
class Ranked:
    node_id: str
    score: float


@dataclass(frozen=True)
class RelationRow:
    from_node: str
    to_node: str
    relation_type: str
    last_position: int


# Every entity, most connected first, then the most recently changed: what read_graph keeps
# when its budget cannot hold them all.
_INDEX = f"""
WITH ends AS (
    SELECT from_node AS node_id FROM kg_edges
     WHERE tenant_id = $1 AND project_id = $2 AND edge_type LIKE '{EDGE_PREFIX}%'
    UNION ALL
    SELECT to_node FROM kg_edges
     WHERE tenant_id = $1 AND project_id = $2 AND edge_type LIKE '{EDGE_PREFIX}%'
), degree AS (SELECT node_id, count(*) AS n FROM ends GROUP BY node_id)
SELECT n.node_id, coalesce(d.n, 0)
  FROM kg_nodes n LEFT JOIN degree d ON d.node_id = n.node_id
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_type = '{NODE_TYPE}'
 ORDER BY coalesce(d.n, 0) DESC, n.last_position DESC, n.node_id
"""

# The reference matches the query as a substring of the name, the type or an observation
# (case-insensitive): every entity it finds is found here, ranked by where the query matched
# (the whole name, in the name, the type, the observations), then by full-text rank, which
# also finds entities whose words match in another order ("coffee alice").
_SEARCH = f"""
WITH q AS (SELECT lower($3) AS s, websearch_to_tsquery('english', $3) AS ts)
SELECT n.node_id,
       8 * (lower(n.name) = q.s)::int + 4 * (strpos(lower(n.name), q.s) > 0)::int
       + 2 * (strpos(lower(n.properties ->> 'entity_type'), q.s) > 0)::int
       + (strpos(lower(n.content), q.s) > 0)::int + ts_rank(n.tsv, q.ts) AS score,
       count(*) OVER () AS matches
  FROM kg_nodes n, q
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_type = '{NODE_TYPE}'
   AND (strpos(lower(n.name), q.s) > 0
        OR strpos(lower(n.properties ->> 'entity_type'), q.s) > 0
        OR strpos(lower(n.content), q.s) > 0
        OR n.tsv @@ q.ts)
 ORDER BY score DESC, n.last_position DESC, n.node_id
 LIMIT $4
"""

_RELATIONS = f"""
SELECT from_node, to_node, properties ->> 'relation_type', last_position
  FROM kg_edges
 WHERE tenant_id = $1 AND project_id = $2 AND edge_type LIKE '{EDGE_PREFIX}%'
   AND (from_node = ANY($3::text[]) OR to_node = ANY($3::text[]))
 ORDER BY last_position DESC, edge_id
"""

_RELATION_COUNT = f"""
SELECT count(*) FROM kg_edges
 WHERE tenant_id = $1 AND project_id = $2 AND edge_type LIKE '{EDGE_PREFIX}%'
   AND (from_node = ANY($3::text[]) OR to_node = ANY($3::text[]))
"""

_RELATION_KEYS = """
SELECT e.from_node, e.edge_type, e.to_node
  FROM unnest($3::text[], $4::text[], $5::text[]) AS k(f, t, o)
  JOIN kg_edges e ON e.tenant_id = $1 AND e.project_id = $2
                 AND e.edge_id = k.f || '|' || k.t || '|' || k.o
"""


class MemoryReader:
    def __init__(self, conn: asyncpg.Connection, scope: Scope) -> None:
        self.conn = conn
        self.scope = scope

    @property
    def _ids(self) -> tuple[str, str]:
        return (self.scope.tenant_id, self.scope.project_id)

    async def ranked(self) -> list[Ranked]:
        """Every memory entity, best first (most relations, then most recently changed)."""
        rows = await self.conn.fetch(_INDEX, *self._ids)
        return [Ranked(r[0], float(r[1])) for r in rows]

    async def search(self, text: str, limit: int) -> tuple[list[Ranked], int]:
        """The ``limit`` best matches, and how many entities match in all."""
        rows = await self.conn.fetch(_SEARCH, *self._ids, text, limit)
        return [Ranked(r[0], float(r[1])) for r in rows], int(rows[0][2]) if rows else 0

    async def relations(self, node_ids: Sequence[str]) -> list[RelationRow]:
        """Memory relations with at least one end in ``node_ids``, newest first."""
        rows = await self.conn.fetch(_RELATIONS, *self._ids, list(node_ids))
        return [RelationRow(r[0], r[1], r[2] or "", int(r[3])) for r in rows]

    async def relation_count(self, node_ids: Sequence[str]) -> int:
        """How many memory relations touch ``node_ids`` (policies aside: a count only)."""
        return int(await self.conn.fetchval(_RELATION_COUNT, *self._ids, list(node_ids)))

    async def relation_keys(
        self, keys: Sequence[tuple[str, str, str]]
    ) -> set[tuple[str, str, str]]:
        """Those of ``(from node, edge type, to node)`` that are edges now."""
        if not keys:
            return set()
        cols = [list(c) for c in zip(*keys, strict=True)]
        rows = await self.conn.fetch(_RELATION_KEYS, *self._ids, *cols)
        return {(r[0], r[1], r[2]) for r in rows}
