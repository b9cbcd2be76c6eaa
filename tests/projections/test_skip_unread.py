"""A catch-up over records no projection reads (served directives, usage) moves the checkpoints
without a batch, and still applies what follows them, whoever appended it."""

from __future__ import annotations

import asyncpg

from kg.config import Scope
from kg.embeddings import HashingEmbedder
from kg.events import EventStore, NodeAsserted
from kg.events.directives import DirectivesServed
from kg.events.recent import RecentEvents
from kg.projections import ProjectionContext, ProjectionRunner, default_projections


def served(n: int) -> DirectivesServed:
    return DirectivesServed(
        served_id=f"ds_{n}", request={}, detected={}, as_of_position=0, directive_ids=(),
        content_hash="0" * 64, considered=0, cut_by_budget=0, excluded_count=0,
        redacted_count=0, policies_applied=(), token_estimate=0,
    )  # fmt: skip


async def checkpoints(pool: asyncpg.Pool) -> set[int]:
    return {r[0] for r in await pool.fetch("SELECT position FROM projection_checkpoints")}


async def test_records_nobody_reads_are_passed_over_and_what_follows_is_applied(
    app_pool: asyncpg.Pool, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    recent = RecentEvents()
    store = EventStore(app_pool, recent)
    runner = ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(HashingEmbedder()), recent=recent
    )
    await store.append(scope, "s", [NodeAsserted(node_id="file:a", node_type="File", name="a")])
    assert await runner.catch_up() == 1

    for n in range(3):
        await store.append(scope, f"directives:{n}", [served(n)])
    assert await runner.catch_up() == 3, "three positions passed over"
    assert await checkpoints(system_pool) == {4}

    other = EventStore(app_pool)  # another process: this runner's window does not hold it
    await store.append(scope, "directives:3", [served(3)])
    await other.append(scope, "s2", [NodeAsserted(node_id="file:b", node_type="File", name="b")])
    await store.append(scope, "directives:4", [served(4)])
    assert await runner.catch_up() == 3
    assert await checkpoints(system_pool) == {7}
    names = {r[0] for r in await system_pool.fetch("SELECT name FROM kg_nodes")}
    assert names == {"a", "b"}, "the node between the records was applied"
