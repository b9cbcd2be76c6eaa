"""Many streams in one transaction: versions, positions and the hash chain stay right."""

from __future__ import annotations

import asyncpg
import pytest

from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.errors import ConcurrencyConflictError, ValidationError
from kg.events import EventStore, NodeAsserted, NodeRetired
from kg.events.multi import StreamEvent, append_multi


def node(i: int) -> NodeAsserted:
    return NodeAsserted(node_id=f"section:a.md#s{i}", node_type="Section", name=f"s{i}")


async def test_interleaved_streams_get_their_own_versions_and_one_chain(
    store: EventStore, scope: Scope, app_pool: asyncpg.Pool
) -> None:
    await store.append(scope, "doc:a.md", [node(0)])
    items = [
        StreamEvent("doc:a.md", node(1)),
        StreamEvent("doc:b.md", node(2)),
        StreamEvent("doc:a.md", NodeRetired(node_id="section:a.md#s0")),
    ]
    results = await append_multi(store, scope, items, expected_versions={"doc:a.md": 1})
    assert [(r.stream_id, r.from_version, r.to_version) for r in results] == [
        ("doc:a.md", 2, 3),
        ("doc:b.md", 1, 1),
    ]
    assert [(r.first_position, r.last_position) for r in results] == [(2, 4), (3, 3)]
    a = await store.read_stream(scope, "doc:a.md")
    assert [(e.stream_version, e.position, e.event_type) for e in a] == [
        (1, 1, "NodeAsserted"),
        (2, 2, "NodeAsserted"),
        (3, 4, "NodeRetired"),
    ]
    verdict = await verify_tenant(app_pool, scope.tenant_id)
    assert str(verdict).startswith("ok, 4 events")
    # The single-stream append continues the same chain and versions.
    await store.append(scope, "doc:b.md", [node(3)], expected_version=1)
    verdict = await verify_tenant(app_pool, scope.tenant_id)
    assert str(verdict).startswith("ok, 5 events")


async def test_a_stale_expected_version_writes_nothing(store: EventStore, scope: Scope) -> None:
    await store.append(scope, "doc:a.md", [node(0)])
    with pytest.raises(ConcurrencyConflictError, match=r"'doc:a\.md' is at version 1"):
        await append_multi(
            store,
            scope,
            [StreamEvent("doc:b.md", node(1)), StreamEvent("doc:a.md", node(2))],
            expected_versions={"doc:a.md": 0, "doc:b.md": 0},
        )
    assert await store.count(scope) == 1
    with pytest.raises(ValidationError, match="stream id"):
        await append_multi(store, scope, [StreamEvent("bad\nid", node(1))])
    assert await append_multi(store, scope, []) == []
