"""Defence in depth: the application role cannot step outside what appends need.

Tenant isolation rests on the database, not only on kg's code: the application pool logs in as
``kg_app`` (no superuser to ``SET ROLE`` back to), can move the log and chain heads only through
the append functions, which check the transaction's tenant and refuse a batch that does not
continue the heads, and cannot read the global embedding cache.
"""

from __future__ import annotations

import asyncpg
import pytest

from kg.config import Scope
from kg.db.tenancy import tenant_transaction
from kg.events import EventStore, NodeAsserted


@pytest.fixture
async def one_event(store: EventStore, scope: Scope) -> None:
    await store.append(scope, "s", [NodeAsserted(node_id="file:a", node_type="File", name="a")])


async def test_the_application_pool_logs_in_as_kg_app_and_cannot_become_a_superuser(
    app_pool: asyncpg.Pool,
) -> None:
    assert await app_pool.fetchval("SELECT session_user") == "kg_app"
    superuser = "SELECT rolsuper FROM pg_roles WHERE rolname = 'kg_app'"
    assert await app_pool.fetchval(superuser) is False
    async with app_pool.acquire() as conn:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("SET ROLE postgres")


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE projection_checkpoints SET position = position + 1",
        "UPDATE kg_chain_heads SET hash = repeat('0', 64)",
        "INSERT INTO kg_chain_heads VALUES ('acme', 1, repeat('0', 64))",
        "INSERT INTO kg_events SELECT * FROM kg_events",
        "SELECT count(*) FROM embedding_cache",
    ],
)
async def test_the_application_role_has_no_direct_grant_on_heads_log_or_cache(
    one_event: None, app_pool: asyncpg.Pool, scope: Scope, statement: str
) -> None:
    async with tenant_transaction(app_pool, scope.tenant_id) as conn:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="permission denied"):
            await conn.execute(statement)


async def test_the_append_function_refuses_another_tenant(
    one_event: None, app_pool: asyncpg.Pool, scope: Scope
) -> None:
    async with tenant_transaction(app_pool, scope.tenant_id) as conn:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="tenant scope"):
            await conn.fetchrow("SELECT * FROM kg_append_lock('someone-else')")


async def test_the_append_function_refuses_a_batch_that_forks_the_chain(
    one_event: None, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    async with tenant_transaction(app_pool, scope.tenant_id) as conn:
        head, chain = await conn.fetchrow("SELECT * FROM kg_append_lock($1)", scope.tenant_id)
        with pytest.raises(asyncpg.SerializationError, match="does not link"):
            await conn.fetchval(
                "SELECT kg_append_events($1, $2, now(), NULL, $3, ARRAY[gen_random_uuid()], "
                "ARRAY['s'], ARRAY[2], ARRAY['NodeAsserted'], ARRAY[1], ARRAY['{}'], "
                "ARRAY['{}'], ARRAY[repeat('0', 64)], ARRAY[repeat('1', 64)])",
                scope.tenant_id,
                scope.project_id,
                [head + 1],
            )
    assert chain != "0" * 64
    assert await system_pool.fetchval("SELECT count(*) FROM kg_events") == 1
