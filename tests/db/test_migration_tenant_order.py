"""Migration 0013 upgrades a populated database in place to per-tenant order.

A log written under the global counter (two tenants interleaved, one tenant that started
later, projections part way) is upgraded, then verified: every event keeps its position and
hash, the chains and Merkle trees verify with the same roots, the checkpoints become per-tenant
ones, and new appends continue each tenant's own positions without gaps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from kg.audit.merkle import CompactRange, leaf_hash
from kg.audit.verify import find_position_gaps, verify_tenant
from kg.config import Scope, Settings
from kg.context.reproduce import reproduce_context_graph
from kg.context.service import build_context_graph, parse_request
from kg.db import migrate
from kg.db.connect import create_pool
from kg.db.revision import head_revision
from kg.embeddings import HashingEmbedder
from kg.events import EdgeAsserted, EventStore, NodeAsserted, NodeRetired
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.runtime import Runtime

A, B, C = Scope("acme", "p"), Scope("globex", "p"), Scope("initech", "p")


def nodes(prefix: str, n: int) -> list[NodeAsserted]:
    return [
        NodeAsserted(node_id=f"component:{prefix}{i}", node_type="Component", name=f"{prefix}{i}")
        for i in range(n)
    ]


@pytest.fixture
async def at_0012(empty_db_url: str) -> AsyncIterator[str]:
    """A database at revision 0012 (global order) holding an interleaved two-tenant log."""
    migrate.upgrade(empty_db_url, "0012")
    yield empty_db_url


async def _pools(url: str) -> tuple[asyncpg.Pool, asyncpg.Pool]:
    return (
        await create_pool(url, app_role=True, max_size=2),
        await create_pool(url, app_role=False, max_size=2),
    )


async def _write_global_history(url: str, checkpoint: int | None = 5) -> None:
    """Positions 1-3 acme, 4-5 globex, 6-9 acme, 10-12 initech (global counter); the
    projections' checkpoints at ``checkpoint`` (as if they had applied the log that far)."""
    app, system = await _pools(url)
    try:
        store = EventStore(app)
        await store.append(A, "s", nodes("a", 3))
        await store.append(B, "s", nodes("b", 2))
        await store.append(A, "t", nodes("a-later", 4))
        await store.append(C, "s", nodes("c", 3))
        assert await system.fetchval("SELECT position FROM kg_log_head") == 12
        if checkpoint is not None:
            await system.execute(
                "INSERT INTO projection_checkpoints (name, position) "
                "SELECT unnest($1::text[]), $2::bigint",
                [p.name for p in default_projections()],
                checkpoint,
            )
    finally:
        await app.close()
        await system.close()


async def _tree_root(system: asyncpg.Pool, tenant_id: str) -> str:
    """The Merkle root of a tenant's event hashes (RFC 9162), computed without kg's reader:
    the code under test reads the schema of the head revision, not 0012's."""
    compact = CompactRange()
    for row in await system.fetch(
        "SELECT hash FROM kg_events WHERE tenant_id = $1 ORDER BY position", tenant_id
    ):
        compact.append(leaf_hash(bytes.fromhex(row["hash"])))
    return compact.root().hex()


async def _snapshot(system: asyncpg.Pool) -> list[tuple[str, int, str, str]]:
    rows = await system.fetch(
        "SELECT tenant_id, position, event_id::text, hash FROM kg_events "
        "ORDER BY tenant_id, position"
    )
    return [tuple(r) for r in rows]  # type: ignore[misc]


async def test_upgrade_of_a_populated_log_keeps_history_and_continues_per_tenant(
    at_0012: str,
) -> None:
    await _write_global_history(at_0012)
    app, system = await _pools(at_0012)
    try:
        before = await _snapshot(system)
        roots = {s.tenant_id: await _tree_root(system, s.tenant_id) for s in (A, B, C)}
    finally:
        await app.close()
        await system.close()

    migrate.upgrade(at_0012)
    assert migrate.current_revision(at_0012) == head_revision()

    app, system = await _pools(at_0012)
    try:
        # History keeps its positions and hashes; chains and trees verify with the same roots.
        assert await _snapshot(system) == before
        for scope in (A, B, C):
            report = await verify_tenant(app, scope.tenant_id)
            assert report.ok and report.tree_root == roots[scope.tenant_id], str(report)
            assert await find_position_gaps(app, scope.tenant_id) == []
        heads = await system.fetch(
            "SELECT tenant_id, position, gapless_after FROM kg_chain_heads ORDER BY 1"
        )
        # acme's own positions were 1-3 and 6-9: gapless from 6 on; initech's 10-12 are a run.
        assert [tuple(r) for r in heads] == [
            ("acme", 9, 5),
            ("globex", 5, 3),
            ("initech", 12, 9),
        ]
        assert await system.fetchval("SELECT to_regclass('kg_log_head')") is None
        # The global checkpoint 5 became each tenant's last event at or below 5.
        checkpoints = await system.fetch(
            "SELECT DISTINCT tenant_id, position FROM projection_checkpoints ORDER BY 1"
        )
        assert [tuple(r) for r in checkpoints] == [("acme", 3), ("globex", 5), ("initech", 0)]

        # New appends continue each tenant's own positions, whatever the other tenants did.
        store = EventStore(app)
        b_next = await store.append(B, "s", nodes("b-new", 2))
        a_next = await store.append(A, "s", nodes("a-new", 1))
        d_first = await store.append(Scope("umbrella", "p"), "s", nodes("d", 2))
        assert (b_next.first_position, b_next.last_position) == (6, 7)
        assert (a_next.first_position, a_next.last_position) == (10, 10)
        assert (d_first.first_position, d_first.last_position) == (1, 2)
        for tenant in ("acme", "globex", "initech", "umbrella"):
            report = await verify_tenant(app, tenant)
            assert report.ok, str(report)
            assert await find_position_gaps(app, tenant) == []

        # The projections catch up from the converted checkpoints, tenant by tenant.
        ctx = ProjectionContext(HashingEmbedder())
        runner = ProjectionRunner(system, default_projections(), ctx)
        await runner.catch_up()
        counts = await system.fetch(
            "SELECT tenant_id, count(*) AS n FROM kg_nodes GROUP BY 1 ORDER BY 1"
        )
        # acme's and globex's first events were applied before the upgrade in this test only
        # by the checkpoint (no rows were written): the rows are what was applied since.
        assert [tuple(r) for r in counts] == [
            ("acme", 5),
            ("globex", 2),
            ("initech", 3),
            ("umbrella", 2),
        ]
        assert {s.lag for s in await runner.status("acme")} == {0}
    finally:
        await app.close()
        await system.close()


async def test_downgrade_goes_back_to_the_global_counter_unless_tenants_overlap(
    at_0012: str,
) -> None:
    await _write_global_history(at_0012)
    migrate.upgrade(at_0012)
    migrate.downgrade(at_0012, "0012")
    app, system = await _pools(at_0012)
    try:
        assert await system.fetchval("SELECT position FROM kg_log_head") == 12
        # The global order works again: the next append is at 13.
        result = await EventStore(app).append(B, "s", nodes("b-again", 1))
        assert result.first_position == 13
    finally:
        await app.close()
        await system.close()

    migrate.upgrade(at_0012)
    app, _system = await _pools(at_0012)
    try:
        assert (await verify_tenant(app, "globex")).ok
        await EventStore(app).append(C, "s", nodes("c-new", 1))  # initech: 13, like globex's
    finally:
        await app.close()
        await _system.close()
    with pytest.raises(Exception, match="tenants hold events at the same positions"):
        migrate.downgrade(at_0012, "0012")
    assert migrate.current_revision(at_0012) == "0013"


async def test_a_context_graph_over_history_kept_from_before_the_upgrade_reproduces(
    at_0012: str, tmp_path: Path
) -> None:
    """acme's positions from the global era (1-3, 6-9) have gaps; a context graph built on them
    records acme's as-of position, and a replay of acme's log to it derives the same graph."""
    await _write_global_history(at_0012, checkpoint=None)
    migrate.upgrade(at_0012)
    app, system = await _pools(at_0012)
    try:
        settings = Settings(database_url=at_0012, scope=A, project_root=tmp_path)
        rt = Runtime(settings, at_0012, app, system, HashingEmbedder())
        link = EdgeAsserted(edge_type="USES", from_node="component:a0", to_node="component:a1")
        await rt.store.append(A, "links", [link])  # acme's position 10
        built = await build_context_graph(rt, parse_request(anchors=["component:a0"]))
        assert built.as_of_position == 10
        assert {"component:a0", "component:a1"} <= {n.node_id for n in built.nodes}
        # Later changes of acme (and of another tenant) do not change the reproduction.
        await rt.store.append(A, "later", [NodeRetired(node_id="component:a1")])
        await rt.store.append(B, "later", nodes("b-later", 3))
        reproduction = await reproduce_context_graph(rt, built.context_graph_id)
        assert reproduction.as_of_position == 10
        assert reproduction.reproduced_hash == reproduction.recorded_hash == built.content_hash
    finally:
        await app.close()
        await system.close()
