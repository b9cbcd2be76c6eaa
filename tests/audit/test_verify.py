"""Invariant 5: the per-tenant hash chain finds any edited or removed event and names it."""

from __future__ import annotations

import asyncpg
import pytest

from kg.audit.verify import find_position_gaps, verify_tenant
from kg.config import Scope
from kg.events import EventStore, NodeAsserted


@pytest.fixture
async def ten_events(store: EventStore, scope: Scope) -> None:
    events = [
        NodeAsserted(
            node_id=f"document:{i}.md",
            node_type="Document",
            name=str(i),
            properties={"score": i / 3},
        )
        for i in range(10)
    ]
    await store.append(scope, "s", events)
    await store.append(Scope("other", "p"), "s", events[:3])


async def behind_the_triggers_back(pool: asyncpg.Pool, sql: str) -> None:
    """What a superuser with bad intentions can do: bypass the append-only trigger."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute(sql)


async def test_intact_chain_verifies(ten_events: None, app_pool: asyncpg.Pool) -> None:
    report = await verify_tenant(app_pool, "acme")
    assert report.ok
    assert str(report) == "ok, 10 events (tenant acme)"


async def test_edited_payload_is_found_at_its_position(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    await behind_the_triggers_back(
        system_pool,
        "UPDATE kg_events SET payload = jsonb_set(payload, '{name}', '\"forged\"') "
        "WHERE position = 4",
    )
    report = await verify_tenant(app_pool, "acme")
    assert not report.ok
    assert report.broken_position == 4
    assert "edited" in str(report) and "position 4" in str(report)
    assert (await verify_tenant(app_pool, "other")).ok, "another tenant's chain is unaffected"


async def test_edited_metadata_is_found(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    await behind_the_triggers_back(
        system_pool, 'UPDATE kg_events SET metadata = \'{"actor": "mallory"}\' WHERE position = 2'
    )
    assert (await verify_tenant(app_pool, "acme")).broken_position == 2


async def test_removed_event_is_found_at_its_successor_and_as_a_gap(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    await behind_the_triggers_back(system_pool, "DELETE FROM kg_events WHERE position = 6")
    report = await verify_tenant(app_pool, "acme")
    assert report.broken_position == 7
    assert "removed" in str(report)
    assert await find_position_gaps(system_pool, "acme") == [6]


async def test_removed_tail_is_found(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    await behind_the_triggers_back(system_pool, "DELETE FROM kg_events WHERE position = 10")
    report = await verify_tenant(app_pool, "acme")
    assert not report.ok and "removed" in str(report)


async def test_rehashing_one_event_still_breaks_the_chain(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    await behind_the_triggers_back(
        system_pool, "UPDATE kg_events SET hash = repeat('a', 64) WHERE position = 3"
    )
    assert (await verify_tenant(app_pool, "acme")).broken_position == 3


async def test_an_overwritten_chain_head_hash_is_named_as_such(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    """Every event intact, only the ``kg_chain_heads`` row forged: no event was removed, and
    the report says which of the head's two values differs."""
    await behind_the_triggers_back(
        system_pool, "UPDATE kg_chain_heads SET hash = repeat('b', 64) WHERE tenant_id = 'acme'"
    )
    report = await verify_tenant(app_pool, "acme")
    assert not report.ok
    text = str(report)
    assert "removed" not in text
    assert "kg_chain_heads" in text and "hash" in text
    assert "bbbbbbbbbbbb" in text, "the recorded hash is shown"
    assert "position 10" in text, "the position both agree on is named"


async def test_a_chain_head_moved_back_is_not_reported_as_removed_events(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    async with system_pool.acquire() as conn:
        hash_at_7 = await conn.fetchval("SELECT hash FROM kg_events WHERE position = 7")
    await behind_the_triggers_back(
        system_pool,
        f"UPDATE kg_chain_heads SET position = 7, hash = '{hash_at_7}' WHERE tenant_id = 'acme'",
    )
    report = await verify_tenant(app_pool, "acme")
    assert not report.ok
    text = str(report)
    assert "removed" not in text
    assert "position 7" in text and "position 10" in text


async def test_a_deleted_chain_head_is_found(
    ten_events: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    await behind_the_triggers_back(
        system_pool, "DELETE FROM kg_chain_heads WHERE tenant_id = 'acme'"
    )
    report = await verify_tenant(app_pool, "acme")
    assert not report.ok
    assert "kg_chain_heads" in str(report) and "position 10" in str(report)
