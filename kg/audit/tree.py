"""Reading a tenant's stored Merkle tree (migration 0012): sizes, roots and proofs.

Every function takes a connection already scoped to the tenant (row-level security on the
application role) and reads O(log n) rows in one round trip. Under ``--as-of`` the replay
schema's ``kg_merkle_nodes`` view holds the nodes completed by its position; the nodes of a
tree of any past size are the same rows either way, since a completed subtree never changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import asyncpg

from kg.audit.merkle import (
    EMPTY_ROOT,
    CompactRange,
    Node,
    ProofError,
    border_nodes,
    consistency_ranges,
    hashes_for,
    inclusion_ranges,
    leaf_hash,
    nodes_for,
)
from kg.errors import IntegrityError, SchemaNotReadyError


@dataclass(frozen=True)
class TreeHead:
    size: int
    root: bytes


async def log_id(conn: asyncpg.Connection) -> str:
    try:
        value = await conn.fetchval("SELECT log_id::text FROM kg_merkle_log WHERE id = 1")
    except asyncpg.UndefinedTableError:
        value = None
    if value is None:
        raise SchemaNotReadyError(
            "this database has no Merkle tree yet (migration 0012): run `kg db upgrade`"
        )
    return str(value)


STORED_FROM = 4  # levels below are not stored: recomputed from a block of 16 events
BLOCK = 1 << STORED_FROM


@dataclass(frozen=True)
class Leaf:
    index: int
    position: int
    chain_hash: str

    @property
    def hash(self) -> bytes:
        return leaf_hash(bytes.fromhex(self.chain_hash))


async def _block_start(conn: asyncpg.Connection, tenant_id: str, block: int) -> int:
    """The position after which block ``block``'s events start: that of the event completing
    the previous block. (A query of its own: as a subquery, row-level security kept the
    position out of the index condition, and a lookup scanned the tenant's log.)"""
    if block == 0:
        return 0
    value = await conn.fetchval(
        "SELECT position FROM kg_merkle_nodes WHERE tenant_id = $1 AND level = $2 AND idx = $3",
        tenant_id,
        STORED_FROM,
        block - 1,
    )
    if value is None:
        raise IntegrityError(
            f"the stored Merkle tree of tenant {tenant_id} lacks block {block - 1}: its rows "
            "were removed"
        )
    return int(value)


async def block_leaves(conn: asyncpg.Connection, tenant_id: str, block: int) -> list[Leaf]:
    """The (up to 16) leaves of block ``block``, from the events: the block starts after the
    event that completed the previous block's level-4 node."""
    rows = await conn.fetch(
        "SELECT position, hash FROM kg_events WHERE tenant_id = $1 AND position > $2 "
        "ORDER BY tenant_id, position LIMIT $3",
        tenant_id,
        await _block_start(conn, tenant_id, block),
        BLOCK,
    )
    return [Leaf(block * BLOCK + k, int(r["position"]), r["hash"]) for k, r in enumerate(rows)]


async def _stored_blocks(conn: asyncpg.Connection, tenant_id: str) -> int:
    value = await conn.fetchval(
        "SELECT max(idx) FROM kg_merkle_nodes WHERE tenant_id = $1 AND level = $2",
        tenant_id,
        STORED_FROM,
    )
    return 0 if value is None else int(value) + 1


async def tree_size(conn: asyncpg.Connection, tenant_id: str) -> int:
    """The tenant's number of leaves: its complete blocks plus the events after them."""
    blocks = await _stored_blocks(conn, tenant_id)
    tail = len(await block_leaves(conn, tenant_id, blocks))
    if tail == BLOCK:
        raise IntegrityError(
            f"the stored Merkle tree of tenant {tenant_id} ends at {blocks * BLOCK} leaves, "
            "but more events follow: the tree lags the log"
        )
    return blocks * BLOCK + tail


async def fetch_nodes(
    conn: asyncpg.Connection, tenant_id: str, nodes: Iterable[Node]
) -> dict[Node, bytes]:
    """The hashes of ``nodes``: stored ones in one query, lower ones from their blocks' events.
    A node that should exist and does not is an :class:`IntegrityError`."""
    wanted = sorted(set(nodes))
    high = [n for n in wanted if n[0] >= STORED_FROM]
    found: dict[Node, bytes] = {}
    if high:
        rows = await conn.fetch(
            "SELECT n.level, n.idx, n.hash FROM unnest($2::smallint[], $3::bigint[]) AS w(l, i) "
            "JOIN kg_merkle_nodes n ON n.tenant_id = $1 AND n.level = w.l AND n.idx = w.i",
            tenant_id,
            [lv for lv, _ in high],
            [i for _, i in high],
        )
        found = {(int(r["level"]), int(r["idx"])): bytes(r["hash"]) for r in rows}
    for block in sorted({(i << lv) >> STORED_FROM for lv, i in wanted if lv < STORED_FROM}):
        compact = CompactRange(block * BLOCK, _aligned_border(block))
        for leaf in await block_leaves(conn, tenant_id, block):
            for lv, i, h in compact.append(leaf.hash):
                if lv < STORED_FROM:
                    found[(lv, i)] = h
    missing = [n for n in wanted if n not in found]
    if missing:
        level, index = missing[0]
        raise IntegrityError(
            f"the Merkle tree of tenant {tenant_id} lacks the node at level {level}, index "
            f"{index} ({len(missing)} missing): stored rows or events were removed"
        )
    return found


def _aligned_border(block: int) -> dict[int, bytes]:
    """Placeholders for the border left of a block: never combined with, since a block's nodes
    below level 4 only merge within the block."""
    size = block * BLOCK
    return {lv: b"" for lv in range(size.bit_length()) if size >> lv & 1}


async def head_at(conn: asyncpg.Connection, tenant_id: str, size: int) -> TreeHead:
    """The root of the tenant's tree of ``size`` leaves, from the stored nodes."""
    if size == 0:
        return TreeHead(0, EMPTY_ROOT)
    nodes = border_nodes(size)
    found = await fetch_nodes(conn, tenant_id, nodes)
    levels = {lv: found[(lv, i)] for lv, i in nodes}
    return TreeHead(size, CompactRange(size, levels).root())


async def current_head(conn: asyncpg.Connection, tenant_id: str) -> TreeHead:
    return await head_at(conn, tenant_id, await tree_size(conn, tenant_id))


async def frontier(conn: asyncpg.Connection, tenant_id: str) -> CompactRange:
    """The compact range the append function extends, kept in the tenant's head row (migration
    0016; live database only: a kept replay's ``kg_chain_heads`` view has no frontier)."""
    row = await conn.fetchrow(
        "SELECT tree_size, tree_border FROM kg_chain_heads WHERE tenant_id = $1", tenant_id
    )
    if row is None:
        return CompactRange()
    border = {lv: bytes(h) for lv, h in enumerate(row["tree_border"]) if h is not None}
    try:
        return CompactRange(int(row["tree_size"]), border)
    except ProofError as exc:
        raise IntegrityError(
            f"the Merkle frontier of tenant {tenant_id} is malformed: {exc}"
        ) from None


async def inclusion_proof(
    conn: asyncpg.Connection, tenant_id: str, index: int, size: int
) -> list[bytes]:
    ranges = inclusion_ranges(index, size)
    return hashes_for(ranges, await fetch_nodes(conn, tenant_id, nodes_for(ranges)))


async def consistency_proof(
    conn: asyncpg.Connection, tenant_id: str, old_size: int, new_size: int
) -> list[bytes]:
    ranges = consistency_ranges(old_size, new_size)
    return hashes_for(ranges, await fetch_nodes(conn, tenant_id, nodes_for(ranges)))


async def leaf_of_position(conn: asyncpg.Connection, tenant_id: str, position: int) -> Leaf | None:
    """The leaf of the tenant's event at ``position``: its block is the first whose level-4
    node was completed at or after it (or the unfinished last block)."""
    block = await conn.fetchval(
        "SELECT idx FROM kg_merkle_nodes WHERE tenant_id = $1 AND level = $2 AND position >= $3 "
        "ORDER BY tenant_id, position LIMIT 1",
        tenant_id,
        STORED_FROM,
        position,
    )
    if block is None:
        block = await _stored_blocks(conn, tenant_id)
    for leaf in await block_leaves(conn, tenant_id, int(block)):
        if leaf.position == position:
            return leaf
    return None


async def leaves_from(
    conn: asyncpg.Connection, tenant_id: str, start: int, count: int
) -> list[Leaf]:
    """Leaves ``start .. start + count - 1`` (fewer at the end of the log), from the events."""
    block = start // BLOCK
    rows = await conn.fetch(
        "SELECT position, hash FROM kg_events WHERE tenant_id = $1 AND position > $2 "
        "ORDER BY tenant_id, position OFFSET $3 LIMIT $4",
        tenant_id,
        await _block_start(conn, tenant_id, block),
        start - block * BLOCK,
        count,
    )
    return [Leaf(start + k, int(r["position"]), r["hash"]) for k, r in enumerate(rows)]


async def compact_range(conn: asyncpg.Connection, tenant_id: str, size: int) -> CompactRange:
    nodes = border_nodes(size)
    found = await fetch_nodes(conn, tenant_id, nodes)
    return CompactRange(size, {lv: found[(lv, i)] for lv, i in nodes})
