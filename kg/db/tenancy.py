"""The one way a read or write is scoped to a tenant on the application role.

Row-level security on every tenant table compares ``tenant_id`` with the transaction-local
setting ``kg.tenant_id``; without it the application role sees nothing (fail closed).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import asyncpg

Isolation = Literal["read_committed", "repeatable_read", "serializable"]


async def set_tenant(conn: asyncpg.Connection, tenant_id: str) -> None:
    """Scope row-level security to ``tenant_id`` for the rest of the current transaction."""
    await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", tenant_id)


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
