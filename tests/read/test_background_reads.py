"""Reads beside a background projector (issue 34 item 5): a read never waits on a backlog it
did not write, says how far behind it is, and waits for its caller's own write only.

A backlog here is events appended and not projected (nothing tails the log in these tests), so
what a read projects is exactly what the checkpoints show.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from kg import graph_queries
from kg.context import service
from kg.errors import ProjectionLagError
from kg.events import EdgeAsserted, NodeAsserted, PolicyDefined, written
from kg.policies.model import PolicyRule
from kg.runtime import Runtime


def node(i: int, word: str = "ledger") -> NodeAsserted:
    return NodeAsserted(
        node_id=f"component:c{i}", node_type="Component", name=f"C{i}", content=f"{word} {i}."
    )


async def positions(runtime: Runtime) -> set[int]:
    """Where the scope's projections stand (one position when they agree)."""
    return {s.position for s in await runtime.runner.status(runtime.scope.tenant_id)}


@pytest.fixture
async def background(runtime: Runtime) -> AsyncIterator[Runtime]:
    """The runtime as the MCP server runs it: reads in background mode, one client's writes
    bound (what the server does per request), a projected graph of 3 nodes."""
    await runtime.store.append(runtime.scope, "seed", [node(i) for i in range(3)])
    await runtime.catch_up()
    reader = runtime.reader()
    reader.background = True
    token = written.bind(written.Writes())
    try:
        yield runtime
    finally:
        written.unbind(token)
        reader.background = False


async def test_a_read_returns_without_projecting_a_backlog_and_says_it_is_behind(
    background: Runtime,
) -> None:
    rt = background
    (before,) = await positions(rt)
    # Another writer's backlog: outside this caller's writes.
    token = written.bind(written.Writes())
    try:
        appended = await rt.store.append(rt.scope, "other", [node(i) for i in range(3, 13)])
    finally:
        written.unbind(token)
    found = await graph_queries.query_knowledge_graph(rt, "ledger", mode="fulltext", limit=50)
    assert await positions(rt) == {before}, "the read projected nothing"
    assert found.projected_to == before
    assert found.behind == appended.last_position - before == 10
    assert {r.node_id for r in found.results} == {f"component:c{i}" for i in range(3)}
    assert any("still being projected" in w for w in found.warnings)
    # A context build says so too, and is logged as of the position it read.
    request = service.parse_request(anchors=("component:c0",), mode="anchor")
    graph = await service.build_context_graph(rt, request)
    assert graph.behind >= 10 and graph.as_of_position == before
    assert any("still being projected" in w for w in graph.warnings)
    assert await positions(rt) == {before}
    # Inline (a one-shot command): the same read catches up first and is current.
    rt.reader().background = False
    found = await graph_queries.query_knowledge_graph(rt, "ledger", mode="fulltext", limit=50)
    assert found.behind == 0 and len(found.results) == 13


async def test_a_sessions_own_write_is_visible_to_its_next_read(background: Runtime) -> None:
    rt = background
    (before,) = await positions(rt)
    mine = await rt.store.append(rt.scope, "mine", [node(50, "invoice")])
    # Written after it by someone else: not waited for.
    token = written.bind(written.Writes())
    try:
        theirs = await rt.store.append(rt.scope, "theirs", [node(i, "invoice") for i in (60, 61)])
    finally:
        written.unbind(token)
    found = await graph_queries.query_knowledge_graph(rt, "invoice", mode="fulltext")
    assert [r.node_id for r in found.results] == ["component:c50"]
    at = {s.name: s.position for s in await rt.runner.status(rt.scope.tenant_id)}
    # The projection that reads my write (a node), up to it and no further; the others (edges,
    # records) read none of it.
    assert at["kg_nodes"] == mine.last_position
    assert at["kg_edges"] == at["context_graphs"] == at["context_graph_usage"] == before
    assert found.behind == theirs.last_position - before
    # Nothing more of mine to wait for: the next read projects nothing.
    await graph_queries.query_knowledge_graph(rt, "invoice", mode="fulltext")
    assert {s.name: s.position for s in await rt.runner.status(rt.scope.tenant_id)} == at


async def test_a_policy_change_applies_to_the_next_read_at_once(background: Runtime) -> None:
    rt = background
    token = written.bind(written.Writes())  # another process (a policy sync) wrote it
    try:
        await rt.store.append(
            rt.scope,
            "policies",
            [
                PolicyDefined(policy_id="policy:v", name="Vault", rule=PolicyRule(effect="deny")),
                EdgeAsserted(edge_type="GOVERNED_BY", from_node="component:c1", to_node="policy:v"),
            ],
        )
    finally:
        written.unbind(token)
    found = await graph_queries.query_knowledge_graph(rt, "ledger", mode="fulltext")
    assert "component:c1" not in {r.node_id for r in found.results}
    assert found.excluded_by_policy == 1 and found.behind == 0


async def test_a_write_not_projected_in_time_is_a_clear_error(
    background: Runtime, system_pool: asyncpg.Pool
) -> None:
    rt = background
    mine = await rt.store.append(rt.scope, "mine", [node(70)])
    rt.reader().wait_timeout = 0.5
    async with system_pool.acquire() as conn, conn.transaction():
        # Another projector holds the checkpoints (a long batch): the catch-up cannot start.
        await conn.execute(
            "SELECT 1 FROM projection_checkpoints WHERE tenant_id = $1 FOR UPDATE",
            rt.scope.tenant_id,
        )
        with pytest.raises(ProjectionLagError) as error:
            await graph_queries.query_knowledge_graph(rt, "ledger", mode="fulltext")
    assert f"log position {mine.last_position}" in str(error.value)
    assert "kg projections status" in str(error.value)
    # Once the projector lets go, the same read goes through and sees the write.
    found = await graph_queries.query_knowledge_graph(rt, "ledger", mode="fulltext", limit=50)
    assert "component:c70" in {r.node_id for r in found.results}


async def test_policies_are_read_again_only_when_the_projected_graph_moved(
    runtime: Runtime,
) -> None:
    await runtime.store.append(
        runtime.scope,
        "policies",
        [PolicyDefined(policy_id="policy:p", name="P", rule=PolicyRule(effect="redact"))],
    )
    reader = runtime.reader()
    async with reader.snapshot() as snap:
        first = (await snap.governed()).governance.policies
    async with reader.snapshot() as snap:
        again = (await snap.governed()).governance.policies
    assert again["policy:p"] is first["policy:p"], "the same state: the cached policies"
    await runtime.store.append(
        runtime.scope,
        "policies",
        [PolicyDefined(policy_id="policy:q", name="Q", rule=PolicyRule(effect="redact"))],
    )
    async with reader.snapshot() as snap:
        moved = (await snap.governed()).governance.policies
    assert set(moved) == {"policy:p", "policy:q"}


async def test_concurrent_reads_of_one_session_wait_for_the_same_write(
    background: Runtime,
) -> None:
    rt = background
    await rt.store.append(rt.scope, "mine", [node(80, "voucher")])
    found = await asyncio.gather(
        *(graph_queries.query_knowledge_graph(rt, "voucher", mode="fulltext") for _ in range(4))
    )
    assert all([r.node_id for r in f.results] == ["component:c80"] for f in found)


async def test_a_logged_context_graph_is_waited_for_by_its_records_only(
    background: Runtime,
) -> None:
    rt = background
    (before,) = await positions(rt)
    token = written.bind(written.Writes())  # other writers' backlog of graph events
    try:
        await rt.store.append(rt.scope, "other", [node(i) for i in range(100, 110)])
    finally:
        written.unbind(token)
    request = service.parse_request(anchors=("component:c0",), mode="anchor")
    graph = await service.build_context_graph(rt, request)
    # The next call needs the logged graph (its record), not the backlog before it.
    await service.record_context_usage(rt, graph.context_graph_id, "call-1")
    at = {s.name: s.position for s in await rt.runner.status(rt.scope.tenant_id)}
    assert at["kg_nodes"] == at["kg_edges"] == before, "the graph's backlog was not projected"
    assert at["context_graphs"] > before + 10, "the records were, up to the caller's write"
