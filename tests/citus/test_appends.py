"""The event store on a Citus cluster, through the coordinator, as the application role: single,
batched, idempotent and optimistic appends; concurrent writers (tasks and processes) to one
tenant and to several; gapless per-tenant positions and whole chains afterwards."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import uuid

import asyncpg
import pytest

from kg.cluster import nodes
from kg.config import Scope
from kg.errors import ConcurrencyConflictError, IdempotencyKeyReusedError
from kg.events import EventStore, NodeAsserted
from tests.support import assert_log_verifies

pytestmark = pytest.mark.citus


def _nodes(prefix: str, n: int) -> list[NodeAsserted]:
    return [
        NodeAsserted(node_id=f"file:{prefix}/{i}", node_type="File", name=f"f{i}", content="x")
        for i in range(n)
    ]


async def test_appends_single_batched_idempotent_and_optimistic(
    citus_app_pool: asyncpg.Pool, citus_system_pool: asyncpg.Pool, citus_scope: Scope
) -> None:
    store = EventStore(citus_app_pool)
    one = await store.append(citus_scope, "s", _nodes("a", 1), expected_version=0)
    assert (one.first_position, one.last_position, one.to_version) == (1, 1, 1)
    batch = await store.append(citus_scope, "s", _nodes("b", 25), expected_version=1)
    assert (batch.first_position, batch.last_position, batch.to_version) == (2, 26, 26)

    with pytest.raises(ConcurrencyConflictError) as conflict:
        await store.append(citus_scope, "s", _nodes("c", 1), expected_version=1)
    assert conflict.value.actual == 26

    keyed = await store.append(citus_scope, "t", _nodes("d", 3), idempotency_key="cmd-1")
    again = await store.append(citus_scope, "t", _nodes("d", 3), idempotency_key="cmd-1")
    assert again.duplicate and again.event_ids == keyed.event_ids
    with pytest.raises(IdempotencyKeyReusedError):
        await store.append(citus_scope, "u", _nodes("e", 1), idempotency_key="cmd-1")

    events = await store.read_all(scope=citus_scope)
    assert [e.position for e in events] == list(range(1, 30))
    # Content kept beside the log (kg_event_content, a co-located shard) reads back.
    assert all(e.domain_payload["content"] == "x" for e in events)
    assert await store.count(citus_scope) == 29
    await assert_log_verifies(EventStore(citus_system_pool), [citus_scope.tenant_id])


async def test_the_shards_are_spread_and_a_tenant_lives_on_one_worker(
    citus_system_pool: asyncpg.Pool,
) -> None:
    rows = await citus_system_pool.fetch(
        "SELECT DISTINCT nodeport FROM citus_shards WHERE table_name = 'kg_events'::regclass"
    )
    assert len(rows) >= 2  # (three once test_rebalance added a worker)
    groups = await citus_system_pool.fetchval(
        "SELECT count(DISTINCT colocation_id) FROM citus_tables WHERE distribution_column = "
        "'tenant_id'"
    )
    assert groups == 1, "every tenant table is co-located with the log"


async def test_tasks_appending_to_one_tenant_and_several_tenants_at_once(
    citus_app_pool: asyncpg.Pool, citus_system_pool: asyncpg.Pool, tenant: str
) -> None:
    store = EventStore(citus_app_pool)
    tenants = [f"{tenant}-{i}" for i in range(3)]

    async def write(scope: Scope, writer: int, rounds: int) -> None:
        for i in range(rounds):
            await store.append(scope, f"w{writer}", _nodes(f"w{writer}/{i}", 3))

    # Two tasks on one tenant, plus one task on each of two more tenants.
    await asyncio.gather(
        write(Scope(tenants[0], "p"), 0, 30),
        write(Scope(tenants[0], "p"), 1, 30),
        write(Scope(tenants[1], "p"), 2, 20),
        write(Scope(tenants[2], "p"), 3, 20),
    )
    system = EventStore(citus_system_pool)
    assert await system.last_position(tenant_id=tenants[0]) == 180
    assert await system.last_position(tenant_id=tenants[1]) == 60
    assert await system.last_position(tenant_id=tenants[2]) == 60
    await assert_log_verifies(system, tenants)


async def test_six_writer_processes_on_one_tenant_while_a_reader_tails(
    citus_url: str, citus_system_pool: asyncpg.Pool, tenant: str
) -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        from kg.config import Scope
        from kg.db.connect import create_pool
        from kg.events import EventStore, NodeAsserted

        async def main(url, tenant, writer):
            pool = await create_pool(url, app_role=True, max_size=1)
            store = EventStore(pool)
            for i in range(15):
                await store.append(Scope(tenant, "p"), f"proc-{writer}", [
                    NodeAsserted(node_id=f"file:p{writer}/{i}/{j}", node_type="File", name="f")
                    for j in range(10)])
            await pool.close()

        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
        """
    )
    system = EventStore(citus_system_pool)
    total = 6 * 15 * 10
    seen: list[int] = []

    async def tail() -> None:
        async for batch in system.subscribe(0, tenant_id=tenant, poll_interval=0.1):
            seen.extend(e.position for e in batch)
            if len(seen) >= total:
                return

    reader = asyncio.create_task(tail())
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, citus_url, tenant, str(w)
        )
        for w in range(6)
    ]
    codes = await asyncio.gather(*(p.wait() for p in procs))
    assert codes == [0] * 6
    await asyncio.wait_for(reader, timeout=120)
    # The tailing reader saw every position once, in order: none committed below one it saw.
    assert seen == list(range(1, total + 1))
    await assert_log_verifies(system, [tenant])


async def test_the_app_role_cannot_write_the_log_except_through_the_append_path(
    citus_app_pool: asyncpg.Pool, citus_system_pool: asyncpg.Pool, citus_scope: Scope
) -> None:
    store = EventStore(citus_app_pool)
    await store.append(citus_scope, "s", _nodes("a", 2))
    tenant = citus_scope.tenant_id
    forged = (
        "INSERT INTO kg_events (position, event_id, tenant_id, project_id, stream_id, "
        "stream_version, event_type, schema_version, payload, metadata, recorded_at, prev_hash, "
        f"hash) VALUES (3, '{uuid.uuid4()}', '{tenant}', 'webshop', 's', 3, 'NodeAsserted', 1, "
        "'{}', '{}', now(), 'x', 'y')"
    )
    statements = {
        forged: "permission denied",
        f"UPDATE kg_events SET payload = '{{}}' WHERE tenant_id = '{tenant}'": "permission denied",
        f"DELETE FROM kg_events WHERE tenant_id = '{tenant}'": "permission denied",
        f"UPDATE kg_chain_heads SET position = 0 WHERE tenant_id = '{tenant}'": "permission denied",
        f"DELETE FROM kg_event_content WHERE tenant_id = '{tenant}'": "permission denied",
        "TRUNCATE kg_events": "permission denied",
    }
    for sql, needle in statements.items():
        async with citus_app_pool.acquire() as conn, conn.transaction():
            await conn.execute(f"SET LOCAL kg.tenant_id = '{tenant}'")
            with pytest.raises(asyncpg.PostgresError) as refused:
                await conn.execute(sql)
            assert needle in str(refused.value), sql
    # The append function refuses a tenant other than the transaction's, on the worker too.
    async with citus_app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL kg.tenant_id = 'someone-else'")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetchval("SELECT kg_append_lock($1)", tenant)
    # Even the owner cannot edit the log in place: the append-only trigger is on every shard.
    with pytest.raises(asyncpg.PostgresError, match="append-only"):
        await citus_system_pool.execute(
            f"UPDATE kg_events SET payload = '{{}}' WHERE tenant_id = '{tenant}'"
        )
    await assert_log_verifies(EventStore(citus_system_pool), [tenant])


async def test_on_a_worker_the_app_role_cannot_write_a_shard_of_the_log_either(
    citus_cluster: nodes.Cluster, citus_url: str, citus_system_pool: asyncpg.Pool
) -> None:
    """Grants reach the shards: kg_app logging in to a worker directly (bypassing the
    coordinator) may read a shard of kg_events but not write it."""
    database = citus_url.rsplit("/", 1)[1]
    worker = citus_cluster.workers[0]
    conn = await asyncpg.connect(worker.url(database).replace("postgres@", "kg_app@"))
    try:
        await conn.execute("SET citus.override_table_visibility = off")
        shard = await conn.fetchval(
            "SELECT relname FROM pg_class WHERE relname ~ '^kg_events_[0-9]+$' LIMIT 1"
        )
        assert shard is not None
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(
                f"INSERT INTO {shard} (position, event_id, tenant_id, project_id, stream_id, "
                "stream_version, event_type, schema_version, payload, metadata, recorded_at, "
                "prev_hash, hash) VALUES (1, gen_random_uuid(), 'x', 'p', 's', 1, 'T', 1, "
                "'{}', '{}', now(), 'a', 'b')"
            )
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(f"DELETE FROM {shard}")
    finally:
        await conn.close()
