"""The append function maintains each tenant's Merkle tree (migration 0012), incrementally."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from kg.audit import tree
from kg.audit.merkle import CompactRange, leaf_hash, verify_consistency, verify_inclusion
from kg.audit.snapshot import materialise
from kg.audit.verify import verify_tenant
from kg.config import Scope, Settings
from kg.db.tenancy import tenant_transaction
from kg.embeddings import HashingEmbedder
from kg.events import EventStore, NodeAsserted
from kg.runtime import Runtime, open_runtime


def events(n: int, tag: str) -> list[NodeAsserted]:
    return [
        NodeAsserted(node_id=f"document:{tag}{i}.md", node_type="Document", name=f"{tag}{i}")
        for i in range(n)
    ]


async def expected_tree(system_pool: asyncpg.Pool, tenant: str) -> tuple[CompactRange, dict]:
    """The tree recomputed in Python from the tenant's events, with every perfect node."""
    rows = await system_pool.fetch(
        "SELECT position, hash FROM kg_events WHERE tenant_id = $1 ORDER BY position", tenant
    )
    compact, nodes = CompactRange(), {}
    for r in rows:
        for lv, i, h in compact.append(leaf_hash(bytes.fromhex(r["hash"]))):
            nodes[(lv, i)] = h
    return compact, nodes


async def test_appends_of_every_batch_size_build_the_rfc_tree(
    store: EventStore, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    acme, other = Scope("acme", "p"), Scope("other", "p")
    for k, size in enumerate([1, 1, 3, 1, 8, 5, 16, 1, 2, 37, 1]):
        await store.append(acme, f"s{k}", events(size, f"a{k}-"))
        await store.append(other, f"s{k}", events(1 + k % 3, f"o{k}-"))  # interleaved
    for tenant in ("acme", "other"):
        compact, nodes = await expected_tree(system_pool, tenant)
        stored = await system_pool.fetch(
            "SELECT level, idx, hash FROM kg_merkle_nodes WHERE tenant_id = $1", tenant
        )
        assert {(r["level"], r["idx"]): bytes(r["hash"]) for r in stored} == {
            n: h for n, h in nodes.items() if n[0] >= tree.STORED_FROM
        }, "levels 4 and up are stored, exactly"
        async with tenant_transaction(app_pool, tenant) as conn:
            head = await tree.current_head(conn, tenant)
            assert head.size == compact.size
            assert head.root == compact.root()
            assert (await tree.frontier(conn, tenant)).root() == compact.root()
            # proofs from the stored nodes verify, for every leaf and every older size
            for i in range(head.size):
                leaf = nodes[(0, i)]
                proof = await tree.inclusion_proof(conn, tenant, i, head.size)
                verify_inclusion(i, head.size, leaf, proof, head.root)
            for old in range(1, head.size + 1):
                old_head = await tree.head_at(conn, tenant, old)
                proof = await tree.consistency_proof(conn, tenant, old, head.size)
                verify_consistency(old, head.size, old_head.root, head.root, proof)
    assert compact.size > 0


async def test_leaves_are_the_tenants_own_sequence_and_map_to_positions(
    store: EventStore, app_pool: asyncpg.Pool
) -> None:
    positions = []
    for k in range(40):  # blocks of 16 complete, and one does not
        await store.append(Scope("other", "p"), "s", events(1 + k % 2, f"o{k}-"))
        result = await store.append(Scope("acme", "p"), "s", events(1, f"a{k}-"))
        positions.append(result.first_position)
    async with tenant_transaction(app_pool, "acme") as conn:
        assert await tree.tree_size(conn, "acme") == 40
        for index, position in enumerate(positions):
            leaf = await tree.leaf_of_position(conn, "acme", position)
            assert leaf is not None and (leaf.index, leaf.position) == (index, position)
        # Positions are the tenant's own: gapless although another tenant appended between.
        assert positions == list(range(1, 41))
        assert await tree.leaf_of_position(conn, "acme", 41) is None


async def test_the_application_role_reads_only_its_tenant_and_writes_nothing(
    store: EventStore, app_pool: asyncpg.Pool
) -> None:
    await store.append(Scope("acme", "p"), "s", events(20, "a"))
    await store.append(Scope("other", "p"), "s", events(20, "o"))
    async with tenant_transaction(app_pool, "acme") as conn:
        for table in ("kg_merkle_nodes", "kg_chain_heads"):
            tenants = await conn.fetch(f"SELECT DISTINCT tenant_id FROM {table}")
            assert [r["tenant_id"] for r in tenants] == ["acme"]
        assert await tree.tree_size(conn, "other") == 0
    for sql in (
        "INSERT INTO kg_merkle_nodes VALUES ('acme', 0, 99, '\\x00', 99)",
        "UPDATE kg_chain_heads SET tree_size = 0",
        "DELETE FROM kg_merkle_nodes",
        "SELECT kg_merkle_grow('acme', 0, '{}', ARRAY[1::bigint], ARRAY[repeat('0', 64)])",
        "SELECT kg_merkle_rebuild('acme')",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            async with tenant_transaction(app_pool, "acme") as conn:
                await conn.execute(sql)


async def test_the_migration_builds_trees_of_existing_logs(
    store: EventStore, system_pool: asyncpg.Pool
) -> None:
    """What the migration's backfill does for a log written before it: rebuild from events."""
    await store.append(Scope("acme", "p"), "s", events(41, "a"))
    nodes = "SELECT * FROM kg_merkle_nodes ORDER BY level, idx"
    frontier = "SELECT tree_size, tree_border FROM kg_chain_heads WHERE tenant_id = 'acme'"
    before = await system_pool.fetch(nodes)
    front = await system_pool.fetchrow(frontier)
    assert front["tree_size"] == 41 and len(before) == 3  # (4, 0), (4, 1), (5, 0)
    # in chunks of 4 (leaf by leaf) and in one chunk of 41 (level by level, set-based)
    for chunk in (4, 50_000):
        await system_pool.execute("SELECT kg_merkle_rebuild('acme', $1)", chunk)
        after = await system_pool.fetch(nodes)
        assert [tuple(r) for r in after] == [tuple(r) for r in before]
        assert tuple(await system_pool.fetchrow(frontier)) == tuple(front)


async def test_a_replay_sees_and_verifies_the_tree_as_it_was(
    runtime: Runtime, scope: Scope, tmp_path: Path
) -> None:
    positions = []
    for k in range(3):
        result = await runtime.store.append(scope, f"s{k}", events(11, f"a{k}-"))
        positions.append(result.last_position)
    await runtime.store.append(Scope("other", "p"), "s", events(40, "o"))
    await runtime.catch_up()
    past = positions[1]  # 22 events of acme: one block of 16 complete
    await materialise(
        runtime.system_pool, runtime.url, str(past), HashingEmbedder(), "past", tenant_id="acme"
    )
    settings = Settings(runtime.url, scope, tmp_path)
    async with open_runtime(
        settings, url=runtime.url, embedder=HashingEmbedder(), as_of_schema="past"
    ) as rt:
        report = await verify_tenant(rt.app_pool, scope.tenant_id)
        assert report.ok and report.events == 22, str(report)
        async with tenant_transaction(rt.app_pool, "acme") as conn:
            head = await tree.current_head(conn, "acme")
            stored = await conn.fetchval("SELECT count(*) FROM kg_merkle_nodes")
    async with tenant_transaction(runtime.app_pool, "acme") as conn:
        assert head == await tree.head_at(conn, "acme", 22)
        assert (
            await conn.fetchval("SELECT count(*) FROM kg_merkle_nodes") == 3
        )  # (4,0), (4,1), (5,0)
        assert head != await tree.current_head(conn, "acme")
    assert report.tree_root == head.root.hex()
    assert stored == 1, "the replay sees the subtrees complete at its position only"


async def test_verify_finds_a_stored_tree_that_disagrees_with_the_events(
    store: EventStore, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool
) -> None:
    result = await store.append(Scope("acme", "p"), "s", events(40, "a"))
    assert (await verify_tenant(app_pool, "acme")).ok
    await system_pool.execute(
        "UPDATE kg_merkle_nodes SET hash = sha256('x') WHERE level = 4 AND idx = 1"
    )
    report = await verify_tenant(app_pool, "acme")
    assert not report.ok and report.broken_position == result.first_position + 16
    assert "level 4, index 1" in str(report)
    await system_pool.execute("SELECT kg_merkle_rebuild('acme')")
    assert (await verify_tenant(app_pool, "acme")).ok
    await system_pool.execute("UPDATE kg_chain_heads SET tree_border[1] = sha256('x')")
    report = await verify_tenant(app_pool, "acme")
    assert not report.ok and "frontier" in str(report)
    await system_pool.execute("DELETE FROM kg_merkle_nodes WHERE level = 5")
    assert "is missing at level 5" in str(await verify_tenant(app_pool, "acme"))


async def test_the_extension_gives_the_rfc_tree_for_every_batch_size_and_alignment(
    system_pool: asyncpg.Pool,
) -> None:
    """``kg_merkle_grow`` hashes small batches in aligned groups of 8, 4, 2 and single leaves,
    and larger ones level by level: every batch size from 1 to 40, starting at every offset
    of a block, against the tree recomputed in Python."""
    import hashlib
    import random

    sizes = list(range(1, 41)) + list(range(40, 0, -1))
    random.Random(16).shuffle(sizes)
    compact, expected_nodes = CompactRange(), {}
    border: list[bytes | None] = []
    position = 0
    for size in sizes:
        hashes = [hashlib.sha256(f"{position + k}".encode()).hexdigest() for k in range(size)]
        positions = list(range(position + 1, position + size + 1))
        border = await system_pool.fetchval(
            "SELECT kg_merkle_grow('t', $1, $2, $3, $4)", compact.size, border, positions, hashes
        )
        for h, p in zip(hashes, positions, strict=True):
            for lv, i, digest in compact.append(leaf_hash(bytes.fromhex(h))):
                if lv >= tree.STORED_FROM:
                    expected_nodes[(lv, i)] = (digest, p)
        assert {lv: bytes(h) for lv, h in enumerate(border) if h is not None} == compact.border
        position += size
    stored = await system_pool.fetch(
        "SELECT level, idx, hash, position FROM kg_merkle_nodes WHERE tenant_id = 't'"
    )
    assert {(r["level"], r["idx"]): (bytes(r["hash"]), r["position"]) for r in stored} == (
        expected_nodes
    )
    assert compact.size == 1640 and len(expected_nodes) > 100


async def test_an_append_refuses_a_frontier_that_lost_a_node(
    store: EventStore, system_pool: asyncpg.Pool
) -> None:
    """The frontier lives in the tenant's head row (migration 0016); an append that would
    merge with a border node that is not there fails, naming the fix, and writes nothing."""
    await store.append(Scope("acme", "p"), "s", events(3, "a"))  # size 3: levels 0 and 1
    await system_pool.execute("UPDATE kg_chain_heads SET tree_border[1] = NULL")
    with pytest.raises(asyncpg.DataCorruptedError, match="frontier of tenant acme is corrupt"):
        await store.append(Scope("acme", "p"), "s", events(1, "b"))
    assert await system_pool.fetchval("SELECT count(*) FROM kg_events") == 3
    await system_pool.execute("SELECT kg_merkle_rebuild('acme')")
    await store.append(Scope("acme", "p"), "s", events(1, "b"))
    assert await system_pool.fetchval("SELECT tree_size FROM kg_chain_heads") == 4
