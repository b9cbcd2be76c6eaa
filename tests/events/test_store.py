"""The event store against a real PostgreSQL: append, read, versions, idempotency, atomicity."""

from __future__ import annotations

import asyncpg
import pytest

from kg.config import Scope
from kg.errors import (
    ConcurrencyConflictError,
    IdempotencyKeyReusedError,
    ValidationError,
)
from kg.events import (
    EventMetadata,
    EventStore,
    NodeAsserted,
    NodeRetired,
    PendingEvent,
    build_event,
)


def node(i: int, content: str = "text") -> NodeAsserted:
    return NodeAsserted(
        node_id=f"document:doc{i}.md", node_type="Document", name=f"doc {i}", content=content
    )


async def test_append_then_read_back_in_order(store: EventStore, scope: Scope) -> None:
    result = await store.append(
        scope,
        "ingest:docs",
        [node(1), node(2)],
        metadata=EventMetadata(actor="alice", source="docs/"),
    )
    assert (result.first_position, result.last_position) == (1, 2)
    assert (result.from_version, result.to_version) == (1, 2)

    events = await store.read_stream(scope, "ingest:docs")
    assert [e.stream_version for e in events] == [1, 2]
    assert events[0].decode() == node(1)
    assert events[0].metadata == {"actor": "alice", "source": "docs/"}
    assert events[1].prev_hash == events[0].hash
    assert await store.last_position(scope) == 2


async def test_per_event_metadata_overrides_the_default(store: EventStore, scope: Scope) -> None:
    await store.append(
        scope,
        "backfill",
        [PendingEvent(node(1), EventMetadata(source="org.db/decisions#42")), node(2)],
        metadata=EventMetadata(actor="operator"),
    )
    first, second = await store.read_all(0, scope=scope)
    assert first.metadata == {"actor": "system", "source": "org.db/decisions#42"}
    assert second.metadata == {"actor": "operator"}


async def test_stale_expected_version_is_a_typed_conflict_and_writes_nothing(
    store: EventStore, scope: Scope
) -> None:
    await store.append(scope, "decision:7", [node(1), node(2)], expected_version=0)
    with pytest.raises(ConcurrencyConflictError) as err:
        await store.append(scope, "decision:7", [node(3)], expected_version=1)
    assert (err.value.stream_id, err.value.expected, err.value.actual) == ("decision:7", 1, 2)
    assert "decision:7" in str(err.value) and "version 2" in str(err.value)
    assert await store.count(scope) == 2

    ok = await store.append(scope, "decision:7", [node(3)], expected_version=2)
    assert ok.to_version == 3


async def test_new_stream_expectation_fails_when_stream_exists(
    store: EventStore, scope: Scope
) -> None:
    await store.append(scope, "s", [node(1)])
    with pytest.raises(ConcurrencyConflictError):
        await store.append(scope, "s", [node(2)], expected_version=0)


async def test_retried_command_with_same_key_is_a_no_op_returning_first_result(
    store: EventStore, scope: Scope
) -> None:
    first = await store.append(scope, "s", [node(1), node(2)], idempotency_key="cmd-1")
    again = await store.append(scope, "s", [node(1), node(2)], idempotency_key="cmd-1")
    assert again.duplicate and not first.duplicate
    assert (again.first_position, again.last_position, again.event_ids) == (
        first.first_position,
        first.last_position,
        first.event_ids,
    )
    assert await store.count(scope) == 2


async def test_idempotency_key_reused_for_another_stream_is_refused(
    store: EventStore, scope: Scope
) -> None:
    await store.append(scope, "s1", [node(1)], idempotency_key="k")
    with pytest.raises(IdempotencyKeyReusedError, match="'s1'"):
        await store.append(scope, "s2", [node(1)], idempotency_key="k")


async def test_a_batch_that_fails_midway_leaves_nothing_behind(
    store: EventStore, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    await store.append(scope, "s", [node(0)])
    # A trigger that fails on the 500th row of the next batch simulates a crash mid-insert.
    await system_pool.execute(
        """
        CREATE FUNCTION fail_at_500() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.stream_version = 501 THEN RAISE EXCEPTION 'disk on fire'; END IF;
        RETURN NEW; END $$;
        CREATE TRIGGER fail_at_500 BEFORE INSERT ON kg_events
            FOR EACH ROW EXECUTE FUNCTION fail_at_500();
        """
    )
    with pytest.raises(asyncpg.RaiseError):
        await store.append(scope, "s", [node(i) for i in range(1000)])
    assert await store.count(scope) == 1
    await system_pool.execute("DROP TRIGGER fail_at_500 ON kg_events")

    after = await store.append(scope, "s", [node(9)])
    assert after.first_position == 2, "the failed batch must not leave a gap in positions"


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"node_id": "no-colon", "node_type": "Document", "name": "x"}, "node_id"),
        ({"node_id": "document:x", "node_type": "lower", "name": "x"}, "node_type"),
        ({"node_id": "document:x", "node_type": "Document"}, "name"),
    ],
)
def test_invalid_event_names_the_field_and_reason(fields: dict[str, str], needle: str) -> None:
    with pytest.raises(ValidationError) as err:
        build_event(NodeAsserted, **fields)
    assert needle in str(err.value)
    assert "NodeAsserted is invalid" in str(err.value)


async def test_bad_append_arguments_are_clear_errors(store: EventStore, scope: Scope) -> None:
    with pytest.raises(ValidationError, match="no events"):
        await store.append(scope, "s", [])
    with pytest.raises(ValidationError, match="expected_version"):
        await store.append(scope, "s", [node(1)], expected_version=-3)
    with pytest.raises(ValidationError, match="NUL"):
        await store.append(scope, "s", [node(1, content="bad\x00byte")])
    with pytest.raises(ValidationError, match="stream id"):
        await store.append(scope, "", [node(1)])
    assert await store.count(scope) == 0


async def test_stream_versions_are_per_project(store: EventStore) -> None:
    a, b = Scope("acme", "one"), Scope("acme", "two")
    await store.append(a, "s", [node(1)], expected_version=0)
    result = await store.append(b, "s", [node(1)], expected_version=0)
    assert result.to_version == 1


async def test_events_decode_with_their_current_class(store: EventStore, scope: Scope) -> None:
    await store.append(scope, "s", [NodeRetired(node_id="document:a.md", reason="deleted")])
    (event,) = await store.read_all(0, scope=scope)
    assert event.decode() == NodeRetired(node_id="document:a.md", reason="deleted")


def test_spliced_canonical_event_equals_canonical_json_of_the_whole_event() -> None:
    from datetime import UTC, datetime

    from kg.events.hashing import canonical_event, canonical_json

    payload = {"b": [1, 2.5, "é"], "a": {"z": None, "y": True}}
    meta = {"actor": "alice", "source": "org.db/decisions#1"}
    moment = datetime(2026, 11, 22, 12, 0, 0, 123456, tzinfo=UTC)
    fields = dict(
        position=7,
        event_id="e",
        tenant_id="t",
        project_id="p",
        stream_id="s",
        stream_version=2,
        event_type="X",
        schema_version=1,
        idempotency_key=None,
    )
    spliced = canonical_event(
        **fields,
        payload_json=canonical_json(payload),  # type: ignore[arg-type]
        metadata_json=canonical_json(meta),
        recorded_at=moment,
    )
    whole = canonical_json(
        {
            **fields,
            "payload": payload,
            "metadata": meta,
            "recorded_at": "2026-11-22T12:00:00.123456Z",
        }
    )
    assert spliced == whole


async def test_read_chunks_reads_what_read_all_does_and_stops_at_the_head(
    store: EventStore, scope: Scope
) -> None:
    await store.append(scope, "s", [node(i) for i in range(23)])
    await store.append(Scope(scope.tenant_id, "other"), "s", [node(i) for i in range(4)])
    await store.append(Scope("someone-else", "p"), "s", [node(1)])
    everything = await store.read_all(0, limit=1000, tenant_id=scope.tenant_id)
    assert len(everything) == 27

    chunks = [c async for c in store.read_chunks(3, chunk=5, tenant_id=scope.tenant_id)]
    assert [len(c) for c in chunks] == [5, 5, 5, 5, 4], "the short chunk is the last"
    read = [e for c in chunks for e in c]
    assert read == everything[3:]
    assert read[0].event.model_dump() == everything[3].event.model_dump()

    exact = [c async for c in store.read_chunks(7, chunk=10, tenant_id=scope.tenant_id)]
    assert [len(c) for c in exact] == [10, 10], "a full last chunk: one more read finds none"
    projected = [e async for c in store.read_chunks(chunk=7, scope=scope) for e in c]
    assert [e.position for e in projected] == list(range(1, 24)), "one project's events"

    async for first in store.read_chunks(chunk=4, tenant_id=scope.tenant_id):
        assert [e.position for e in first] == [1, 2, 3, 4]
        break  # leaving early cancels the read already asked for
    with pytest.raises(ValidationError, match="one tenant"):
        await anext(store.read_chunks(chunk=5))
    with pytest.raises(ValidationError, match="at least one"):
        await anext(store.read_chunks(chunk=0, tenant_id=scope.tenant_id))
