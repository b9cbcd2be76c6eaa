"""The schema stays Citus-ready (docs/scale-out.md), asserted from the catalog.

Every table of tenant data is distributed by ``tenant_id``: Citus requires the distribution
column in every primary key and unique index, and co-located tables share it. Leading with it
also keeps each tenant's rows together on one machine. Shared catalogues (no tenant) become
reference tables, copied to every node. A new table must be one or the other.
"""

from __future__ import annotations

import asyncpg

REFERENCE_TABLES = {"embedding_cache", "kg_embedding_index", "kg_merkle_log", "alembic_version"}

_TABLES = """
SELECT c.relname, c.relrowsecurity,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                  AND a.attname = 'tenant_id' AND NOT a.attisdropped) AS has_tenant
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
 ORDER BY 1
"""

_UNIQUE_INDEXES = """
SELECT t.relname AS table_name, i.relname AS index_name,
       (SELECT a.attname FROM pg_attribute a
         WHERE a.attrelid = t.oid AND a.attnum = x.indkey[0]) AS first_column
  FROM pg_index x
  JOIN pg_class i ON i.oid = x.indexrelid
  JOIN pg_class t ON t.oid = x.indrelid
  JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = 'public' AND x.indisunique AND NOT (t.relname = ANY($1::text[]))
 ORDER BY 1, 2
"""


async def test_every_table_is_tenant_data_or_a_named_reference_table(
    system_pool: asyncpg.Pool,
) -> None:
    rows = await system_pool.fetch(_TABLES)
    tenant_tables = {r["relname"] for r in rows if r["has_tenant"]}
    others = {r["relname"] for r in rows if not r["has_tenant"]}
    assert others == REFERENCE_TABLES, "a table without tenant_id must be a reference table"
    assert {"kg_events", "kg_chain_heads", "kg_nodes", "projection_checkpoints"} <= tenant_tables
    # Tenant isolation inside a node: every tenant table is under row-level security.
    unprotected = [r["relname"] for r in rows if r["has_tenant"] and not r["relrowsecurity"]]
    assert unprotected == []


async def test_tenant_id_leads_every_primary_key_and_unique_index_of_tenant_data(
    system_pool: asyncpg.Pool,
) -> None:
    rows = await system_pool.fetch(_UNIQUE_INDEXES, sorted(REFERENCE_TABLES))
    assert rows, "the catalog query found no unique index at all"
    leading = {(r["table_name"], r["index_name"]): r["first_column"] for r in rows}
    assert ("kg_events", "kg_events_pkey") in leading
    assert ("kg_events", "kg_events_event_id_key") in leading
    assert {key: col for key, col in leading.items() if col != "tenant_id"} == {}


async def test_no_sequence_or_global_counter_is_left(system_pool: asyncpg.Pool) -> None:
    """A global order cannot be kept across shards: positions come from the per-tenant head."""
    sequences = await system_pool.fetch(
        "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'"
    )
    assert sequences == []
    assert await system_pool.fetchval("SELECT to_regclass('public.kg_log_head')") is None
