"""Reproduce a logged context graph from the log at its as-of position (invariant 7)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kg.audit.replay import create_replay_schema, drop_replay_schema, replay, schema_pool
from kg.context.builder import BUILDER_VERSION
from kg.context.request import ContextRequest
from kg.context.service import build_in_snapshot
from kg.db.tenancy import set_tenant
from kg.errors import EmbeddingError, NotFoundError
from kg.events.context import ContextGraphBuilt
from kg.events.envelope import RecordedEvent
from kg.runtime import Runtime


@dataclass(frozen=True)
class Reproduction:
    context_graph_id: str
    as_of_position: int
    recorded_hash: str
    reproduced_hash: str
    missing_nodes: tuple[str, ...]
    extra_nodes: tuple[str, ...]
    builder_version: int = BUILDER_VERSION
    #: (position, receipt position) of erased events the graph's nodes were derived from
    erased: tuple[tuple[int, int], ...] = ()

    @property
    def matches(self) -> bool:
        return self.recorded_hash == self.reproduced_hash

    def __str__(self) -> str:
        verdict = "MATCH" if self.matches else "MISMATCH"
        if self.builder_version != BUILDER_VERSION:
            verdict += (
                f" (built by context builder version {self.builder_version}, this kg has "
                f"version {BUILDER_VERSION}: reproduce it with the kg release that built it)"
            )
        text = (
            f"{verdict}: context graph {self.context_graph_id} re-derived at position "
            f"{self.as_of_position}: recorded {self.recorded_hash[:16]}…, reproduced "
            f"{self.reproduced_hash[:16]}…"
        )
        if self.missing_nodes or self.extra_nodes:
            text += f" (missing {list(self.missing_nodes)}, extra {list(self.extra_nodes)})"
        if self.erased:
            text += (
                "; it can no longer be re-derived in full: the content of the event(s) at "
                f"position(s) {', '.join(str(p) for p, _ in self.erased)} that its nodes came "
                "from was erased (kg erase; receipt(s) at position(s) "
                f"{', '.join(sorted({str(r) for _, r in self.erased}))})"
            )
        return text


async def logged_build(rt: Runtime, context_graph_id: str) -> RecordedEvent:
    events = await rt.store.read_stream(rt.scope, f"context_graph:{context_graph_id}")
    built = [e for e in events if e.event_type == "ContextGraphBuilt"]
    if not built:
        raise NotFoundError(
            f"context graph {context_graph_id!r} is not in this project's log: use an id "
            "returned by build_context_graph (kg audit trail lists them)"
        )
    return built[0]


async def reproduce_context_graph(rt: Runtime, context_graph_id: str) -> Reproduction:
    """Replay the log up to the graph's as-of position into a scratch schema, build the same
    request there, and compare hashes. The scratch schema is dropped afterwards."""
    built = (await logged_build(rt, context_graph_id)).event_as(ContextGraphBuilt)
    request = ContextRequest.model_validate(built.request)
    embedder = None
    if built.embedder:
        embedder = rt.embedder
        if embedder.model_id != built.embedder:
            raise EmbeddingError(
                f"context graph {context_graph_id} embedded its task with {built.embedder}, "
                f"but the configured embedder is {embedder.model_id}: set KG_EMBEDDER to match"
            )
    as_of = built.as_of_position
    schema = f"kg_repro_{uuid.uuid4().hex[:12]}"
    await create_replay_schema(rt.system_pool, schema)
    try:
        await replay(rt.url, schema, rt.scope.tenant_id, as_of, rt.embedder)
        async with schema_pool(rt.url, schema) as pool:
            graph = await build_in_snapshot(pool, rt.scope, request, embedder)
    finally:
        await drop_replay_schema(rt.system_pool, schema)
    recorded, reproduced = set(built.node_ids), {n.node_id for n in graph.nodes}
    erased = await erased_sources(rt, as_of, sorted(recorded))
    return Reproduction(
        context_graph_id,
        as_of,
        built.content_hash,
        graph.content_hash,
        tuple(sorted(recorded - reproduced)),
        tuple(sorted(reproduced - recorded)),
        built.builder_version,
        erased,
    )


_ERASED_SOURCES = """
SELECT e.position, r.position AS receipt FROM kg_events e
  JOIN kg_events r ON r.tenant_id = e.tenant_id AND r.event_type = 'ContentErased'
   AND r.payload->'erased' @> jsonb_build_array(jsonb_build_object('position', e.position))
 WHERE e.tenant_id = $1 AND e.project_id = $2 AND e.position <= $3 AND e.payload ? '$content'
   AND (e.payload->>'node_id' = ANY($4) OR 'decision:' || (e.payload->>'decision_id') = ANY($4))
 ORDER BY e.position
"""


async def erased_sources(
    rt: Runtime, as_of: int, node_ids: list[str]
) -> tuple[tuple[int, int], ...]:
    """Erased events (with their receipts) up to ``as_of`` that ``node_ids`` were derived from:
    a graph built from them cannot be re-derived to the same content any more."""
    async with rt.app_pool.acquire() as conn, conn.transaction():
        await set_tenant(conn, rt.scope.tenant_id)
        rows = await conn.fetch(
            _ERASED_SOURCES, rt.scope.tenant_id, rt.scope.project_id, as_of, node_ids
        )
    return tuple((int(r["position"]), int(r["receipt"])) for r in rows)
