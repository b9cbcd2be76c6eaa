"""Replay the log up to a position into a separate schema: the graph as it was then.

The replay schema holds copies of the projected tables (same columns, keys and indexes, except
the HNSW index: vector search there is exact, which is what a reproduction wants). Connections
to it put the schema first on the search_path, so every read path runs unchanged against it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from kg.db.connect import create_pool
from kg.db.functions import fulltext_bm25_sql
from kg.embeddings.base import EmbeddingProvider
from kg.errors import ValidationError
from kg.progress import NO_PROGRESS, Progress
from kg.projections import ProjectionContext, ProjectionRunner, default_projections

REPLAYED_TABLES = (
    "projection_checkpoints",
    "kg_embedding_index",
    "kg_nodes",
    "kg_passages",
    "kg_edges",
    "context_graphs",
    "context_graph_usage",
)
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def check_schema_name(schema: str) -> str:
    if not _SCHEMA.match(schema) or schema in {"public", "pg_catalog", "information_schema"}:
        raise ValidationError(
            f"schema name {schema!r} is not allowed: use lowercase letters, digits and '_' "
            "(not public)"
        )
    return schema


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
        gin = await _drop_gin_indexes(pool, schema)
        try:
            return await runner.catch_up(tenant_id=tenant_id, until=until)
        finally:
            async with pool.acquire() as conn:
                for definition in gin:
                    await conn.execute(definition)


async def _drop_gin_indexes(pool: asyncpg.Pool, schema: str) -> list[str]:
    """Drop the replay schema's GIN indexes (full text, labels) while it is empty and return
    their definitions, to build them once after the replay: a GIN index costs more to keep up
    row by row than to build over the whole table (see ``kg/projections/nodes.py``)."""
    async with pool.acquire() as conn, conn.transaction():
        rows = await conn.fetch(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i "
            "WHERE i.schemaname = $1 AND i.indexdef ILIKE '% USING gin %' "
            "AND NOT EXISTS (SELECT 1 FROM projection_checkpoints c WHERE c.position > 0)",
            schema,
        )
        for row in rows:
            await conn.execute(f'DROP INDEX "{schema}"."{row["indexname"]}"')
    return [row["indexdef"] for row in rows]
