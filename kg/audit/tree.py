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
    border_nodes,
    consistency_ranges,
    hashes_for,
    inclusion_ranges,
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


async def tree_size(conn: asyncpg.Connection, tenant_id: str) -> int:
    value = await conn.fetchval(
        "SELECT max(idx) FROM kg_merkle_nodes WHERE tenant_id = $1 AND level = 0", tenant_id
    )
    return 0 if value is None else int(value) + 1


async def fetch_nodes(
    conn: asyncpg.Connection, tenant_id: str, nodes: Iterable[Node]
) -> dict[Node, bytes]:
    """The stored hashes of ``nodes``; a missing one is an :class:`IntegrityError`."""
    wanted = sorted(set(nodes))
    if not wanted:
        return {}
    rows = await conn.fetch(
        "SELECT n.level, n.idx, n.hash FROM unnest($2::smallint[], $3::bigint[]) AS w(l, i) "
        "JOIN kg_merkle_nodes n ON n.tenant_id = $1 AND n.level = w.l AND n.idx = w.i",
        tenant_id,
        [lv for lv, _ in wanted],
        [i for _, i in wanted],
    )
    found = {(int(r["level"]), int(r["idx"])): bytes(r["hash"]) for r in rows}
    missing = [n for n in wanted if n not in found]
    if missing:
        level, index = missing[0]
        raise IntegrityError(
            f"the stored Merkle tree of tenant {tenant_id} lacks the node at level {level}, "
            f"index {index} ({len(missing)} missing): its rows were removed"
        )
    return found


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
    """The compact range the append function extends (live database only)."""
    row = await conn.fetchrow(
        "SELECT size, border FROM kg_merkle_frontier WHERE tenant_id = $1", tenant_id
    )
    if row is None:
        return CompactRange()
    border = {lv: bytes(h) for lv, h in enumerate(row["border"]) if h is not None}
    return CompactRange(int(row["size"]), border)


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


async def leaf_of_position(conn: asyncpg.Connection, tenant_id: str, position: int) -> int | None:
    value = await conn.fetchval(
        "SELECT idx FROM kg_merkle_nodes WHERE tenant_id = $1 AND level = 0 AND position = $2",
        tenant_id,
        position,
    )
    return None if value is None else int(value)


async def positions_of_leaves(
    conn: asyncpg.Connection, tenant_id: str, indices: Iterable[int]
) -> dict[int, int]:
    rows = await conn.fetch(
        "SELECT idx, position FROM kg_merkle_nodes WHERE tenant_id = $1 AND level = 0 "
        "AND idx = ANY($2::bigint[])",
        tenant_id,
        sorted(set(indices)),
    )
    return {int(r["idx"]): int(r["position"]) for r in rows}
