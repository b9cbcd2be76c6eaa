"""Invariant 2: the log is append-only, for the application role and even for the owner."""

from __future__ import annotations

import asyncpg
import pytest

from kg.config import Scope
from kg.events import EventStore, NodeAsserted


@pytest.fixture
async def one_event(store: EventStore, scope: Scope) -> None:
    await store.append(
        scope, "s", [NodeAsserted(node_id="document:a", node_type="Document", name="a")]
    )


@pytest.mark.parametrize(
    "statement",
    ["UPDATE kg_events SET payload = '{}'", "DELETE FROM kg_events", "TRUNCATE kg_events"],
)
async def test_owner_cannot_change_the_log(
    one_event: None, system_pool: asyncpg.Pool, statement: str
) -> None:
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
        await system_pool.execute(statement)
    assert await system_pool.fetchval("SELECT count(*) FROM kg_events") == 1


@pytest.mark.parametrize(
    "statement",
    ["UPDATE kg_events SET payload = '{}'", "DELETE FROM kg_events", "TRUNCATE kg_events"],
)
async def test_application_role_has_no_grant_to_change_the_log(
    one_event: None, app_pool: asyncpg.Pool, statement: str
) -> None:
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="permission denied"):
        await app_pool.execute(statement)
