"""Projection of ``kg_edges``: current edges; a retired node takes its edges with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import asyncpg

from kg.events.envelope import RecordedEvent
from kg.events.knowledge import EdgeAsserted, EdgeRetracted, NodeRetired
from kg.projections.base import ProjectionContext, drop_indexes, json_rows, runs
from kg.projections.normalise import MAPPED, GraphChange, graph_changes

HANDLES = frozenset({"EdgeAsserted", "EdgeRetracted", "NodeRetired"})
# Read from the log besides HANDLES: expanded into EdgeAsserted changes by graph_changes.
BATCHED = frozenset({"EdgesAsserted"})

# A batch arrives as one JSON document (base.json_rows). The weight is read as float8 and cast,
# as the real[] parameter it replaces was: the same float4 whatever the decimal text.
_UPSERT = """
INSERT INTO kg_edges (tenant_id, project_id, edge_id, edge_type, from_node, to_node, properties,
                      weight, created_at, updated_at, last_position)
SELECT x.t, x.p, x.id, x.ty, x.f, x.tn, x.pr, x.w::real, x.ts0, x.ts1, x.pos
  FROM json_to_recordset($1::json)
       AS x(t text, p text, id text, ty text, f text, tn text, pr jsonb, w float8,
            ts0 timestamptz, ts1 timestamptz, pos bigint)
ON CONFLICT (tenant_id, project_id, edge_id) DO UPDATE SET
    properties = excluded.properties, weight = excluded.weight,
    updated_at = excluded.updated_at, last_position = excluded.last_position
"""

_RETRACT = """
DELETE FROM kg_edges e USING unnest($1::text[], $2::text[], $3::text[]) AS x(t, p, id)
 WHERE e.tenant_id = x.t AND e.project_id = x.p AND e.edge_id = x.id
"""

# kg_edges' secondary indexes, exactly as the migrations create them (0002, 0005, 0008, 0021; a test
# compares the definitions after a rebuild with the migrations'). Maintaining five B-trees per
# inserted row was most of the database's share of a rebuild; building each once over the whole
# table is several times cheaper. Only the primary key stays: the upsert's ON CONFLICT needs it.
BULK_INDEXES = {
    "kg_edges_governed_by": "CREATE INDEX IF NOT EXISTS kg_edges_governed_by ON kg_edges "
    "(tenant_id, project_id, from_node, to_node) WHERE edge_type = 'GOVERNED_BY'",
    "kg_edges_in": "CREATE INDEX IF NOT EXISTS kg_edges_in ON kg_edges "
    "(tenant_id, project_id, to_node, weight DESC, edge_id) INCLUDE (edge_type, from_node)",
    "kg_edges_supersedes": "CREATE INDEX IF NOT EXISTS kg_edges_supersedes ON kg_edges "
    "(tenant_id, project_id, to_node, from_node) WHERE edge_type = 'SUPERSEDES'",
    "kg_edges_out": "CREATE INDEX IF NOT EXISTS kg_edges_out ON kg_edges "
    "(tenant_id, project_id, from_node, weight DESC, edge_id) INCLUDE (edge_type, to_node)",
    "kg_edges_type": "CREATE INDEX IF NOT EXISTS kg_edges_type ON kg_edges "
    "(tenant_id, project_id, edge_type)",
}
# Which of BULK_INDEXES the table that ``kg_edges`` names in this connection's search path lacks.
_MISSING = """
SELECT array_agg(name) FROM unnest($1::text[]) AS name
 WHERE NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE i.indrelid = 'kg_edges'::regclass AND c.relname = name)
"""
# B-tree builds sort the table: in memory when it fits (see kg.projections.nodes).
_BUILD_MEMORY = """
SELECT set_config('maintenance_work_mem', '512MB', true)
  FROM pg_settings WHERE name = 'maintenance_work_mem' AND setting::bigint < 512 * 1024
"""

_DETACH = """
DELETE FROM kg_edges e USING unnest($1::text[], $2::text[], $3::text[]) AS x(t, p, node)
 WHERE e.tenant_id = x.t AND e.project_id = x.p AND (e.from_node = x.node OR e.to_node = x.node)
"""


def _edge_key(g: GraphChange) -> tuple[str, str, str]:
    edge = cast(EdgeAsserted | EdgeRetracted, g.change)  # see kg.projections.nodes._key
    return (g.source.tenant_id, g.source.project_id, edge.edge_id)


def _columns(keys: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    return [list(col) for col in zip(*keys, strict=True)]


class EdgesProjection:
    name = "kg_edges"
    #: what the runner reads for this projection (domain events that amount to edges included)
    event_types = HANDLES | BATCHED | MAPPED

    def __init__(self) -> None:
        # Whether this instance dropped BULK_INDEXES for a bulk catch-up (prepare_bulk) and
        # has not built them again yet: a retired node's edges are found through kg_edges_out
        # and kg_edges_in, so the first retirement replayed in bulk builds them first rather
        # than scan the table for every batch that retires a node.
        self._indexes_dropped = False

    async def apply(
        self, conn: asyncpg.Connection, events: Sequence[RecordedEvent], ctx: ProjectionContext
    ) -> None:
        mine = [g for g in graph_changes(events) if g.kind in HANDLES]
        for kind, run in runs(mine, lambda g: g.kind):
            if kind == "EdgeAsserted":
                await self._upsert(conn, run)
            elif kind == "EdgeRetracted":
                await conn.execute(_RETRACT, *_columns(list({_edge_key(g): None for g in run})))
            else:
                nodes: dict[tuple[str, str, str], None] = {}
                for g in run:
                    assert isinstance(g.change, NodeRetired)
                    nodes[(g.source.tenant_id, g.source.project_id, g.change.node_id)] = None
                if self._indexes_dropped:
                    await self.finish_rebuild(conn)
                await conn.execute(_DETACH, *_columns(list(nodes)))

    async def _upsert(self, conn: asyncpg.Connection, run: list[GraphChange]) -> None:
        first: dict[tuple[str, str, str], GraphChange] = {}
        latest: dict[tuple[str, str, str], GraphChange] = {}
        for g in run:
            key = _edge_key(g)
            first.setdefault(key, g)
            latest[key] = g
        rows = []
        for key, g in latest.items():
            edge = g.change
            assert isinstance(edge, EdgeAsserted)
            source = g.source
            rows.append(
                {
                    "t": key[0],
                    "p": key[1],
                    "id": key[2],
                    "ty": edge.edge_type,
                    "f": edge.from_node,
                    "tn": edge.to_node,
                    "pr": edge.properties,
                    "w": float(edge.weight),
                    "ts0": first[key].source.recorded_at,
                    "ts1": source.recorded_at,
                    "pos": source.position,
                }
            )
        await conn.execute(_UPSERT, json_rows(rows))

    async def reset(self, conn: asyncpg.Connection) -> None:
        await conn.execute("TRUNCATE kg_edges")
        await self.prepare_bulk(conn)

    async def prepare_bulk(self, conn: asyncpg.Connection) -> None:
        """Drop the secondary indexes, but only while the table is empty (a rebuild, a first
        import): building them again over a populated table would cost more than what a
        catch-up of part of it saves."""
        if await conn.fetchval("SELECT NOT EXISTS (SELECT 1 FROM kg_edges)"):
            await drop_indexes(conn, BULK_INDEXES)
            self._indexes_dropped = True

    async def finish_rebuild(self, conn: asyncpg.Connection) -> None:
        # Checked first, as kg_nodes' (CREATE INDEX IF NOT EXISTS would lock out writers).
        missing: list[str] | None = await conn.fetchval(_MISSING, list(BULK_INDEXES))
        if missing:
            async with conn.transaction():
                await conn.execute(_BUILD_MEMORY)
                for name in sorted(missing):
                    await conn.execute(BULK_INDEXES[name])
        self._indexes_dropped = False
