"""Digest of a projected table's full content, to show a rebuild reproduces it exactly."""

from __future__ import annotations

import asyncpg

# Each projected table and the key its rows are ordered by.
TABLE_KEYS: dict[str, str] = {
    "kg_nodes": "tenant_id, project_id, node_id",
    "kg_edges": "tenant_id, project_id, edge_id",
    "context_graphs": "tenant_id, project_id, context_graph_id",
    "context_graph_usage": "tenant_id, project_id, position",
}


async def table_digest(
    conn: asyncpg.Connection | asyncpg.Pool,
    table: str,
    tenant_id: str | None = None,
    *,
    omit: str | None = None,
) -> str:
    """sha256 over every column of every row, in key order (needs the system pool); with
    ``tenant_id``, over that tenant's rows only; without column ``omit`` if given (a
    different digest: compare it only with another one without that column)."""
    key = TABLE_KEYS[table]
    row = "t::text" if omit is None else "(to_jsonb(t) - $2::text)::text"
    value = await conn.fetchval(
        f"SELECT encode(sha256(coalesce(string_agg({row}, E'\\n' ORDER BY {key}), '')::bytea),"
        f" 'hex') FROM {table} t WHERE $1::text IS NULL OR t.tenant_id = $1",
        tenant_id,
        *([] if omit is None else [omit]),
    )
    return str(value)
