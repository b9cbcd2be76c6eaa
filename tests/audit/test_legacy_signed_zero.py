"""A log that an earlier kg wrote with ``-0.0`` in a payload still verifies.

Before the fix the append hashed ``-0.0`` with its sign, jsonb stored ``0.0``, and the event
could never verify again. The event is written here exactly as that kg wrote it (through the
append functions, hashed with the signed zero); verify accepts it, says so, and still catches
an edit of the same event.
"""

from __future__ import annotations

import asyncpg

from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.events import EventStore, NodeAsserted
from kg.events.hashing import standard_canonical_json
from tests.support import append_raw


async def append_as_the_old_kg_did(pool: asyncpg.Pool, scope: Scope, payload: dict) -> None:
    payload_json = standard_canonical_json(payload, signed_zero=True)
    await append_raw(pool, scope, "old", "NodeAsserted", 1, payload_json)


async def test_an_event_hashed_with_negative_zero_verifies_and_is_named(
    store: EventStore, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    await store.append(scope, "new", [NodeAsserted(node_id="file:a", node_type="File", name="a")])
    payload = NodeAsserted(
        node_id="file:b", node_type="File", name="b", properties={"w": [-0.0, 0.0, {"c": -0.0}]}
    ).to_payload()
    await append_as_the_old_kg_did(system_pool, scope, payload)
    await store.append(scope, "new", [NodeAsserted(node_id="file:c", node_type="File", name="c")])

    report = await verify_tenant(system_pool, scope.tenant_id)

    assert report.ok, str(report)
    assert report.signed_zero_events == 1
    assert "1 written with -0.0 by an earlier kg" in str(report)


async def test_an_edit_of_such_an_event_is_still_caught(
    system_pool: asyncpg.Pool, scope: Scope
) -> None:
    payload = NodeAsserted(
        node_id="file:b", node_type="File", name="b", properties={"w": -0.0}
    ).to_payload()
    await append_as_the_old_kg_did(system_pool, scope, payload)
    async with system_pool.acquire() as conn:
        await conn.execute("ALTER TABLE kg_events DISABLE TRIGGER kg_events_no_update_delete")
        await conn.execute("UPDATE kg_events SET payload = jsonb_set(payload, '{name}', '\"x\"')")

    report = await verify_tenant(system_pool, scope.tenant_id)

    assert report.broken_position == 1
    assert "edited" in str(report)
