"""Invariant 3: positions are gapless and commit-ordered per tenant under concurrent writers,
and tenants never wait on each other."""

from __future__ import annotations

import asyncio

import asyncpg

from kg.config import Scope
from kg.db.tenancy import tenant_transaction
from kg.events import EventStore, NodeAsserted
from tests.support import assert_log_verifies

WRITERS, EVENTS_PER_WRITER, BATCH, TENANTS = 8, 1000, 10, 3


def _events(writer: int, start: int) -> list[NodeAsserted]:
    return [
        NodeAsserted(node_id=f"file:w{writer}/{start + i}", node_type="File", name="f")
        for i in range(BATCH)
    ]


async def test_a_tailing_reader_per_tenant_sees_every_position_once_in_order(
    store: EventStore, system_store: EventStore
) -> None:
    per_tenant = {
        f"tenant-{t}": sum(EVENTS_PER_WRITER for w in range(WRITERS) if w % TENANTS == t)
        for t in range(TENANTS)
    }
    seen: dict[str, list[int]] = {tenant: [] for tenant in per_tenant}

    async def tail(tenant: str) -> None:
        async for batch in system_store.subscribe(
            0, tenant_id=tenant, batch_size=500, poll_interval=0.2
        ):
            seen[tenant].extend(e.position for e in batch)
            assert all(e.tenant_id == tenant for e in batch)
            if len(seen[tenant]) >= per_tenant[tenant]:
                return

    async def write(writer: int) -> None:
        scope = Scope(f"tenant-{writer % TENANTS}", "p")
        for start in range(0, EVENTS_PER_WRITER, BATCH):
            await store.append(scope, f"writer-{writer}", _events(writer, start))

    readers = [asyncio.create_task(tail(tenant)) for tenant in per_tenant]
    await asyncio.gather(*(write(w) for w in range(WRITERS)))
    await asyncio.wait_for(asyncio.gather(*readers), timeout=60)

    for tenant, total in per_tenant.items():
        assert seen[tenant] == list(range(1, total + 1)), (
            f"a position of {tenant} was skipped, repeated or seen out of order"
        )
        assert await system_store.last_position(tenant_id=tenant) == total
    await assert_log_verifies(system_store, list(per_tenant))


async def test_an_append_does_not_wait_for_another_tenants_open_append(
    app_pool: asyncpg.Pool, store: EventStore, system_store: EventStore
) -> None:
    """Tenant A's append lock is held by an open transaction; tenant B appends meanwhile (with
    one global counter this append would block until A's transaction ended)."""
    a, b = Scope("tenant-a", "p"), Scope("tenant-b", "p")
    await store.append(a, "s", _events(0, 0))
    async with tenant_transaction(app_pool, a.tenant_id) as holder:
        head, _ = await holder.fetchrow("SELECT * FROM kg_append_lock($1)", a.tenant_id)
        assert head == BATCH
        # The deadline only guards against a hang; the append returns at once when it works.
        result = await asyncio.wait_for(store.append(b, "s", _events(1, 0)), timeout=30)
        assert (result.first_position, result.last_position) == (1, BATCH)
        # A's own next append does wait for the lock: its backend shows up as waiting on one.
        blocked = asyncio.create_task(store.append(a, "s", _events(2, 0)))
        await _a_backend_waits_on_a_lock(system_store.pool)
        assert not blocked.done()
    later = await asyncio.wait_for(blocked, timeout=30)
    assert (later.first_position, later.last_position) == (BATCH + 1, 2 * BATCH)
    await assert_log_verifies(system_store, [a.tenant_id, b.tenant_id])


async def _a_backend_waits_on_a_lock(pool: asyncpg.Pool) -> None:
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() " + (
        "AND wait_event_type = 'Lock'"
    )
    for _ in range(600):
        if await pool.fetchval(waiting):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no backend ever waited on the tenant's lock")
