"""After a large catch-up the projected tables have planner statistics at once.

Without them the first queries after a backfill or a large sync planned as if the tables were
empty (an anchor build 15 times slower) until autovacuum came by.
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import pytest

from kg.config import Scope
from kg.events import EdgeAsserted, EventStore, NodeAsserted
from kg.ingest.service import ingest_paths
from kg.projections import ProjectionRunner
from kg.projections.runner import ANALYZE_AFTER
from kg.runtime import Runtime


async def statistics_rows(pool: asyncpg.Pool, table: str) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM pg_stats WHERE tablename = $1", table))


@pytest.fixture(autouse=True)
async def no_autovacuum(system_pool: asyncpg.Pool) -> None:
    """These tests watch kg's own ANALYZE: PostgreSQL's autovacuum, which analyzes a table on
    its own once enough rows changed, would give statistics early on a busy machine and fail
    the "not yet" checks (seen in a parallel run under load)."""
    for table in ("kg_nodes", "kg_edges"):
        await system_pool.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")


async def test_a_large_catch_up_leaves_fresh_statistics_on_every_projected_table(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    count = ANALYZE_AFTER // 2 + 10
    nodes = [
        NodeAsserted(node_id=f"file:{i}", node_type="File", name=f"f{i}") for i in range(count)
    ]
    edges = [
        EdgeAsserted(edge_type="REFERENCES", from_node=f"file:{i}", to_node=f"file:{i - 1}")
        for i in range(1, count)
    ]
    await store.append(scope, "bulk", [*nodes, *edges])
    assert await statistics_rows(system_pool, "kg_nodes") == 0

    applied = await runner.catch_up()

    assert applied >= ANALYZE_AFTER
    assert await statistics_rows(system_pool, "kg_nodes") > 0
    assert await statistics_rows(system_pool, "kg_edges") > 0


async def test_many_small_catch_ups_adding_up_to_a_large_one_refresh_them_too(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    """An import through the write path (``kg import memory``) or a busy server catches up a
    chunk at a time: the statistics come all the same once the chunks add up."""
    chunk = ANALYZE_AFTER // 4
    for c in range(3):
        await store.append(
            scope,
            f"chunk-{c}",
            [
                NodeAsserted(node_id=f"file:{c}-{i}", node_type="File", name=f"f{i}")
                for i in range(chunk)
            ],
        )
        await runner.catch_up()
    assert await statistics_rows(system_pool, "kg_nodes") == 0  # 3/4 of the way
    await store.append(
        scope,
        "chunk-3",
        [NodeAsserted(node_id=f"file:3-{i}", node_type="File", name=f"f{i}") for i in range(chunk)],
    )
    await runner.catch_up()
    assert await statistics_rows(system_pool, "kg_nodes") > 0


async def test_an_ingest_that_projects_in_the_background_analyzes_once_at_the_end(
    runtime: Runtime, system_pool: asyncpg.Pool
) -> None:
    root = runtime.settings.project_root
    for i in range(100):  # 11 events a file (10 nodes, their edges in one): over ANALYZE_AFTER
        sections = "\n\n".join(f"## Part {k}\n\nSee [next](spec-{i + 1}.md)." for k in range(8))
        (root / f"spec-{i}.md").write_text(f"# Spec {i}\n\n{sections}\n", encoding="utf-8")
    analyzed: list[tuple[str, ...] | None] = []
    analyze = runtime.runner.analyze

    async def counting(names: Sequence[str] | None = None) -> None:
        analyzed.append(None if names is None else tuple(names))
        await analyze(names)

    runtime.runner.analyze = counting  # type: ignore[method-assign]
    report = await ingest_paths(runtime, None)

    assert report.projected >= ANALYZE_AFTER
    assert analyzed == [None], "one refresh of every projection, after the last catch-up"
    assert await statistics_rows(system_pool, "kg_nodes") > 0
    assert await statistics_rows(system_pool, "kg_edges") > 0


async def test_a_bulk_ingest_analyzes_each_lane_when_it_is_done(
    runtime: Runtime, system_pool: asyncpg.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kg.ingest import bulk

    monkeypatch.setattr(bulk, "BULK_MIN_NODES", 1)  # drop the indexes, project in two lanes
    root = runtime.settings.project_root
    for i in range(5):
        (root / f"spec-{i}.md").write_text(f"# Spec {i}\n\n## Part\n\nText.\n", encoding="utf-8")
    analyzed: list[tuple[str, ...] | None] = []
    analyze = runtime.runner.analyze

    async def counting(names: Sequence[str] | None = None) -> None:
        analyzed.append(None if names is None else tuple(names))
        await analyze(names)

    runtime.runner.analyze = counting  # type: ignore[method-assign]
    await ingest_paths(runtime, None)

    others = tuple(p.name for p in runtime.runner.projections if p.name != "kg_nodes")
    assert sorted(analyzed, key=str) == sorted([("kg_nodes",), others], key=str)
    assert await statistics_rows(system_pool, "kg_nodes") > 0
    assert await statistics_rows(system_pool, "kg_edges") > 0
