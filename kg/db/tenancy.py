"""The one way a read or write is scoped to a tenant on the application role.

Row-level security on every tenant table compares ``tenant_id`` with the transaction-local
setting ``kg.tenant_id``; without it the application role sees nothing (fail closed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import asyncpg

from kg.errors import ValidationError

Isolation = Literal["read_committed", "repeatable_read", "serializable"]


def set_tenant_sql(tenant_id: str) -> str:
    """``SET LOCAL kg.tenant_id = '...'``: the statement form, not ``set_config(..., true)``.

    The two are the same on one node. On a Citus coordinator only the statement is forwarded
    to the workers (``citus.propagate_set_commands = 'local'``, which ``kg db distribute``
    sets), and row-level security is evaluated there, on the shards: with ``set_config`` the
    workers would see no tenant and return nothing. ``SET`` takes no parameter, so the value
    is quoted here (a standard-conforming literal; valid ids hold neither quote nor backslash).
    """
    if "\x00" in tenant_id or "\\" in tenant_id:  # never in a valid id (kg.config)
        raise ValidationError(f"tenant id {tenant_id[:80]!r} holds a NUL or a backslash")
    return "SET LOCAL kg.tenant_id = '" + tenant_id.replace("'", "''") + "'"


async def set_tenant(conn: asyncpg.Connection, tenant_id: str) -> None:
    """Scope row-level security to ``tenant_id`` for the rest of the current transaction."""
    await conn.execute(set_tenant_sql(tenant_id))


@asynccontextmanager
async def tenant_transaction(
    pool: asyncpg.Pool,
    tenant_id: str,
    *,
    isolation: Isolation = "read_committed",
    readonly: bool = False,
) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection in a transaction scoped to ``tenant_id``."""
    async with pool.acquire() as conn, conn.transaction(isolation=isolation, readonly=readonly):
        await set_tenant(conn, tenant_id)
        yield conn


@asynccontextmanager
async def tenant_snapshot(pool: asyncpg.Pool, tenant_id: str) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection in a read-only REPEATABLE READ transaction scoped to ``tenant_id``:
    :func:`tenant_transaction`'s, begun and scoped in one round trip instead of two (every
    read of the MCP server opens two: the action guard's and the tool's)."""
    async with pool.acquire() as conn:
        await conn.execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; " + set_tenant_sql(tenant_id)
        )
        try:
            yield conn
        finally:
            # Read-only: nothing to keep or lose. A connection left mid-statement (a cancelled
            # read) cannot take another; the pool then replaces it.
            try:
                await conn.execute("ROLLBACK")
            except (asyncpg.InterfaceError, asyncpg.PostgresError):
                conn.terminate()
