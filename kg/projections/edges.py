"""Projection of ``kg_edges``: current edges; a retired node takes its edges with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import asyncpg

from kg.events.envelope import RecordedEvent
from kg.events.knowledge import EdgeAsserted, EdgeRetracted, NodeRetired
from kg.projections.base import ProjectionContext, json_text, runs
from kg.projections.normalise import MAPPED, GraphChange, graph_changes

HANDLES = frozenset({"EdgeAsserted", "EdgeRetracted", "NodeRetired"})
# Read from the log besides HANDLES: expanded into EdgeAsserted changes by graph_changes.
BATCHED = frozenset({"EdgesAsserted"})

_UPSERT = """
INSERT INTO kg_edges (tenant_id, project_id, edge_id, edge_type, from_node, to_node, properties,
                      weight, created_at, updated_at, last_position)
SELECT x.t, x.p, x.id, x.ty, x.f, x.tn, x.pr::jsonb, x.w, x.ts0, x.ts1, x.pos
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
              $7::text[], $8::real[], $9::timestamptz[], $10::timestamptz[], $11::bigint[])
       AS x(t, p, id, ty, f, tn, pr, w, ts0, ts1, pos)
ON CONFLICT (tenant_id, project_id, edge_id) DO UPDATE SET
    properties = excluded.properties, weight = excluded.weight,
    updated_at = excluded.updated_at, last_position = excluded.last_position
"""

_RETRACT = """
DELETE FROM kg_edges e USING unnest($1::text[], $2::text[], $3::text[]) AS x(t, p, id)
 WHERE e.tenant_id = x.t AND e.project_id = x.p AND e.edge_id = x.id
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
            rows.append(
                (
                    key[0],
                    key[1],
                    key[2],
                    edge.edge_type,
                    edge.from_node,
                    edge.to_node,
                    json_text(edge.properties),
                    float(edge.weight),
                    first[key].source.recorded_at,
                    g.source.recorded_at,
                    g.source.position,
                )
            )
        await conn.execute(_UPSERT, *_columns(rows))

    async def reset(self, conn: asyncpg.Connection) -> None:
        await conn.execute("TRUNCATE kg_edges")

    async def prepare_bulk(self, conn: asyncpg.Connection) -> None:
        return None

    async def finish_rebuild(self, conn: asyncpg.Connection) -> None:
        return None
