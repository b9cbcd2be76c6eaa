"""Verify the tamper evidence of the log: each tenant's hash chain and the gapless positions."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import asyncpg

from kg.audit import tree
from kg.audit.legacy import canonical_of, hashed_with_signed_zeros
from kg.audit.merkle import CompactRange, Node, leaf_hash
from kg.db.tenancy import tenant_transaction
from kg.errors import IntegrityError
from kg.events.content import body_digest
from kg.events.envelope import RecordedEvent
from kg.events.erasure import ContentErased
from kg.events.hashing import GENESIS_HASH, chain_hash
from kg.events.store import SELECT_EVENT, record_from_row


@dataclass(frozen=True)
class VerifyReport:
    tenant_id: str
    events: int
    broken_position: int | None = None
    problem: str | None = None
    signed_zero_events: int = 0
    tree_root: str | None = None  # the Merkle root recomputed from the events, hex
    #: (position, position of the ContentErased receipt) of each event whose content was erased
    erased: tuple[tuple[int, int], ...] = ()

    @property
    def ok(self) -> bool:
        return self.broken_position is None and self.problem is None

    def __str__(self) -> str:
        if self.ok:
            note = (
                f"; {self.signed_zero_events} written with -0.0 by an earlier kg, verified "
                "with the sign restored"
                if self.signed_zero_events
                else ""
            )
            if self.erased:
                receipts = sorted({r for _, r in self.erased})
                note += (
                    f"; {len(self.erased)} erased by receipt(s) at position(s) "
                    f"{', '.join(map(str, receipts))} (kg erase), not tampered"
                )
            return f"ok, {self.events} events (tenant {self.tenant_id}){note}"
        where = f"at position {self.broken_position}" if self.broken_position else "at the end"
        return f"BROKEN {where} (tenant {self.tenant_id}): {self.problem}"


def recompute_hash(event: RecordedEvent) -> str:
    return chain_hash(event.prev_hash, canonical_of(event))


async def verify_tenant(pool: asyncpg.Pool, tenant_id: str, *, batch: int = 5000) -> VerifyReport:
    """Walk ``tenant_id``'s chain in position order and report the first event that breaks it.

    An edited event no longer matches its own hash; a removed event breaks its successor's
    ``prev_hash`` link; removed events at the end, or a changed ``kg_chain_heads`` row, disagree
    with the recorded chain head (:func:`head_problem` says which value differs).
    The same walk recomputes the tenant's Merkle tree from the events and compares every stored
    node with it (and, on the live log, the append function's frontier; under ``--as-of`` the
    frontier is today's, so it is left out).
    """
    count, prev, signed_zero = 0, GENESIS_HASH, 0
    missing: dict[str, int] = {}  # digest of erased content -> position of its event
    receipts: dict[str, int] = {}  # digest -> position of the ContentErased listing it
    compact = CompactRange()
    computed: dict[Node, bytes] = {}
    positions = array("q")
    async with tenant_transaction(pool, tenant_id, isolation="repeatable_read") as conn:
        head = await conn.fetchrow(
            "SELECT position, hash FROM kg_chain_heads WHERE tenant_id = $1", tenant_id
        )
        cursor = conn.cursor(
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 "
            "ORDER BY tenant_id, position",
            tenant_id,
            prefetch=batch,
        )
        last_position, hash_at_head = 0, None
        async for row in cursor:
            event = record_from_row(row)
            if event.prev_hash != prev:
                return VerifyReport(
                    tenant_id,
                    count,
                    event.position,
                    "its prev_hash does not link to the event before it: an earlier event was "
                    "removed, inserted or had its hash changed",
                )
            if recompute_hash(event) != event.hash:
                if not hashed_with_signed_zeros(event):
                    return VerifyReport(
                        tenant_id,
                        count,
                        event.position,
                        "its content does not match its hash: the event was edited after it "
                        "was written",
                    )
                signed_zero += 1
            content_problem = _content_problem(event, missing, receipts)
            if content_problem is not None:
                return VerifyReport(tenant_id, count, event.position, content_problem)
            if head is not None and event.position == head["position"]:
                hash_at_head = event.hash
            prev, last_position, count = event.hash, event.position, count + 1
            _grow(compact, computed, positions, event)
        unreceipted = sorted(p for d, p in missing.items() if d not in receipts)
        if unreceipted:
            return VerifyReport(
                tenant_id,
                count,
                unreceipted[0],
                "its erasable content was removed without a ContentErased receipt in the log "
                "(deleted outside kg erase)",
            )
        recorded = None if head is None else (int(head["position"]), str(head["hash"]))
        problem = head_problem(recorded, (last_position, prev), count, hash_at_head)
        if problem is not None:
            return VerifyReport(tenant_id, count, None, problem)
        tree_problem = await _tree_problem(conn, tenant_id, compact, computed, positions)
        if tree_problem is not None:
            return VerifyReport(tenant_id, count, tree_problem[0], tree_problem[1])
    return VerifyReport(
        tenant_id,
        count,
        signed_zero_events=signed_zero,
        tree_root=compact.root().hex(),
        erased=tuple(sorted((p, receipts[d]) for d, p in missing.items())),
    )


def _content_problem(
    event: RecordedEvent, missing: dict[str, int], receipts: dict[str, int]
) -> str | None:
    """Check the erasable content kept beside the log against the digest the chain covers;
    note erased content and the receipts that erased it."""
    if event.event_type == "ContentErased":
        for entry in event.event_as(ContentErased).erased:
            receipts[entry.digest] = event.position
    digest = event.content_digest
    if digest is None:
        return None
    if event.content is None:
        missing[digest] = event.position
        return None
    if body_digest(event.content) != digest:
        return (
            "its erasable content (kg_event_content) does not match the digest its hash covers: "
            "the content was edited after it was written"
        )
    return None


def _grow(
    compact: CompactRange, computed: dict[Node, bytes], positions: array[int], event: RecordedEvent
) -> None:
    positions.append(event.position)
    for level, index, digest in compact.append(leaf_hash(bytes.fromhex(event.hash))):
        if level >= tree.STORED_FROM:
            computed[(level, index)] = digest


async def _tree_problem(
    conn: asyncpg.Connection,
    tenant_id: str,
    compact: CompactRange,
    computed: dict[Node, bytes],
    positions: array[int],
) -> tuple[int | None, str] | None:
    """Where the stored tree disagrees with the tree of the events, or None."""
    stored = {
        (int(r["level"]), int(r["idx"])): bytes(r["hash"])
        for r in await conn.fetch(
            "SELECT level, idx, hash FROM kg_merkle_nodes WHERE tenant_id = $1", tenant_id
        )
    }
    for node in sorted(set(stored) | set(computed), key=lambda n: (n[1] << n[0], -n[0])):
        if stored.get(node) != computed.get(node):
            level, index = node
            first = index << level
            where = positions[first] if first < len(positions) else None
            what = (
                "is missing"
                if node not in stored
                else ("should not exist" if node not in computed else "differs")
            )
            return where, (
                f"the stored Merkle tree {what} at level {level}, index {index} (leaves from "
                f"{first}): the tree was altered, or events were changed and the tree rebuilt "
                "around them; a held checkpoint tells which (kg audit verify --checkpoint)"
            )
    live = await conn.fetchval("SELECT to_regclass('kg_replay_info') IS NULL")
    if live:
        try:
            front = await tree.frontier(conn, tenant_id)
        except IntegrityError as exc:
            return None, f"{exc}: the frontier was altered"
        if (front.size, front.root()) != (compact.size, compact.root()):
            return None, (
                f"the Merkle frontier records {front.size} leaves and another root than the "
                f"{compact.size} events give: the frontier was altered"
            )
    return None


def _short(digest: str) -> str:
    return digest[:16] + "..." if len(digest) > 16 else digest


def head_problem(
    recorded: tuple[int, str] | None,
    computed: tuple[int, str],
    count: int,
    hash_at_recorded: str | None,
) -> str | None:
    """What differs between the chain head recorded in ``kg_chain_heads`` and the one the walk
    computed (the last event's position and hash), or None when they agree.

    Every event has already been checked against its own hash and its predecessor, so a
    disagreement here is either events missing at the end or a head row that was changed; the
    message names the recorded and the computed values so a reviewer can tell which.
    """
    position, digest = computed
    if recorded is None:
        if count == 0:
            return None
        return (
            f"no chain head is recorded in kg_chain_heads, but the log holds {count} events "
            f"ending at position {position} (hash {_short(digest)}): the head row was deleted"
        )
    head_position, head_hash = recorded
    if (head_position, head_hash) == computed:
        return None
    said = (
        f"the chain head in kg_chain_heads records position {head_position} with hash "
        f"{_short(head_hash)}"
    )
    if head_position == position:
        return (
            f"{said}, but the event at position {position} hashes to {_short(digest)}: "
            "the head's hash was overwritten (every event checks out)"
        )
    if head_position > position:
        return (
            f"{said}, but the last event is at position {position} (hash {_short(digest)}): "
            "events at the end were removed, or the head row was overwritten"
        )
    if hash_at_recorded == head_hash:
        at = "which matches the event there"
    elif hash_at_recorded is None:
        at = "where the log holds no event of this tenant"
    else:
        at = f"but the event there hashes to {_short(hash_at_recorded)}"
    return (
        f"{said}, {at}; the log continues to position {position} (hash {_short(digest)}): "
        "the head row was moved back, or events were added without moving it"
    )


async def find_position_gaps(pool: asyncpg.Pool, tenant_id: str, *, limit: int = 10) -> list[int]:
    """First missing position of each gap in ``tenant_id``'s log, including removed tail
    events (the head row records a position beyond the last event).

    Positions are gapless per tenant after ``kg_chain_heads.gapless_after``: the history
    written before per-tenant order (migration 0013) kept its global positions, whose gaps
    are other tenants' events; the hash chain covers that part.
    """
    async with tenant_transaction(pool, tenant_id, isolation="repeatable_read") as conn:
        rows = await conn.fetch(
            """
            WITH h AS (SELECT position, gapless_after FROM kg_chain_heads WHERE tenant_id = $1),
            t AS (SELECT coalesce(max(position), 0) AS last FROM kg_events WHERE tenant_id = $1)
            SELECT g.prev + 1 AS missing FROM (
                SELECT e.position, lag(e.position, 1, h.gapless_after)
                       OVER (ORDER BY e.tenant_id, e.position) AS prev
                  FROM kg_events e, h
                 WHERE e.tenant_id = $1 AND e.position > h.gapless_after
            ) g WHERE g.position <> g.prev + 1
            UNION ALL
            SELECT t.last + 1 FROM h, t WHERE h.position > t.last
            ORDER BY 1 LIMIT $2
            """,
            tenant_id,
            limit,
        )
    return [int(r["missing"]) for r in rows]
