"""Projection of ``context_graphs``: one row per ContextGraphBuilt (what an agent was shown)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import asyncpg

from kg.events.context import ContextGraphBuilt
from kg.events.envelope import RecordedEvent
from kg.projections.base import ProjectionContext

_INSERT = """
INSERT INTO context_graphs (tenant_id, project_id, context_graph_id, mode, request,
    as_of_position, node_ids, edge_ids, content_hash, policies_applied, excluded_count,
    redacted_count, session_id, task_id, actor, tool_call_id, built_at, position)
SELECT x.t, x.p, x.id, x.mode, x.req::jsonb, x.asof,
       ARRAY(SELECT jsonb_array_elements_text(x.nodes::jsonb)),
       ARRAY(SELECT jsonb_array_elements_text(x.edges::jsonb)), x.h,
       ARRAY(SELECT jsonb_array_elements_text(x.pol::jsonb)), x.exc, x.red, x.sess, x.task,
       x.actor, x.tool, x.at, x.pos
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[],
              $7::text[], $8::text[], $9::text[], $10::text[], $11::int[], $12::int[],
              $13::text[], $14::text[], $15::text[], $16::text[], $17::timestamptz[],
              $18::bigint[])
       AS x(t, p, id, mode, req, asof, nodes, edges, h, pol, exc, red, sess, task, actor, tool,
            at, pos)
ON CONFLICT DO NOTHING
"""


class ContextGraphsProjection:
    name = "context_graphs"
    #: what the runner reads for this projection: in a rebuild's lane beside kg_nodes' it then
    #: skips the node events (most of a log) instead of reading and decoding them
    event_types = frozenset({"ContextGraphBuilt"})

    async def apply(
        self, conn: asyncpg.Connection, events: Sequence[RecordedEvent], ctx: ProjectionContext
    ) -> None:
        built = [e for e in events if e.event_type == "ContextGraphBuilt"]
        if not built:
            return
        rows = []
        for e in built:
            p, m = e.event_as(ContextGraphBuilt), e.meta
            rows.append(
                (
                    e.tenant_id,
                    e.project_id,
                    p.context_graph_id,
                    p.mode,
                    json.dumps(p.request, sort_keys=True),
                    p.as_of_position,
                    json.dumps(list(p.node_ids)),
                    json.dumps(list(p.edge_ids)),
                    p.content_hash,
                    json.dumps(list(p.policies_applied)),
                    p.excluded_count,
                    p.redacted_count,
                    p.request.get("session_id") or m.session_id,
                    p.request.get("task_id"),
                    m.actor,
                    m.tool_call_id,
                    e.recorded_at,
                    e.position,
                )
            )
        await conn.execute(_INSERT, *(list(col) for col in zip(*rows, strict=True)))

    async def reset(self, conn: asyncpg.Connection) -> None:
        await conn.execute("TRUNCATE context_graphs")

    async def prepare_bulk(self, conn: asyncpg.Connection) -> None:
        return None

    async def finish_rebuild(self, conn: asyncpg.Connection) -> None:
        return None
