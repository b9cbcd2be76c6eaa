"""A log that an earlier kg wrote with ``-0.0`` in a payload still verifies.

Before the fix the append hashed ``-0.0`` with its sign, jsonb stored ``0.0``, and the event
could never verify again. The event is written here exactly as that kg wrote it (through the
append functions, hashed with the signed zero); verify accepts it, says so, and still catches
an edit of the same event.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg

from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.db.tenancy import tenant_transaction
from kg.events import EventStore, NodeAsserted
from kg.events.hashing import canonical_event, chain_hash, standard_canonical_json


async def append_as_the_old_kg_did(pool: asyncpg.Pool, scope: Scope, payload: dict) -> None:
    async with tenant_transaction(pool, scope.tenant_id) as conn:
        head, chain = await conn.fetchrow("SELECT * FROM kg_append_lock($1)", scope.tenant_id)
        event_id, now = str(uuid.uuid4()), datetime.now(UTC)
        payload_json = standard_canonical_json(payload, signed_zero=True)
        prev = chain or "0" * 64
        digest = chain_hash(
            prev,
            canonical_event(
                position=head + 1, event_id=event_id, tenant_id=scope.tenant_id,
                project_id=scope.project_id, stream_id="old", stream_version=1,
                event_type="NodeAsserted", schema_version=1, payload_json=payload_json,
                metadata_json='{"actor":"system"}', recorded_at=now, idempotency_key=None,
            ),
        )  # fmt: skip
        await conn.fetchval(
            "SELECT kg_append_events($1, $2, $3, NULL, $4, $5, ARRAY['old'], ARRAY[1], "
            "ARRAY['NodeAsserted'], ARRAY[1], $6, ARRAY['{\"actor\":\"system\"}'], $7, $8)",
            scope.tenant_id, scope.project_id, now, [head + 1], [event_id], [payload_json],
            [prev], [digest],
        )  # fmt: skip


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
