"""Read queries over kg_nodes / kg_edges for the context builder: one round trip per call.

The reader runs inside the caller's transaction (REPEATABLE READ, so every query of one build
sees the same snapshot, consistent with the checkpoint it reports as the as-of position).
Every query filters on tenant and project in SQL; RLS backs that up on the application role.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from kg.config import Scope
from kg.policies.model import Policy, PolicyRule, document_paths
from kg.projections.embedding_backlog import EmbeddingState, embedding_state
from kg.search import search_in_transaction


@dataclass(frozen=True)
class NodeRow:
    node_id: str
    node_type: str
    name: str
    content: str
    properties: dict[str, Any]
    labels: tuple[str, ...]
    updated_at: datetime
    governed_by: tuple[str, ...]
    #: nodes with a SUPERSEDES edge to this one (a later decision, a replacing spec)
    superseded_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class EdgeRow:
    edge_id: str
    edge_type: str
    from_node: str
    to_node: str
    weight: float


_NODE_COLS = """n.node_id, n.node_type, n.name, n.content, n.properties, n.labels, n.updated_at,
       ARRAY(SELECT g.to_node FROM kg_edges g
              WHERE g.tenant_id = n.tenant_id AND g.project_id = n.project_id
                AND g.from_node = n.node_id AND g.edge_type = 'GOVERNED_BY'
              ORDER BY g.to_node) AS governed_by,
       ARRAY(SELECT s.from_node FROM kg_edges s
              WHERE s.tenant_id = n.tenant_id AND s.project_id = n.project_id
                AND s.to_node = n.node_id AND s.edge_type = 'SUPERSEDES'
              ORDER BY s.from_node) AS superseded_by"""

_NODES = f"""
SELECT {_NODE_COLS}
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = ANY($3::text[])
"""

# Each frontier node contributes at most $10 edges per direction, its strongest (the edge
# indexes are ordered by weight for this), so a hub with thousands of edges costs no more than
# any other node and cannot crowd everything else out of the hop; then the hop keeps the $7
# strongest overall. The order (weight, edge id) is total: a hop is deterministic.
_NEIGHBOURS = f"""
WITH frontier AS (SELECT DISTINCT unnest($3::text[]) AS node_id), hop AS (
    SELECT o.* FROM frontier f CROSS JOIN LATERAL (
        SELECT e.edge_id, e.edge_type, e.from_node, e.to_node, e.weight, e.to_node AS other
          FROM kg_edges e
         WHERE e.tenant_id = $1 AND e.project_id = $2 AND e.from_node = f.node_id
           AND ($4::text[] IS NULL OR e.edge_type = ANY($4)) AND NOT (e.to_node = ANY($6))
         ORDER BY e.weight DESC, e.edge_id LIMIT $10) o
     WHERE $8::bool
    UNION ALL
    SELECT i.* FROM frontier f CROSS JOIN LATERAL (
        SELECT e.edge_id, e.edge_type, e.from_node, e.to_node, e.weight, e.from_node AS other
          FROM kg_edges e
         WHERE e.tenant_id = $1 AND e.project_id = $2 AND e.to_node = f.node_id
           AND ($4::text[] IS NULL OR e.edge_type = ANY($4)) AND NOT (e.from_node = ANY($6))
         ORDER BY e.weight DESC, e.edge_id LIMIT $10) i
     WHERE $9::bool
), picked AS (
    SELECT * FROM hop ORDER BY weight DESC, edge_id LIMIT $7
)
SELECT p.edge_id, p.edge_type, p.from_node, p.to_node, p.weight, {_NODE_COLS}
  FROM picked p
  JOIN kg_nodes n ON n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = p.other
 WHERE ($5::text[] IS NULL OR n.node_type = ANY($5))
 ORDER BY p.weight DESC, p.edge_id
"""

# Extracted entities by the key their id ends with (``apiobject:charge`` has key ``charge``).
_ENTITIES_KEYED = f"""
SELECT {_NODE_COLS}
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.labels @> ARRAY['Entity']
   AND substr(n.node_id, strpos(n.node_id, ':') + 1) = ANY($3::text[])
 ORDER BY n.node_id
"""

_REQUIREMENTS_NAMED = f"""
SELECT {_NODE_COLS}
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_type = 'Requirement'
   AND n.name = ANY($3::text[]) AND n.node_id LIKE 'requirement:%#%'
 ORDER BY n.node_id
"""

_EDGES_AMONG = """
SELECT edge_id, edge_type, from_node, to_node, weight
  FROM kg_edges
 WHERE tenant_id = $1 AND project_id = $2
   AND from_node = ANY($3::text[]) AND to_node = ANY($3::text[])
   AND ($4::text[] IS NULL OR edge_type = ANY($4))
 ORDER BY edge_id
"""

_POLICIES = """
SELECT node_id, name, properties -> 'rule' AS rule, project_id, last_position,
       coalesce(properties ->> 'origin', '') AS origin, content
  FROM kg_nodes
 WHERE tenant_id = $1 AND node_type = 'Policy' AND properties ? 'rule'
   AND (project_id = $2 OR properties -> 'rule' ->> 'scope' = 'tenant')
 ORDER BY node_id
"""

# The documents of some types (by id), for policies that select by type (their sections).
_DOCUMENT_TYPES = """
SELECT node_id, node_type FROM kg_nodes
 WHERE tenant_id = $1 AND project_id = $2 AND node_type = ANY($3::text[])
   AND node_id LIKE 'document:%'
"""

# Every node of the project as policies see it: the inputs of a verdict, no content.
_SUBJECTS = """
SELECT n.node_id, n.node_type, n.labels,
       ARRAY(SELECT g.to_node FROM kg_edges g
              WHERE g.tenant_id = n.tenant_id AND g.project_id = n.project_id
                AND g.from_node = n.node_id AND g.edge_type = 'GOVERNED_BY'
              ORDER BY g.to_node) AS governed_by
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2
 ORDER BY n.node_id
"""

# Recency is measured against the project's newest node change, not the wall clock and not the
# log head: building (and logging) a context graph does not age the graph it was built from.
_AS_OF = """
SELECT c.position,
       (SELECT max(n.updated_at) FROM kg_nodes n WHERE n.tenant_id = $1 AND n.project_id = $2) AS at
  FROM projection_checkpoints c WHERE c.tenant_id = $1 AND c.name = 'kg_nodes'
"""


def _node(row: asyncpg.Record, offset: int = 0) -> NodeRow:
    r = list(row.values())[offset:]
    return NodeRow(r[0], r[1], r[2], r[3], r[4], tuple(r[5]), r[6], tuple(r[7]), tuple(r[8]))


def _opt(values: Sequence[str]) -> list[str] | None:
    return list(values) if values else None


class GraphReader:
    def __init__(self, conn: asyncpg.Connection, scope: Scope) -> None:
        self.conn = conn
        self.scope = scope

    async def as_of(self) -> tuple[int, datetime | None]:
        """The position in the tenant's log that the projection reflects, and the time of the
        project's newest node change."""
        row = await self.conn.fetchrow(_AS_OF, self.scope.tenant_id, self.scope.project_id)
        if row is None:
            return 0, None
        return int(row["position"]), row["at"]

    async def policies(self) -> list[Policy]:
        rows = await self.conn.fetch(_POLICIES, self.scope.tenant_id, self.scope.project_id)
        return [
            Policy(
                r["node_id"],
                r["name"],
                PolicyRule.model_validate(r["rule"]),
                r["project_id"],
                r["last_position"],
                r["origin"],
                r["content"],
            )
            for r in rows
        ]

    async def document_types(self, types: Sequence[str]) -> dict[str, str]:
        """The type of each document of ``types``, by its file path: what a policy selecting
        those types needs to cover the documents' sections (:class:`kg.policies.evaluate.
        Governance`)."""
        if not types:
            return {}
        rows = await self.conn.fetch(
            _DOCUMENT_TYPES, self.scope.tenant_id, self.scope.project_id, list(types)
        )
        return document_paths((r[0], r[1]) for r in rows)

    async def policy_subjects(self) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
        """``(node id, type, labels, governing policies)`` of every node of the project, by
        id: what a policy verdict needs and nothing else (``kg policy test``)."""
        rows = await self.conn.fetch(_SUBJECTS, self.scope.tenant_id, self.scope.project_id)
        return [(r[0], r[1], tuple(r[2]), tuple(r[3])) for r in rows]

    async def subjects_of(
        self, node_ids: Sequence[str]
    ) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
        """:meth:`policy_subjects` of ``node_ids`` only (those that exist)."""
        rows = await self.conn.fetch(
            _SUBJECTS.replace("ORDER BY n.node_id", "AND n.node_id = ANY($3::text[])"),
            self.scope.tenant_id,
            self.scope.project_id,
            list(node_ids),
        )
        return [(r[0], r[1], tuple(r[2]), tuple(r[3])) for r in rows]

    async def nodes(self, node_ids: Sequence[str]) -> list[NodeRow]:
        rows = await self.conn.fetch(
            _NODES, self.scope.tenant_id, self.scope.project_id, list(node_ids)
        )
        return [_node(r) for r in rows]

    async def requirements_named(self, names: Sequence[str]) -> list[NodeRow]:
        """Requirement nodes whose canonical id (their name) is one of ``names``, whichever
        document defines them (``requirement:{path}#{id}``), by node id."""
        rows = await self.conn.fetch(
            _REQUIREMENTS_NAMED, self.scope.tenant_id, self.scope.project_id, list(names)
        )
        return [_node(r) for r in rows]

    async def entities_keyed(self, keys: Sequence[str]) -> list[NodeRow]:
        """Extracted entities whose normalised name is one of ``keys`` (any entity type)."""
        rows = await self.conn.fetch(
            _ENTITIES_KEYED, self.scope.tenant_id, self.scope.project_id, list(keys)
        )
        return [_node(r) for r in rows]

    async def neighbours(
        self,
        frontier: Sequence[str],
        *,
        exclude: Sequence[str],
        edge_types: Sequence[str],
        node_types: Sequence[str],
        limit: int,
        direction: str = "both",
        fanout: int | None = None,
    ) -> list[tuple[EdgeRow, NodeRow]]:
        """Edges touching the frontier (``out``, ``in`` or ``both`` directions) with the node at
        their other end, strongest first, skipping nodes in ``exclude`` (already reached).

        ``fanout`` caps the edges taken from any one frontier node per direction (default: no
        cap beyond ``limit``); a path search must see every edge, a context build must not
        drown in a hub's."""
        rows = await self.conn.fetch(
            _NEIGHBOURS,
            self.scope.tenant_id,
            self.scope.project_id,
            list(frontier),
            _opt(edge_types),
            _opt(node_types),
            list(exclude),
            limit,
            direction in ("out", "both"),
            direction in ("in", "both"),
            min(fanout or limit, limit),
        )
        return [(EdgeRow(r[0], r[1], r[2], r[3], float(r[4])), _node(r, 5)) for r in rows]

    async def edges_among(
        self, node_ids: Sequence[str], edge_types: Sequence[str]
    ) -> list[EdgeRow]:
        rows = await self.conn.fetch(
            _EDGES_AMONG,
            self.scope.tenant_id,
            self.scope.project_id,
            list(node_ids),
            _opt(edge_types),
        )
        return [EdgeRow(r[0], r[1], r[2], r[3], float(r[4])) for r in rows]

    async def semantic(
        self, text: str, vector: str | None, k: int, node_types: Sequence[str]
    ) -> list[tuple[str, float, float]]:
        """The ``k`` best hybrid (vector + full-text) matches for a task text, best first:
        (node id, vector similarity or 0 when only full text found it, fused score); full-text
        matches only when ``vector`` is None (the embedder could not be used)."""
        mode = "fulltext" if vector is None else "hybrid"
        hits = await search_in_transaction(
            self.conn, self.scope, text, mode, _opt(node_types), k, vector, max(4 * k, 40)
        )
        return [(h.node_id, h.similarity or 0.0, h.score) for h in hits]

    async def embedding_state(self) -> EmbeddingState:
        """The index's model and how many of the project's nodes wait for a vector."""
        return await embedding_state(self.conn, self.scope)


# For other readers of kg_nodes that return NodeRows (kg.projections.browse_reader).
NODE_COLUMNS = _NODE_COLS
node_row = _node
