"""Projection of ``kg_nodes``: the current state of every node, with embedding and tsvector."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import asyncpg

from kg.breadcrumbs import breadcrumb
from kg.embeddings.base import content_hash
from kg.embeddings.cache import (
    check_index_model,
    embedding_text,
    ensure_cached,
    index_model,
    passage_texts,
)
from kg.errors import EmbeddingError
from kg.events.envelope import RecordedEvent
from kg.events.knowledge import NodeAsserted, NodeRetired
from kg.projections.base import ProjectionContext, drop_indexes, json_rows, runs
from kg.projections.normalise import MAPPED, GraphChange, graph_changes

HANDLES = frozenset({"NodeAsserted", "NodeRetired"})
HNSW_INDEX = (
    "CREATE INDEX IF NOT EXISTS kg_nodes_embedding ON kg_nodes "
    "USING hnsw (embedding vector_cosine_ops)"
)
# The full-text index, as migration 0002 creates it: GIN insertion costs more per row than
# the whole-table build (a test compares both definitions with the migration's).
GIN_INDEX = "CREATE INDEX IF NOT EXISTS kg_nodes_tsv ON kg_nodes USING gin (tsv)"
# Indexes rebuilt in bulk that are missing from the table that ``kg_nodes`` names in this
# connection's search path (an as-of replay's too).
_MISSING = """
SELECT array_agg(name) FROM unnest($1::text[]) AS name
 WHERE NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE i.indrelid = 'kg_nodes'::regclass AND c.relname = name)
"""
_BULK_INDEXES = {"kg_nodes_embedding": HNSW_INDEX, "kg_nodes_tsv": GIN_INDEX}
# The other secondary indexes (migration 0002): dropped for a bulk catch-up only while the table
# is empty (a rebuild, a first import), when one build over the whole table beats row-by-row
# upkeep; over a populated table the rebuild would cost more than the upkeep it saves.
_WHEN_EMPTY = {
    "kg_nodes_labels": "CREATE INDEX IF NOT EXISTS kg_nodes_labels ON kg_nodes USING gin (labels)",
    "kg_nodes_tenant_type": "CREATE INDEX IF NOT EXISTS kg_nodes_tenant_type ON kg_nodes "
    "(tenant_id, node_type)",
    "kg_nodes_type": "CREATE INDEX IF NOT EXISTS kg_nodes_type ON kg_nodes "
    "(tenant_id, project_id, node_type)",
    "kg_nodes_updated": "CREATE INDEX IF NOT EXISTS kg_nodes_updated ON kg_nodes "
    "(tenant_id, project_id, updated_at)",
    # migration 0019: the nodes waiting for a vector
    "kg_nodes_unembedded": "CREATE INDEX IF NOT EXISTS kg_nodes_unembedded ON kg_nodes "
    "(tenant_id, project_id) WHERE embedding IS NULL",
}
_ALL_BULK_INDEXES = _BULK_INDEXES | _WHEN_EMPTY
# The build is several times faster when the graph fits in memory: raise the session's
# maintenance_work_mem to 512 MB unless the server already allows more.
_BUILD_MEMORY = """
SELECT set_config('maintenance_work_mem', '512MB', true)
  FROM pg_settings WHERE name = 'maintenance_work_mem' AND setting::bigint < 512 * 1024
"""

# A batch arrives as one JSON document (base.json_rows); properties and labels as JSON values.
_UPSERT = """
INSERT INTO kg_nodes (tenant_id, project_id, node_id, node_type, name, properties, content,
                      labels, content_hash, embedding, tsv, created_at, updated_at,
                      first_position, last_position)
SELECT x.t, x.p, x.id, x.ty, x.nm, x.pr, x.c, ARRAY(SELECT jsonb_array_elements_text(x.lb)), x.h,
       (SELECT ec.embedding FROM embedding_cache ec
         WHERE ec.model_id = $1 AND ec.content_hash = x.h),
       setweight(to_tsvector('english', x.nm), 'A')
         || setweight(to_tsvector('english', left(x.c, 200000)), 'B'),
       x.ts0, x.ts1, x.pos0, x.pos1
  FROM json_to_recordset($2::json)
       AS x(t text, p text, id text, ty text, nm text, pr jsonb, c text, lb jsonb, h text,
            ts0 timestamptz, ts1 timestamptz, pos0 bigint, pos1 bigint)
ON CONFLICT (tenant_id, project_id, node_id) DO UPDATE SET
    node_type = excluded.node_type, name = excluded.name, properties = excluded.properties,
    content = excluded.content, labels = excluded.labels, content_hash = excluded.content_hash,
    embedding = excluded.embedding, tsv = excluded.tsv, updated_at = excluded.updated_at,
    last_position = excluded.last_position
"""

# Passages of long nodes (migration 0011): one vector per passage, from the embedding cache.
_PASSAGES_DELETE = """
DELETE FROM kg_passages p USING unnest($1::text[], $2::text[], $3::text[]) AS x(t, p, id)
 WHERE p.tenant_id = x.t AND p.project_id = x.p AND p.node_id = x.id
"""
_PASSAGES_INSERT = """
INSERT INTO kg_passages (tenant_id, project_id, node_id, ordinal, node_type, content_hash,
                         embedding)
SELECT x.t, x.p, x.id, x.o, x.ty, x.h,
       (SELECT ec.embedding FROM embedding_cache ec
         WHERE ec.model_id = $1 AND ec.content_hash = x.h)
  FROM unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[])
       AS x(t, p, id, o, ty, h)
"""

_DELETE = """
DELETE FROM kg_nodes n USING unnest($1::text[], $2::text[], $3::text[]) AS x(t, p, id)
 WHERE n.tenant_id = x.t AND n.project_id = x.p AND n.node_id = x.id
"""


def _key(g: GraphChange) -> tuple[str, str, str]:
    # A cast, not an isinstance check: a check against the union of two pydantic models went
    # through ABCMeta and was a sixth of this projection's Python time.
    node = cast(NodeAsserted | NodeRetired, g.change)
    return (g.source.tenant_id, g.source.project_id, node.node_id)


async def embed_or_degrade(
    conn: asyncpg.Connection, ctx: ProjectionContext, texts: dict[str, str]
) -> str | None:
    """Cache a vector of every text for the configured embedder; the model whose cached
    vectors the projected rows then take.

    When the embedder is unavailable (down, failing, or not the model the index holds), the
    rows are projected all the same, without the vectors that are not cached: full-text search
    and every non-semantic read go on, and the nodes wait for their vectors
    (:mod:`kg.projections.embedding_backlog`). They take only vectors of the model the index
    holds (None when it holds none yet: no vector at all), never another model's.

    With ``ctx.defer_embedding`` nothing is embedded: the rows take the cached vectors of the
    configured model and the other nodes wait for theirs (a large ingest embeds them once the
    graph is usable, :func:`kg.projections.embedding_backlog.embed_waiting`)."""
    if ctx.defer_embedding and not ctx.embedder_resting():
        try:
            await check_index_model(conn, ctx.embedder)
        except EmbeddingError as error:
            ctx.note_unavailable(error)
            return await index_model(conn)
        return ctx.embedder.model_id
    if not ctx.embedder_resting():
        try:
            await check_index_model(conn, ctx.embedder)
            await ensure_cached(conn, ctx.embedder, texts, on_embedded=ctx.note_embedded)
        except EmbeddingError as error:
            ctx.note_unavailable(error)
        else:
            ctx.note_available()
            return ctx.embedder.model_id
    return await index_model(conn)


class NodesProjection:
    name = "kg_nodes"
    #: the runner replays this projection in a lane of its own during a bulk catch-up, so that
    #: its HNSW index is built while the other projections are still replaying
    builds_index_in_bulk = True
    #: what the runner reads for this projection (domain events that amount to nodes included)
    event_types = HANDLES | MAPPED

    async def apply(
        self, conn: asyncpg.Connection, events: Sequence[RecordedEvent], ctx: ProjectionContext
    ) -> None:
        mine = [g for g in graph_changes(events) if g.kind in HANDLES]
        if not mine:
            return
        asserted = [g.change for g in mine if isinstance(g.change, NodeAsserted)]
        hashes: dict[int, str] = {}  # id(change) -> content hash of its embedding text
        passages: dict[int, list[str]] = {}  # id(change) -> hashes of its passages' texts
        model: str | None = None  # whose cached vectors the rows take
        if asserted:
            texts = {}
            for node in asserted:
                place = breadcrumb(node.node_id, node.name, node.properties or {})
                text = embedding_text(node.name, node.content, place)
                texts[hashes.setdefault(id(node), content_hash(text))] = text
                for passage in passage_texts(node.name, node.content, place):
                    texts[h := content_hash(passage)] = passage
                    passages.setdefault(id(node), []).append(h)
            model = await embed_or_degrade(conn, ctx, texts)
        for kind, run in runs(mine, lambda g: g.kind):
            keys = list({_key(g): None for g in run})
            await conn.execute(_PASSAGES_DELETE, *(list(col) for col in zip(*keys, strict=True)))
            if kind == "NodeAsserted":
                await self._upsert(conn, run, model, hashes)
                await self._passages(conn, run, model, passages)
            else:
                await conn.execute(_DELETE, *(list(col) for col in zip(*keys, strict=True)))

    async def _upsert(
        self,
        conn: asyncpg.Connection,
        run: list[GraphChange],
        model: str | None,
        hashes: dict[int, str],
    ) -> None:
        # One row per node: the last state wins; a new node's created_at is its first assertion.
        latest: dict[tuple[str, str, str], GraphChange] = {}
        first: dict[tuple[str, str, str], GraphChange] = {}
        for g in run:
            key = _key(g)
            first.setdefault(key, g)
            latest[key] = g
        rows = []
        for key, g in latest.items():
            node, e = g.change, g.source
            assert isinstance(node, NodeAsserted)
            rows.append(
                {
                    "t": e.tenant_id,
                    "p": e.project_id,
                    "id": node.node_id,
                    "ty": node.node_type,
                    "nm": node.name,
                    "pr": node.properties,
                    "c": node.content,
                    "lb": list(node.labels),
                    "h": hashes[id(node)],
                    "ts0": first[key].source.recorded_at,
                    "ts1": e.recorded_at,
                    "pos0": first[key].source.position,
                    "pos1": e.position,
                }
            )
        # An existing node keeps its created_at and first_position (not in the SET list).
        await conn.execute(_UPSERT, model, json_rows(rows))

    async def _passages(
        self,
        conn: asyncpg.Connection,
        run: list[GraphChange],
        model: str | None,
        passages: dict[int, list[str]],
    ) -> None:
        latest = {_key(g): g.change for g in run}
        cols: list[list[Any]] = [[] for _ in range(6)]
        for (tenant, project, node_id), node in latest.items():
            assert isinstance(node, NodeAsserted)
            for ordinal, h in enumerate(passages.get(id(node), ())):
                values = (tenant, project, node_id, ordinal, node.node_type, h)
                for col, value in zip(cols, values, strict=True):
                    col.append(value)
        if cols[0]:
            await conn.execute(_PASSAGES_INSERT, model, *cols)

    async def reset(self, conn: asyncpg.Connection) -> None:
        # Inserting into HNSW costs ~1 ms a row; building it once after the replay is several
        # times cheaper (GIN too, less so). The indexes come back, identical to migration
        # 0002's, in finish_rebuild.
        await conn.execute("TRUNCATE kg_nodes, kg_passages")
        await conn.execute("DELETE FROM kg_embedding_index")
        await self.prepare_bulk(conn)

    async def prepare_bulk(self, conn: asyncpg.Connection) -> None:
        await drop_indexes(conn, _BULK_INDEXES)
        if await conn.fetchval("SELECT NOT EXISTS (SELECT 1 FROM kg_nodes)"):
            await drop_indexes(conn, _WHEN_EMPTY)

    async def finish_rebuild(self, conn: asyncpg.Connection) -> None:
        # Checked first: CREATE INDEX IF NOT EXISTS would lock out writers even when the index
        # exists, and every runner's first catch-up calls this.
        missing: list[str] | None = await conn.fetchval(_MISSING, list(_ALL_BULK_INDEXES))
        if not missing:
            return
        async with conn.transaction():
            await conn.execute(_BUILD_MEMORY)
            # The quick builds first, the HNSW index (most of the time) last.
            for name in sorted(missing, key=lambda n: n == "kg_nodes_embedding"):
                await conn.execute(_ALL_BULK_INDEXES[name])
