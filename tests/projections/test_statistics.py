"""After a large catch-up the projected tables have planner statistics at once.

Without them the first queries after a backfill or a large sync planned as if the tables were
empty (an anchor build 15 times slower) until autovacuum came by.
"""

from __future__ import annotations

import asyncpg

from kg.config import Scope
from kg.events import EdgeAsserted, EventStore, NodeAsserted
from kg.projections import ProjectionRunner
from kg.projections.runner import ANALYZE_AFTER


async def statistics_rows(pool: asyncpg.Pool, table: str) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM pg_stats WHERE tablename = $1", table))


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
