"""Read queries for browsing the graph as a tree (MCP resources): keyset pages, a document's
sections in order, decisions by day. One round trip each; tenant and project filtered in SQL."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import asyncpg

from kg.config import Scope
from kg.projections.graph_reader import NODE_COLUMNS, NodeRow, node_row

# Browsable roots: documents, extracted entities and decisions, in node id order.
_PAGE = f"""
SELECT {NODE_COLUMNS}
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_id > $3
   AND (n.node_id LIKE 'document:%' OR n.node_type = 'Decision' OR n.labels @> ARRAY['Entity'])
 ORDER BY n.node_id
 LIMIT $4
"""

# A document's sections in the order they were first written (heading order for a file
# ingested in one go; a heading added later comes after the others).
_CONTAINED = f"""
SELECT {NODE_COLUMNS}
  FROM kg_edges e
  JOIN kg_nodes n ON n.tenant_id = e.tenant_id AND n.project_id = e.project_id
                 AND n.node_id = e.to_node
 WHERE e.tenant_id = $1 AND e.project_id = $2 AND e.from_node = $3 AND e.edge_type = 'CONTAINS'
 ORDER BY n.first_position, n.node_id
 LIMIT $4
"""

_DECISIONS = f"""
SELECT {NODE_COLUMNS}, (n.created_at AT TIME ZONE 'UTC')::date AS day
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_type = 'Decision'
   AND ($3::date IS NULL OR (n.created_at AT TIME ZONE 'UTC')::date = $3)
 ORDER BY n.created_at DESC, n.node_id
 LIMIT $4
"""


# Completion candidates: nodes whose id starts with a prefix, in id order.
_PREFIXED = f"""
SELECT {NODE_COLUMNS}
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND starts_with(n.node_id, $3)
 ORDER BY n.node_id
 LIMIT $4
"""

_ENTITY_PREFIXES = """
SELECT DISTINCT split_part(node_id, ':', 1) AS prefix
  FROM kg_nodes
 WHERE tenant_id = $1 AND project_id = $2 AND labels @> ARRAY['Entity']
 ORDER BY 1
"""


class BrowseReader:
    def __init__(self, conn: asyncpg.Connection, scope: Scope) -> None:
        self.conn = conn
        self.scope = scope

    async def page(self, after: str, limit: int) -> list[NodeRow]:
        rows = await self.conn.fetch(
            _PAGE, self.scope.tenant_id, self.scope.project_id, after, limit
        )
        return [node_row(r) for r in rows]

    async def contained(self, node_id: str, limit: int) -> list[NodeRow]:
        rows = await self.conn.fetch(
            _CONTAINED, self.scope.tenant_id, self.scope.project_id, node_id, limit
        )
        return [node_row(r) for r in rows]

    async def decisions(self, day: date | None, limit: int) -> Sequence[tuple[NodeRow, date]]:
        """Decisions, newest first (of one UTC day, when given), each with its day."""
        rows = await self.conn.fetch(
            _DECISIONS, self.scope.tenant_id, self.scope.project_id, day, limit
        )
        return [(node_row(r), r["day"]) for r in rows]

    async def prefixed(self, prefix: str, limit: int) -> list[NodeRow]:
        rows = await self.conn.fetch(
            _PREFIXED, self.scope.tenant_id, self.scope.project_id, prefix, limit
        )
        return [node_row(r) for r in rows]

    async def entity_prefixes(self) -> list[str]:
        """The id prefixes of extracted entities (``apiobject``, ``endpoint``, ...)."""
        rows = await self.conn.fetch(_ENTITY_PREFIXES, self.scope.tenant_id, self.scope.project_id)
        return [r["prefix"] for r in rows]
