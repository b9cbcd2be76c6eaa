"""Migration 0016 moves each tenant's Merkle frontier into its ``kg_chain_heads`` row, in place.

A log written at 0015 (two tenants interleaved, appends that take both the leaf-by-leaf and the
set-based extension) is checkpointed and proved, then upgraded: the frontier is the same, the
chains and trees verify with the same roots, the held checkpoint is still extended by the log,
proofs from before are the proofs after, and new appends keep growing the same tree. Downgrade
gives the frontier table back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from kg.audit import tree
from kg.audit.checkpoint import Checkpoint, generate_key
from kg.audit.evidence import check_checkpoint, take_checkpoint
from kg.audit.merkle import CompactRange, leaf_hash, verify_consistency, verify_inclusion
from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.db import migrate
from kg.db.connect import create_pool
from kg.db.revision import head_revision
from kg.db.tenancy import tenant_transaction
from kg.events import EventStore, NodeAsserted

A, B = Scope("acme", "p"), Scope("globex", "p")


def nodes(prefix: str, n: int) -> list[NodeAsserted]:
    return [
        NodeAsserted(node_id=f"component:{prefix}{i}", node_type="Component", name=f"{prefix}{i}")
        for i in range(n)
    ]


@pytest.fixture
async def at_0015(empty_db_url: str) -> AsyncIterator[str]:
    migrate.upgrade(empty_db_url, "0015")
    yield empty_db_url


async def _pools(url: str) -> tuple[asyncpg.Pool, asyncpg.Pool]:
    return (
        await create_pool(url, app_role=True, max_size=2),
        await create_pool(url, app_role=False, max_size=2),
    )


async def _expected(system: asyncpg.Pool, tenant_id: str) -> CompactRange:
    """The tenant's tree recomputed from its event hashes (RFC 9162), without kg's reader."""
    compact = CompactRange()
    for row in await system.fetch(
        "SELECT hash FROM kg_events WHERE tenant_id = $1 ORDER BY position", tenant_id
    ):
        compact.append(leaf_hash(bytes.fromhex(row["hash"])))
    return compact


async def _proofs(app: asyncpg.Pool, tenant_id: str, size: int) -> list[list[bytes]]:
    async with tenant_transaction(app, tenant_id) as conn:
        return [await tree.inclusion_proof(conn, tenant_id, i, size) for i in range(size)]


async def test_upgrade_keeps_the_trees_checkpoints_and_proofs_of_a_populated_log(
    at_0015: str,
) -> None:
    app, system = await _pools(at_0015)
    key = generate_key("reviewer")
    try:
        store = EventStore(app)
        for k, size in enumerate([7, 1, 13, 40, 3]):  # 40 > 32: the set-based extension
            await store.append(A, f"s{k}", nodes(f"a{k}-", size))
            await store.append(B, f"s{k}", nodes(f"b{k}-", 2 + k))
        frontiers = {
            r["tenant_id"]: (r["size"], list(r["border"]))
            for r in await system.fetch("SELECT tenant_id, size, border FROM kg_merkle_frontier")
        }
        assert frontiers["acme"][0] == 64 and frontiers["globex"][0] == 20
        held: Checkpoint = await take_checkpoint(app, "acme", key)
        proofs = await _proofs(app, "acme", held.size)
    finally:
        await app.close()
        await system.close()

    migrate.upgrade(at_0015)
    assert migrate.current_revision(at_0015) == head_revision()

    app, system = await _pools(at_0015)
    try:
        assert await system.fetchval("SELECT to_regclass('kg_merkle_frontier')") is None
        moved = {
            r["tenant_id"]: (r["tree_size"], list(r["tree_border"]))
            for r in await system.fetch(
                "SELECT tenant_id, tree_size, tree_border FROM kg_chain_heads"
            )
        }
        assert moved == frontiers, "each frontier moved into its tenant's head row unchanged"
        for scope in (A, B):
            report = await verify_tenant(app, scope.tenant_id)
            expected = await _expected(system, scope.tenant_id)
            assert report.ok and report.tree_root == expected.root().hex(), str(report)
        # The checkpoint taken before is extended by the log, and proofs are the same.
        assert (await check_checkpoint(app, "acme", held)).ok
        assert await _proofs(app, "acme", held.size) == proofs

        # New appends (leaf by leaf, and set-based) grow the same tree from the moved frontier.
        store = EventStore(app)
        for k, size in enumerate([1, 15, 33, 2]):
            await store.append(A, f"later{k}", nodes(f"later{k}-", size))
        await store.append(B, "later", nodes("b-later", 5))
        for scope in (A, B):
            report = await verify_tenant(app, scope.tenant_id)
            expected = await _expected(system, scope.tenant_id)
            assert report.ok and report.tree_root == expected.root().hex(), str(report)
            async with tenant_transaction(app, scope.tenant_id) as conn:
                front = await tree.frontier(conn, scope.tenant_id)
                assert (front.size, front.border) == (expected.size, expected.border)
        result = await check_checkpoint(app, "acme", held)
        assert result.ok and "(115 events) extends it" in str(result), str(result)
        async with tenant_transaction(app, "acme") as conn:
            head = await tree.current_head(conn, "acme")
            for i in (0, 17, held.size - 1, head.size - 1):
                leaf = (await tree.leaves_from(conn, "acme", i, 1))[0]
                path = await tree.inclusion_proof(conn, "acme", i, head.size)
                verify_inclusion(i, head.size, leaf.hash, path, head.root)
            proof = await tree.consistency_proof(conn, "acme", held.size, head.size)
            verify_consistency(held.size, head.size, held.root, head.root, proof)
        after = await take_checkpoint(app, "acme", key)
        assert after.size == 115
    finally:
        await app.close()
        await system.close()

    # Down and up again: the frontier table comes back with the frontiers, and goes again.
    migrate.downgrade(at_0015, "0015")
    app, system = await _pools(at_0015)
    try:
        rows = await system.fetch("SELECT tenant_id, size FROM kg_merkle_frontier ORDER BY 1")
        assert [tuple(r) for r in rows] == [("acme", 115), ("globex", 25)]
        await EventStore(app).append(A, "down", nodes("down", 3))  # 0013's append and extension
        expected = await _expected(system, "acme")
        row = await system.fetchrow("SELECT size, border FROM kg_merkle_frontier WHERE "
                                    "tenant_id = 'acme'")  # fmt: skip
        assert row["size"] == expected.size == 118
        assert {lv: bytes(h) for lv, h in enumerate(row["border"]) if h} == expected.border
    finally:
        await app.close()
        await system.close()
    migrate.upgrade(at_0015)
    app, system = await _pools(at_0015)
    try:
        assert (await verify_tenant(app, "acme")).ok
        assert (await check_checkpoint(app, "acme", after)).ok
    finally:
        await app.close()
        await system.close()
