"""Projection of ``context_graph_usage``: one row per ContextGraphUsed (what a tool call used)."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from kg.events.context import ContextGraphUsed
from kg.events.envelope import RecordedEvent
from kg.projections.base import ProjectionContext

_INSERT = """
INSERT INTO context_graph_usage (tenant_id, project_id, context_graph_id, tool_call_id,
    usage_type, node_ids, actor, used_at, position)
SELECT x.t, x.p, x.id, x.tool, x.kind, ARRAY(SELECT jsonb_array_elements_text(x.nodes::jsonb)),
       x.actor, x.at, x.pos
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
              $7::text[], $8::timestamptz[], $9::bigint[])
       AS x(t, p, id, tool, kind, nodes, actor, at, pos)
ON CONFLICT DO NOTHING
"""


class ContextGraphUsageProjection:
    name = "context_graph_usage"
    #: what the runner reads for this projection (see ContextGraphsProjection.event_types)
    event_types = frozenset({"ContextGraphUsed"})

    async def apply(
        self, conn: asyncpg.Connection, events: Sequence[RecordedEvent], ctx: ProjectionContext
    ) -> None:
        import json

        used = [e for e in events if e.event_type == "ContextGraphUsed"]
        if not used:
            return
        rows = []
        for e in used:
            u = e.event_as(ContextGraphUsed)
            rows.append(
                (
                    e.tenant_id,
                    e.project_id,
                    u.context_graph_id,
                    u.tool_call_id,
                    u.usage_type,
                    json.dumps(list(u.node_ids)),
                    e.meta.actor,
                    e.recorded_at,
                    e.position,
                )
            )
        await conn.execute(_INSERT, *(list(col) for col in zip(*rows, strict=True)))

    async def reset(self, conn: asyncpg.Connection) -> None:
        await conn.execute("TRUNCATE context_graph_usage")

    async def prepare_bulk(self, conn: asyncpg.Connection) -> None:
        return None

    async def finish_rebuild(self, conn: asyncpg.Connection) -> None:
        return None
