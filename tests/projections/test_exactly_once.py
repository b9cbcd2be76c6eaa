"""Invariant 6: a projection's rows and checkpoint commit together, even under kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import asyncpg

from kg.config import Scope
from kg.events import EventStore, NodeAsserted
from kg.projections import ProjectionRunner
from kg.projections.digest import table_digest

TOTAL = 6000


async def test_killed_between_batches_restart_has_no_duplicates_and_no_gaps(
    db_url: str,
    store: EventStore,
    scope: Scope,
    system_pool: asyncpg.Pool,
    runner: ProjectionRunner,
) -> None:
    for start in range(0, TOTAL, 1000):
        files = [
            NodeAsserted(node_id=f"file:f{i}", node_type="File", name=f"file {i}")
            for i in range(start, start + 1000)
        ]
        await store.append(scope, "s", files)
    env = {**os.environ, "KG_DATABASE_URL": db_url, "KG_EMBEDDER": "hashing"}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kg.cli",
        "projections",
        "catch-up",
        "--batch-size",
        "25",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    checkpoint = 0
    for _ in range(600):
        await asyncio.sleep(0.05)
        checkpoint = await system_pool.fetchval(
            "SELECT coalesce(max(position), 0) FROM projection_checkpoints WHERE name = 'kg_nodes'"
        )
        if checkpoint >= 500:
            break
    os.kill(child.pid, signal.SIGKILL)
    await child.wait()
    checkpoint = await system_pool.fetchval(
        "SELECT position FROM projection_checkpoints WHERE name = 'kg_nodes'"
    )
    assert 0 < checkpoint < TOTAL, "the kill must land midway for this test to mean anything"
    rows = await system_pool.fetchval("SELECT count(*) FROM kg_nodes")
    assert rows == checkpoint, "rows and checkpoint committed together: one node per event"

    await runner.catch_up()
    assert await system_pool.fetchval("SELECT count(*) FROM kg_nodes") == TOTAL
    resumed = await table_digest(system_pool, "kg_nodes")
    await runner.rebuild()
    assert await table_digest(system_pool, "kg_nodes") == resumed


async def test_two_runners_at_once_apply_each_event_once(
    store: EventStore, scope: Scope, runner: ProjectionRunner, system_pool: asyncpg.Pool
) -> None:
    """Two tenants' logs, each with positions of its own, caught up by two runners at once."""
    other_scope = Scope("other", "p")
    for target, n in ((scope, 500), (other_scope, 300)):
        await store.append(
            target,
            "s",
            [NodeAsserted(node_id=f"file:f{i}", node_type="File", name="f") for i in range(n)],
        )
    other = ProjectionRunner(system_pool, runner.projections, runner.ctx, batch_size=30)
    await asyncio.gather(runner.catch_up(), other.catch_up())
    counts = await system_pool.fetch(
        "SELECT tenant_id, count(*) AS n FROM kg_nodes GROUP BY 1 ORDER BY 1"
    )
    assert [tuple(r) for r in counts] == [(scope.tenant_id, 500), ("other", 300)]
    assert {(s.position, s.lag) for s in await runner.status(scope.tenant_id)} == {(500, 0)}
    assert {(s.position, s.lag) for s in await runner.status("other")} == {(300, 0)}
