"""Replay the log up to a position into a separate schema: the graph as it was then.

The replay schema holds copies of the projected tables (same columns, keys and indexes, except
the HNSW index: vector search there is exact, which is what a reproduction wants). Connections
to it put the schema first on the search_path, so every read path runs unchanged against it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from kg.db.connect import create_pool
from kg.db.functions import fulltext_bm25_sql
from kg.embeddings.base import EmbeddingProvider
from kg.progress import NO_PROGRESS, Progress
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.projections.normalise import RETIRES_NODES
from kg.read.as_of import REPLAYED_TABLES, check_schema_name


async def create_replay_schema(pool: asyncpg.Pool, schema: str) -> None:
    check_schema_name(schema)
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        for table in REPLAYED_TABLES:
            await conn.execute(
                f'CREATE TABLE "{schema}".{table} (LIKE public.{table} INCLUDING ALL)'
            )
        hnsw = await conn.fetch(
            "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexdef ILIKE '%hnsw%'",
            schema,
        )
        for row in hnsw:
            await conn.execute(f'DROP INDEX "{schema}"."{row["indexname"]}"')
        await conn.execute(fulltext_bm25_sql(schema))


async def drop_replay_schema(pool: asyncpg.Pool, schema: str) -> None:
    check_schema_name(schema)
    await pool.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@asynccontextmanager
async def schema_pool(
    url: str, schema: str, *, app_role: bool = False
) -> AsyncIterator[asyncpg.Pool]:
    """A pool whose unqualified table names resolve to ``schema`` first."""
    pool = await create_pool(url, app_role=app_role, max_size=4, search_path=f'"{schema}", public')
    try:
        yield pool
    finally:
        await pool.close()


async def replay(
    url: str,
    schema: str,
    tenant_id: str,
    until: int,
    embedder: EmbeddingProvider,
    *,
    progress: Progress = NO_PROGRESS,
) -> int:
    """Project ``tenant_id``'s log up to its position ``until`` into ``schema`` (created
    beforehand)."""
    async with schema_pool(url, schema) as pool:
        ctx = ProjectionContext(embedder, progress=progress)
        runner = ProjectionRunner(pool, default_projections(), ctx, maintain_indexes=False)
        dropped = await _drop_bulk_indexes(pool, schema, tenant_id, until)
        try:
            return await runner.catch_up(tenant_id=tenant_id, until=until, in_lanes=True)
        finally:
            async with pool.acquire() as conn:
                for definition in dropped:
                    await conn.execute(definition)


# The replay schema's indexes of kg_nodes and kg_edges that are not a key (the upserts' ON
# CONFLICT needs those). The edges' indexes that lead with from_node or to_node are how a
# retired node's edges are found: they stay when the replayed range retires a node.
_SECONDARY = """
SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition,
       t.relname = 'kg_edges' AND (
           pg_get_indexdef(i.indexrelid) LIKE '%(tenant_id, project_id, from_node%'
           OR pg_get_indexdef(i.indexrelid) LIKE '%(tenant_id, project_id, to_node%') AS detach
  FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_class t ON t.oid = i.indrelid
  JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = $1 AND t.relname IN ('kg_nodes', 'kg_edges')
   AND NOT i.indisprimary AND NOT i.indisunique
   AND NOT EXISTS (SELECT 1 FROM projection_checkpoints c WHERE c.position > 0)
"""


async def _drop_bulk_indexes(
    pool: asyncpg.Pool, schema: str, tenant_id: str, until: int
) -> list[str]:
    """Drop the replay schema's secondary indexes of kg_nodes and kg_edges (full text,
    labels, the B-trees) while it is empty and return their definitions, to build them once
    after the replay: an index costs more to keep up row by row than to build over the whole
    table (see ``kg/projections/nodes.py`` and ``edges.py``)."""
    async with pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(_SECONDARY, schema)
        retires = await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM kg_events WHERE tenant_id = $1 AND position <= $2 "
            "AND event_type = ANY($3::text[]))",
            tenant_id,
            until,
            sorted(RETIRES_NODES),
        )
        dropped = [row for row in rows if not (retires and row["detach"])]
        for row in dropped:
            await conn.execute(f'DROP INDEX "{schema}"."{row["name"]}"')
    return [row["definition"] for row in dropped]
