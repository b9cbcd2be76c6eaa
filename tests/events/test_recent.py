"""The window of this process's latest appends that its runner projects without reading back."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg

from kg.config import Scope
from kg.embeddings import HashingEmbedder
from kg.events import EdgesAsserted, EventStore, NodeAsserted, NodeRetired
from kg.events.envelope import RecordedEvent
from kg.events.knowledge import AssertedEdge
from kg.events.recent import RecentEvents
from kg.events.store import SELECT_EVENT, record_from_row
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.projections.digest import table_digest


async def _log(system_pool: asyncpg.Pool, tenant: str) -> list[RecordedEvent]:
    rows = await system_pool.fetch(
        f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 ORDER BY position", tenant
    )
    return [record_from_row(r) for r in rows]


def _events(n: int) -> list[NodeAsserted | EdgesAsserted]:
    nodes: list[NodeAsserted | EdgesAsserted] = [
        NodeAsserted(
            node_id=f"function:m.py#f{i}",
            node_type="Function",
            name=f"f{i}",
            content=f"def f{i}(x: float) -> float:\n    return x * {i}.5",
            properties={"line": i, "weight": 0.1 * i, "big": 10**20, "tags": ["a", "é"]},
        )
        for i in range(n)
    ]
    edges = tuple(
        AssertedEdge(
            edge_type="CALLS", from_node=f"function:m.py#f{i}", to_node=f"function:m.py#f{i + 1}"
        )
        for i in range(n - 1)
    )
    return [*nodes, EdgesAsserted(edges=edges)]


async def test_the_window_holds_exactly_what_a_read_of_the_log_returns(
    app_pool: asyncpg.Pool, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    recent = RecentEvents()
    store = EventStore(app_pool, recent)
    await store.append(scope, "doc:m.py", _events(5))
    await store.append(scope, "doc:n.py", [NodeRetired(node_id="function:m.py#f0")])
    held = recent.take(scope.tenant_id, 0, 7, None)
    assert held is not None and [e.position for e in held] == list(range(1, 8))
    assert held == await _log(system_pool, scope.tenant_id), "payload, metadata, content, time"
    assert [e.event for e in held] == [e.event for e in await _log(system_pool, scope.tenant_id)]
    only = recent.take(scope.tenant_id, 2, 7, ["NodeRetired"])
    assert only is not None and [e.event_type for e in only] == ["NodeRetired"]
    assert recent.take(scope.tenant_id, 0, 8, None) is None, "position 8 is not held"


def record(position: int) -> RecordedEvent:
    return RecordedEvent(
        position, f"id{position}", "t", "p", "s", position, "NodeRetired", 1,
        {"node_id": f"x:{position}"}, {}, datetime(2026, 1, 1, tzinfo=UTC), None,
        "0" * 64, "1" * 64,
    )  # fmt: skip


def test_a_gap_starts_a_new_window_and_the_oldest_events_go_first() -> None:
    recent = RecentEvents(max_events=3, max_bytes=1000)
    recent.add("t", [record(1), record(2)], [10, 10])
    recent.add("t", [record(4)], [10])  # another process appended position 3
    assert recent.take("t", 0, 2, None) is None
    assert recent.take("t", 3, 4, None) == [record(4)]
    recent.add("t", [record(5), record(6), record(7)], [10, 10, 10])
    assert recent.take("t", 3, 7, None) is None, "position 4 was dropped: the window is full"
    assert [e.position for e in recent.take("t", 4, 7, None) or []] == [5, 6, 7]
    recent.forget("t", 5)
    assert recent.take("t", 4, 7, None) is None
    assert [e.position for e in recent.take("t", 5, 7, None) or []] == [6, 7]
    recent.add("t", [record(8)], [990])  # over the byte budget: the oldest go
    assert recent.take("t", 5, 8, None) is None
    assert [e.position for e in recent.take("t", 7, 8, None) or []] == [8]
    recent.clear("t")
    assert recent.take("t", 7, 8, None) is None


async def test_a_runner_fed_by_the_window_projects_what_a_rebuild_from_the_log_does(
    app_pool: asyncpg.Pool, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    recent = RecentEvents()
    store = EventStore(app_pool, recent)
    for n in range(3):
        await store.append(scope, f"doc:{n}.py", _events(4 + n))
    await store.append(scope, "doc:0.py", [NodeRetired(node_id="function:m.py#f1")])
    ctx = ProjectionContext(HashingEmbedder())
    fed = ProjectionRunner(system_pool, default_projections(), ctx, recent=recent)
    taken: list[int] = []
    take = recent.take

    def counting(tenant: str, after: int, end: int, types: object) -> object:
        held = take(tenant, after, end, types)  # type: ignore[arg-type]
        taken.append(0 if held is None else len(held))
        return held

    recent.take = counting  # type: ignore[assignment,method-assign]
    await fed.catch_up()
    assert taken and all(taken), "every batch came from the window"
    digests = {t: await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")}
    await ProjectionRunner(system_pool, default_projections(), ctx).rebuild()
    assert digests == {t: await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")}


async def test_erased_content_is_read_from_the_log_not_from_the_window(
    app_pool: asyncpg.Pool, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    recent = RecentEvents()
    store = EventStore(app_pool, recent)
    await store.append(scope, "doc:m.py", _events(2))
    await system_pool.execute(  # as an erasure by another process would, beside its event
        "DELETE FROM kg_event_content WHERE tenant_id = $1", scope.tenant_id
    )
    from kg.events import ContentErased

    await EventStore(app_pool).append(
        scope,
        "erasure",
        [
            ContentErased(
                erasure_id="e1", selector="source", reason="test", authority="t", erased=()
            )
        ],
    )
    runner = ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(HashingEmbedder()), recent=recent
    )
    await runner.catch_up()
    contents = await system_pool.fetch("SELECT content FROM kg_nodes ORDER BY node_id")
    assert [r["content"] for r in contents] == ["[erased]", "[erased]"]


def test_the_trail_names_a_batch_of_edges_and_how_many_it_holds() -> None:
    from kg.audit.trail import describe

    event = _events(6)[-1]
    stored = RecordedEvent(
        7, "id7", "t", "p", "doc:m.py", 7, "EdgesAsserted", 1, event.to_payload(), {},
        datetime(2026, 1, 1, tzinfo=UTC), None, "0" * 64, "1" * 64,
    )  # fmt: skip
    subject, what, _ = describe(stored)
    assert subject == "function:m.py#f0"
    assert what.startswith("5 edges asserted: function:m.py#f0 -CALLS-> function:m.py#f1; ")
    assert what.endswith(" and 2 more")
