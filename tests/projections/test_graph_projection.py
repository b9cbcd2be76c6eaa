"""kg_nodes and kg_edges built from the log: contents, retirement, rebuild, the cache."""

from __future__ import annotations

import re
import struct

import asyncpg
import pytest

from kg.config import Scope
from kg.embeddings import HashingEmbedder
from kg.events import EdgeAsserted, EdgeRetracted, EventStore, NodeAsserted, NodeRetired
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.projections.digest import table_digest

from .conftest import CountingEmbedder


def doc(i: int, content: str | None = None) -> NodeAsserted:
    return NodeAsserted(
        node_id=f"document:d{i}.md",
        node_type="Document",
        name=f"Document {i}",
        content=content if content is not None else f"Specification number {i} about payments",
        labels=("spec",),
        properties={"n": i},
    )


def link(a: int, b: int, edge_type: str = "REFERENCES") -> EdgeAsserted:
    return EdgeAsserted(
        edge_type=edge_type, from_node=f"document:d{a}.md", to_node=f"document:d{b}.md", weight=0.5
    )


async def nodes(pool: asyncpg.Pool) -> dict[str, asyncpg.Record]:
    rows = await pool.fetch("SELECT * FROM kg_nodes ORDER BY node_id")
    return {r["node_id"]: r for r in rows}


async def edges(pool: asyncpg.Pool) -> list[tuple[str, str, str]]:
    rows = await pool.fetch("SELECT from_node, edge_type, to_node FROM kg_edges ORDER BY edge_id")
    return [tuple(r) for r in rows]


async def test_nodes_and_edges_are_projected_with_scope_embedding_and_text(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    await store.append(scope, "s", [doc(1), doc(2), link(1, 2)])
    assert await runner.catch_up() == 3

    projected = await nodes(system_pool)
    d1 = projected["document:d1.md"]
    assert (d1["tenant_id"], d1["project_id"], d1["node_type"]) == ("acme", "webshop", "Document")
    assert d1["labels"] == ["spec"] and d1["first_position"] == 1 and d1["last_position"] == 1
    assert d1["embedding"] is not None
    assert (
        await system_pool.fetchval(
            "SELECT count(*) FROM kg_nodes WHERE tsv @@ plainto_tsquery('english', 'payments')"
        )
        == 2
    )
    assert await edges(system_pool) == [("document:d1.md", "REFERENCES", "document:d2.md")]


async def test_changed_node_keeps_its_creation_and_moves_its_last_position(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    await store.append(scope, "s", [doc(1)])
    await runner.catch_up()
    await store.append(scope, "s", [doc(1, content="rewritten")])
    await runner.catch_up()
    d1 = (await nodes(system_pool))["document:d1.md"]
    assert (d1["content"], d1["first_position"], d1["last_position"]) == ("rewritten", 1, 2)
    assert d1["created_at"] < d1["updated_at"]


async def test_retired_node_disappears_with_its_edges_but_the_log_keeps_it(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    await store.append(scope, "s", [doc(1), doc(2), doc(3), link(1, 2), link(2, 3), link(1, 3)])
    await runner.catch_up()
    await store.append(scope, "s", [NodeRetired(node_id="document:d2.md", reason="deleted")])
    await runner.catch_up()
    assert set(await nodes(system_pool)) == {"document:d1.md", "document:d3.md"}
    assert await edges(system_pool) == [("document:d1.md", "REFERENCES", "document:d3.md")]
    assert await store.count(scope) == 7


async def test_retracted_edge_disappears(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    await store.append(scope, "s", [doc(1), doc(2), link(1, 2), link(1, 2, "USES")])
    await store.append(
        scope,
        "s",
        [EdgeRetracted(edge_type="USES", from_node="document:d1.md", to_node="document:d2.md")],
    )
    await runner.catch_up()
    assert await edges(system_pool) == [("document:d1.md", "REFERENCES", "document:d2.md")]


async def test_order_inside_one_batch_is_respected(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    retire = NodeRetired(node_id="document:d1.md")
    await store.append(scope, "s", [doc(1), doc(2), link(1, 2), retire, doc(1, "back"), link(2, 1)])
    await runner.catch_up()
    d1 = (await nodes(system_pool))["document:d1.md"]
    assert d1["content"] == "back" and d1["first_position"] == 5, "re-created after retirement"
    assert await edges(system_pool) == [("document:d2.md", "REFERENCES", "document:d1.md")]


async def test_rebuild_reproduces_every_row_and_embeds_nothing_again(
    store: EventStore,
    scope: Scope,
    runner: ProjectionRunner,
    system_pool: asyncpg.Pool,
    embedder: CountingEmbedder,
) -> None:
    await store.append(
        scope, "s", [doc(i) for i in range(120)] + [link(i, i + 1) for i in range(119)]
    )
    await store.append(Scope("other", "p"), "s", [doc(1), doc(2), link(1, 2)])
    await store.append(scope, "s", [NodeRetired(node_id="document:d7.md"), doc(3, "changed")])
    await runner.catch_up()
    before = [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")]
    embedded_before = embedder.texts
    assert embedded_before == 121, (
        "120 distinct texts plus one changed one; the other tenant's are cached"
    )

    await runner.rebuild()
    after = [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")]
    assert after == before
    assert embedder.texts == embedded_before, "a rebuild recomputes no embedding"


async def test_unchanged_content_is_never_embedded_twice(
    store: EventStore, scope: Scope, runner: ProjectionRunner, embedder: CountingEmbedder
) -> None:
    await store.append(scope, "s", [doc(1)])
    await runner.catch_up()
    await store.append(scope, "s", [doc(1), doc(1)])
    await runner.catch_up()
    assert embedder.texts == 1


async def test_a_second_model_never_mixes_its_vectors_in_and_says_how_to_switch(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    await store.append(scope, "s", [doc(1)])
    await runner.catch_up()

    other_model = HashingEmbedder()
    other_model.model_id = "other-model"
    ctx = ProjectionContext(other_model)
    other = ProjectionRunner(system_pool, default_projections(), ctx)
    await store.append(scope, "s", [doc(2)])
    # Degraded, not blocked (issue 30): the node is projected, without a vector of either model.
    await other.catch_up()
    assert ctx.embedding_problem is not None
    assert re.search(r"hashing-v1-384.*other-model.*rebuild", ctx.embedding_problem)
    rows = await system_pool.fetch("SELECT node_id, embedding IS NULL AS waiting FROM kg_nodes")
    assert {r["node_id"]: r["waiting"] for r in rows} == {
        "document:d1.md": False,
        "document:d2.md": True,
    }
    assert (
        await system_pool.fetchval(
            "SELECT count(*) FROM embedding_cache WHERE model_id = 'other-model'"
        )
        == 0
    ), "nothing was embedded with a model the index does not hold"

    await other.rebuild()
    assert await system_pool.fetchval("SELECT model_id FROM kg_embedding_index") == "other-model"
    assert await system_pool.fetchval("SELECT count(*) FROM kg_nodes WHERE embedding IS NULL") == 0


async def test_application_role_sees_only_its_tenants_rows(
    store: EventStore, runner: ProjectionRunner, app_pool: asyncpg.Pool
) -> None:
    await store.append(Scope("a", "p"), "s", [doc(1, "alpha secret")])
    await store.append(Scope("b", "p"), "s", [doc(1, "bravo")])
    await runner.catch_up()
    async with app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', 'b', true)")
        rows = await conn.fetch("SELECT tenant_id, content FROM kg_nodes")
    assert [tuple(r) for r in rows] == [("b", "bravo")]


async def test_status_shows_position_and_lag(
    store: EventStore, scope: Scope, runner: ProjectionRunner
) -> None:
    await store.append(scope, "s", [doc(1), doc(2)])
    names = {"kg_nodes", "kg_edges", "context_graphs", "context_graph_usage"}
    await store.append(Scope("other", "p"), "s", [doc(3)])
    status = await runner.status(scope.tenant_id)
    assert {(s.name, s.lag) for s in status} == {(n, 2) for n in names}
    await runner.catch_up()
    # Positions, checkpoints and lag are the tenant's own.
    caught_up = {(s.name, s.position, s.lag) for s in await runner.status(scope.tenant_id)}
    assert caught_up == {(n, 2, 0) for n in names}
    assert {(s.position, s.lag) for s in await runner.status("other")} == {(1, 0)}


async def test_a_long_catch_up_builds_the_vector_index_in_bulk_with_the_same_rows(
    store: EventStore, scope: Scope, system_pool: asyncpg.Pool, embedder: CountingEmbedder
) -> None:
    await store.append(
        scope, "s", [doc(i) for i in range(60)] + [link(i, i + 1) for i in range(59)]
    )
    bulk = ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(embedder), bulk_threshold=100
    )
    await bulk.catch_up()
    in_bulk = await table_digest(system_pool, "kg_nodes")
    index = await system_pool.fetchval("SELECT to_regclass('kg_nodes_embedding') IS NOT NULL")
    assert index, "the HNSW index is back after the bulk catch-up"
    await ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(embedder)
    ).rebuild()
    assert await table_digest(system_pool, "kg_nodes") == in_bulk


async def test_cached_vectors_are_the_embedders_own_row_by_row(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    contents = [f"Section {i} on {word}" for i, word in enumerate(("refunds", "tokens", "queues"))]
    await store.append(scope, "s", [doc(i, c) for i, c in enumerate(contents)])
    await runner.catch_up()
    rows = await system_pool.fetch(
        "SELECT node_id, embedding::real[] AS v FROM kg_nodes ORDER BY node_id"
    )
    expected = HashingEmbedder().embed([f"Document {i}\n\n{c}" for i, c in enumerate(contents)])
    assert [r["node_id"] for r in rows] == [f"document:d{i}.md" for i in range(3)]
    for row, vector in zip(rows, expected, strict=True):
        # Stored as float4: equal to the embedder's float64 vector up to float4 rounding.
        assert row["v"] == pytest.approx(vector, abs=1e-7)
        assert len(row["v"]) == 384


async def test_a_missing_vector_index_is_rebuilt_by_the_next_runner_and_kept_otherwise(
    store: EventStore, scope: Scope, system_pool: asyncpg.Pool, embedder: CountingEmbedder
) -> None:
    def fresh() -> ProjectionRunner:
        return ProjectionRunner(system_pool, default_projections(), ProjectionContext(embedder))

    await store.append(scope, "s", [doc(1), doc(2)])
    await fresh().catch_up()
    oid = await system_pool.fetchval("SELECT to_regclass('kg_nodes_embedding')::oid")
    await fresh().catch_up()
    assert await system_pool.fetchval("SELECT to_regclass('kg_nodes_embedding')::oid") == oid, (
        "an existing index is left alone"
    )
    await system_pool.execute("DROP INDEX kg_nodes_embedding")  # a rebuild killed half-way
    await fresh().catch_up()
    assert await system_pool.fetchval("SELECT to_regclass('kg_nodes_embedding') IS NOT NULL")


async def test_a_batch_read_ahead_is_not_used_once_another_runner_moved_on(
    store: EventStore, scope: Scope, system_pool: asyncpg.Pool, embedder: CountingEmbedder
) -> None:
    await store.append(scope, "s", [doc(i) for i in range(40)])
    a = ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(embedder), batch_size=10
    )
    b = ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(embedder), batch_size=7
    )
    async with system_pool.acquire() as conn:
        await a._ensure_rows(conn, [scope.tenant_id])  # creates the checkpoint rows
    # Interleave two runners' batches: each one's read-ahead goes stale after the other's batch.
    applied = 0
    ahead_a = ahead_b = None
    for _ in range(10):
        n, ahead_a = await a._apply_next_batch(a.projections, scope.tenant_id, None, ahead_a)
        applied += n
        m, ahead_b = await b._apply_next_batch(b.projections, scope.tenant_id, None, ahead_b)
        applied += m
    for ahead in (ahead_a, ahead_b):
        if ahead is not None:
            await ahead.discard()
    assert applied == 40, "every event applied exactly once between the two"
    rows = await system_pool.fetch("SELECT first_position, last_position FROM kg_nodes")
    assert sorted(r["first_position"] for r in rows) == list(range(1, 41))
    assert all(r["first_position"] == r["last_position"] for r in rows)


async def test_a_rebuild_restores_every_index_exactly_as_the_migrations_made_it(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    async def definitions() -> list[str]:
        rows = await system_pool.fetch(
            "SELECT indexdef FROM pg_indexes WHERE tablename IN ('kg_nodes', 'kg_edges') "
            "ORDER BY indexname"
        )
        return [r["indexdef"] for r in rows]

    migrated = await definitions()
    assert any("hnsw" in d for d in migrated) and any("gin (tsv)" in d for d in migrated)
    await store.append(scope, "s", [doc(i) for i in range(30)] + [link(1, 2)])
    await runner.rebuild()
    assert await definitions() == migrated


async def test_a_large_batch_of_vectors_goes_in_binary_with_the_same_values(
    store: EventStore, scope: Scope, system_pool: asyncpg.Pool, embedder: CountingEmbedder
) -> None:
    count = 70  # one batch above the binary threshold; the small batches above go as text
    await store.append(scope, "s", [doc(i, f"Text number {i} about tokens") for i in range(count)])
    runner = ProjectionRunner(system_pool, default_projections(), ProjectionContext(embedder))
    await runner.catch_up()
    assert embedder.calls == 1 and embedder.texts == count
    rows = await system_pool.fetch(
        "SELECT node_id, embedding::real[] AS v FROM kg_nodes ORDER BY first_position"
    )
    expected = HashingEmbedder().embed(
        [f"Document {i}\n\nText number {i} about tokens" for i in range(count)]
    )
    assert len(rows) == count
    for row, vector in zip(rows, expected, strict=True):
        assert row["v"] == pytest.approx(vector, abs=1e-7)


async def _index_names(pool: asyncpg.Pool, table: str) -> set[str]:
    rows = await pool.fetch("SELECT indexname FROM pg_indexes WHERE tablename = $1", table)
    return {r["indexname"] for r in rows}


async def test_a_bulk_replay_with_retirements_projects_what_an_incremental_one_does(
    store: EventStore, scope: Scope, system_pool: asyncpg.Pool, embedder: CountingEmbedder
) -> None:
    # Nodes first, then edges, retirements (one node retired with its edges, then asserted
    # again with a new edge to it), a retraction: the rebuild drops kg_edges' secondary indexes
    # and has to build them back at the first retirement; with batches of 5, each lane also
    # reads the positions it skips (the other lane's) in spans of several batches.
    await store.append(scope, "s", [doc(i) for i in range(40)])
    await store.append(scope, "s", [link(i, (i * 7 + 3) % 40) for i in range(40)])
    await store.append(scope, "s", [link(i, i + 1, "USES") for i in range(39)])
    await store.append(scope, "s", [NodeRetired(node_id="document:d3.md"), doc(41)])
    await store.append(scope, "s", [doc(3, "back again"), link(3, 41), link(20, 3, "USES")])
    await store.append(
        scope,
        "s",
        [EdgeRetracted(edge_type="USES", from_node="document:d5.md", to_node="document:d6.md")],
    )
    await store.append(scope, "s", [NodeRetired(node_id="document:d30.md")])

    def fresh(**options: int) -> ProjectionRunner:
        return ProjectionRunner(
            system_pool, default_projections(), ProjectionContext(embedder), **options
        )

    await fresh(batch_size=5).catch_up()
    incremental = [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")]
    indexes = await _index_names(system_pool, "kg_edges")
    assert "kg_edges_out" in indexes and "kg_edges_governed_by" in indexes

    await fresh(batch_size=5).rebuild()
    assert [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")] == incremental
    assert await _index_names(system_pool, "kg_edges") == indexes

    # The same log projected from empty by an automatic bulk catch-up, one large batch.
    async with system_pool.acquire() as conn:
        await conn.execute("TRUNCATE kg_nodes, kg_edges, kg_passages")
        await conn.execute("UPDATE projection_checkpoints SET position = 0")
    await fresh(batch_size=500, bulk_threshold=10).catch_up()
    assert [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")] == incremental
    assert await _index_names(system_pool, "kg_edges") == indexes


async def test_edges_drop_their_secondary_indexes_for_a_bulk_catch_up_only_when_empty(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    edges_projection = next(p for p in runner.projections if p.name == "kg_edges")
    nodes_projection = next(p for p in runner.projections if p.name == "kg_nodes")
    async with system_pool.acquire() as conn:
        await edges_projection.prepare_bulk(conn)
        await nodes_projection.prepare_bulk(conn)
    assert await _index_names(system_pool, "kg_edges") == {"kg_edges_pkey"}, "empty: dropped"
    assert await _index_names(system_pool, "kg_nodes") == {"kg_nodes_pkey"}
    await store.append(scope, "s", [doc(1), doc(2), link(1, 2)])
    await runner.catch_up()  # the runner's first catch-up restores what a bulk one left dropped
    full = await _index_names(system_pool, "kg_edges")
    assert {"kg_edges_out", "kg_edges_in", "kg_edges_type", "kg_edges_governed_by"} <= full
    async with system_pool.acquire() as conn:
        await edges_projection.prepare_bulk(conn)
        await nodes_projection.prepare_bulk(conn)
    assert await _index_names(system_pool, "kg_edges") == full, "populated: kept"
    assert "kg_nodes_type" in await _index_names(system_pool, "kg_nodes")


async def test_integers_beyond_64_bits_in_properties_are_projected_exactly(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    big = 2**70 + 1  # orjson refuses it: the batch's JSON goes through the standard library
    node = NodeAsserted(
        node_id="document:big.md", node_type="Document", name="Big", properties={"n": big}
    )
    edge = EdgeAsserted(
        edge_type="REFERENCES",
        from_node="document:big.md",
        to_node="document:d1.md",
        properties={"n": big},
        weight=0.1,
    )
    await store.append(scope, "s", [doc(1), node, edge])
    await runner.catch_up()
    stored = await system_pool.fetch(
        "SELECT properties->>'n' AS n FROM kg_nodes WHERE node_id = 'document:big.md' "
        "UNION ALL SELECT properties->>'n' FROM kg_edges"
    )
    assert [r["n"] for r in stored] == [str(big), str(big)]
    # The weight, read from the JSON as float8 and cast: the float4 nearest 0.1, as before.
    assert await system_pool.fetchval("SELECT weight FROM kg_edges") == _float4(0.1)


def _float4(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


async def test_a_hubs_successors_are_read_from_the_supersedes_index(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    """Every node a read returns carries the nodes superseding it. A hub's incoming edges run
    to thousands (one with 7,000 cost 2 ms a lookup at 100,000 nodes, most of a build's hop):
    the lookup reads a partial index of SUPERSEDES edges only (migration 0021)."""
    from kg.projections.graph_reader import _NODES

    await store.append(scope, "s", [doc(i) for i in range(301)])
    await store.append(
        scope, "s", [link(i, 0) for i in range(1, 301)] + [link(300, 0, "SUPERSEDES")]
    )
    await runner.catch_up()
    async with system_pool.acquire() as conn, conn.transaction():
        await conn.execute("ANALYZE kg_edges; SET LOCAL enable_seqscan = off")
        row = await conn.fetchrow(_NODES, scope.tenant_id, scope.project_id, ["document:d0.md"])
        plan = await conn.fetchval(
            "EXPLAIN (FORMAT JSON) " + _NODES, scope.tenant_id, scope.project_id, ["document:d0.md"]
        )
    assert row is not None and list(row["superseded_by"]) == ["document:d300.md"]
    assert "kg_edges_supersedes" in plan
