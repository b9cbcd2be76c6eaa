"""Invariant 8: every event carries tenant and project; one tenant never reads another's."""

from __future__ import annotations

import asyncpg
import pytest

from kg.config import Scope
from kg.errors import ValidationError
from kg.events import EventStore, NodeAsserted

A, B = Scope("tenant-a", "p"), Scope("tenant-b", "p")


def node(name: str) -> NodeAsserted:
    return NodeAsserted(node_id="document:same-id.md", node_type="Document", name=name)


async def test_reads_are_scoped_to_the_tenant(store: EventStore) -> None:
    await store.append(A, "shared-stream-name", [node("a secret")])
    await store.append(B, "shared-stream-name", [node("b data")])

    a_events = await store.read_all(0, scope=A)
    assert [(e.tenant_id, e.payload["name"]) for e in a_events] == [("tenant-a", "a secret")]
    b_stream = await store.read_stream(B, "shared-stream-name")
    assert [e.payload["name"] for e in b_stream] == ["b data"]
    assert await store.count(B) == 1


async def test_row_level_security_hides_other_tenants_even_without_a_where_clause(
    store: EventStore, app_pool: asyncpg.Pool
) -> None:
    await store.append(A, "s", [node("a secret")])
    await store.append(B, "s", [node("b data")])
    async with app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', 'tenant-b', true)")
        rows = await conn.fetch("SELECT tenant_id, payload->>'name' AS name FROM kg_events")
    assert [tuple(r) for r in rows] == [("tenant-b", "b data")]


async def test_application_role_without_a_tenant_sees_nothing(
    store: EventStore, app_pool: asyncpg.Pool
) -> None:
    await store.append(A, "s", [node("a secret")])
    assert await app_pool.fetchval("SELECT count(*) FROM kg_events") == 0
    assert await app_pool.fetchval("SELECT count(*) FROM kg_chain_heads") == 0
    # Positions are per tenant: a read names its tenant or is refused.
    with pytest.raises(ValidationError, match="scope or tenant_id"):
        await store.read_all(0)


async def test_hash_chains_are_per_tenant(store: EventStore) -> None:
    await store.append(A, "s", [node("a1")])
    await store.append(B, "s", [node("b1")])
    await store.append(A, "s", [node("a2")])
    a1, a2 = await store.read_all(0, scope=A)
    assert a2.prev_hash == a1.hash
