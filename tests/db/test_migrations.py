"""Alembic is the only way the schema changes: upgrade to head, downgrade to base, and back."""

from __future__ import annotations

import asyncpg

from kg.db import migrate
from kg.db.urls import asyncpg_url


async def tables(url: str) -> set[str]:
    conn = await asyncpg.connect(asyncpg_url(url))
    try:
        rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    finally:
        await conn.close()
    return {r["tablename"] for r in rows}


async def test_upgrade_downgrade_upgrade(empty_db_url: str) -> None:
    assert migrate.current_revision(empty_db_url) is None
    migrate.upgrade(empty_db_url)
    assert migrate.current_revision(empty_db_url) == migrate.head_revision()
    assert {"kg_events", "kg_chain_heads", "projection_checkpoints"} <= await tables(empty_db_url)

    migrate.downgrade(empty_db_url, "base")
    assert migrate.current_revision(empty_db_url) is None
    assert await tables(empty_db_url) <= {"alembic_version"}

    migrate.upgrade(empty_db_url)
    assert migrate.current_revision(empty_db_url) == migrate.head_revision()


def test_fast_head_revision_agrees_with_alembic() -> None:
    from kg.db import revision

    assert revision.head_revision() == migrate.head_revision()
