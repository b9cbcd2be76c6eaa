"""Many tasks of one process catching up at once (an MCP server answering concurrent tool
calls while events are pending) all finish: a catch-up holds the checkpoint rows and reads the
log on a second connection of the same pool, so catch-ups queued on those rows, one per pooled
connection, used to leave it none and waited on each other forever."""

from __future__ import annotations

import asyncio

import asyncpg

from kg.config import Scope
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder
from kg.events import EventStore, NodeAsserted
from kg.projections import ProjectionContext, ProjectionRunner, default_projections

POOL_SIZE = 3
CALLERS = 3 * POOL_SIZE
LIVENESS_SECONDS = 120  # a deadlock never ends; a working catch-up takes a second or two


async def test_more_concurrent_catch_ups_than_pooled_connections_all_finish(
    db_url: str, store: EventStore, scope: Scope, system_pool: asyncpg.Pool
) -> None:
    nodes = [NodeAsserted(node_id=f"file:f{i}", node_type="File", name=f"f{i}") for i in range(400)]
    await store.append(scope, "s", nodes)
    small = await create_pool(db_url, app_role=False, max_size=POOL_SIZE)
    try:
        runner = ProjectionRunner(
            small, default_projections(), ProjectionContext(HashingEmbedder()), batch_size=20
        )
        applied = await asyncio.wait_for(
            asyncio.gather(*(runner.catch_up() for _ in range(CALLERS))), LIVENESS_SECONDS
        )
    finally:
        small.terminate()
    assert sum(applied) > 0
    projected = await system_pool.fetchval("SELECT count(*) FROM kg_nodes")
    assert projected == len(nodes), "every event projected once"
    lag = await system_pool.fetchval(
        "SELECT max((SELECT max(position) FROM kg_events) - position) FROM projection_checkpoints"
    )
    assert lag == 0
