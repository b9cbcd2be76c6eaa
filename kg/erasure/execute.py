"""``kg erase``: append the receipt event, remove the content, re-derive, vacuum.

Who can erase: whoever can run ``kg erase`` against the database (the CLI; it is not an MCP
tool). The content is removed by ``kg_erase_content`` (SECURITY DEFINER, migration 0014) in the
transaction that appends ``ContentErased``: the application role cannot delete content any
other way, and the function deletes exactly the digests that event lists, so nothing vanishes
without a receipt in the chain. Re-deriving the projections, the kept replays and the cache and
vacuuming are maintenance on derived tables and run on the system pool.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Literal

import asyncpg

from kg.erasure.plan import LIVE, ErasurePlan, ProjectedRow, Selection, plan_erasure
from kg.errors import ErasureError
from kg.events.base import build_event
from kg.events.envelope import AppendResult, EventMetadata, RecordedEvent
from kg.events.erasure import ContentErased, ErasedPosition
from kg.events.store import SELECT_EVENT, StreamEvent, record_from_row
from kg.projections.base import ProjectionContext
from kg.projections.nodes import NodesProjection
from kg.read.as_of import check_schema_name
from kg.runtime import Runtime

Vacuum = Literal["full", "plain", "none"]


@dataclass
class ErasureResult:
    plan: ErasurePlan
    erasure_id: str
    position: int
    event: RecordedEvent
    content_rows_deleted: int
    rows_rederived: int
    cache_entries_dropped: int
    vacuumed: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def _refuse_empty(plan: ErasurePlan) -> None:
    if plan.events:
        return
    what = plan.selection.describe()
    if plan.not_erasable:
        raise ErasureError(
            f"{what}: matches {len(plan.not_erasable)} event(s) (positions "
            f"{', '.join(map(str, plan.not_erasable[:10]))}) whose content is inside the hashed "
            "payload (written before migration 0014, or in a name, id or properties), which "
            "erasure cannot remove without breaking the chain; see README 'Erasure'"
        )
    if plan.already_erased:
        raise ErasureError(f"{what}: already erased (positions {plan.already_erased[:10]})")
    raise ErasureError(
        f"{what}: nothing in {plan.scope.tenant_id}/{plan.scope.project_id} matches; check the "
        "node id (kg inspect), the file path relative to the project root, or the pattern"
    )


def _refuse_tampered(plan: ErasurePlan) -> None:
    """Refuse to erase content that is not what the log recorded. Erasing it would delete the
    evidence (``kg audit verify`` compares the content with the digest the chain covers, and
    erased content has nothing left to compare) and issue a receipt certifying as erased what
    was never logged: the tampering would be laundered. Recording the mismatch and erasing
    anyway would keep a note of it, but still destroy what a reviewer needs to see what was
    changed; the operator restores the content from a backup (or investigates) first."""
    if not plan.tampered:
        return
    shown = ", ".join(map(str, plan.tampered[:10]))
    raise ErasureError(
        f"{plan.selection.describe()}: refused: the content of {len(plan.tampered)} event(s) "
        f"(position(s) {shown}) does not match the digest its hash covers: it was edited after "
        "it was written. Erasing it would destroy the evidence of that edit. Run `kg audit "
        "verify`, restore the content from a backup, then erase; nothing was changed"
    )


async def erase(
    rt: Runtime,
    selection: Selection,
    *,
    reason: str,
    authority: str,
    actor: str = "kg erase",
    vacuum: Vacuum = "full",
) -> ErasureResult:
    """Erase what ``selection`` selects in ``rt.scope``; returns what was done (the receipt is
    :func:`kg.erasure.receipt.build_receipt` of it).

    Raises:
        ErasureError: nothing erasable matches, or the content to erase does not match the
            digest the log covers (the message says why).
        ValidationError: reason or authority missing.
    """
    clock = time.perf_counter()
    seconds: dict[str, float] = {}
    await rt.catch_up()  # re-derive against projections that hold the whole log
    plan = await plan_erasure(rt.system_pool, rt.scope, selection)
    seconds["plan"] = time.perf_counter() - clock
    _refuse_empty(plan)
    _refuse_tampered(plan)
    erasure_id = f"erasure-{uuid.uuid4().hex[:16]}"
    event = build_event(
        ContentErased,
        erasure_id=erasure_id,
        selector=selection.selector,
        target=selection.target,
        reason=reason,
        authority=authority,
        erased=tuple(
            ErasedPosition(
                position=e.position,
                event_hash=e.hash,
                digest=str(e.content_digest),
                fields=tuple((e.payload.get("$content") or {}).get("fields", ())),
            )
            for e in plan.events
        ),
        not_erasable=tuple(plan.not_erasable),
    )
    deleted = 0

    async def remove_content(conn: asyncpg.Connection, results: list[AppendResult]) -> None:
        nonlocal deleted
        deleted = int(
            await conn.fetchval(
                "SELECT kg_erase_content($1, $2)", rt.scope.tenant_id, results[0].first_position
            )
        )

    step = time.perf_counter()
    (appended,) = await rt.store.append_many(
        rt.scope,
        [_stream_event(erasure_id, event)],
        metadata=EventMetadata(actor=actor),
        then=remove_content,
    )
    seconds["append_and_delete"] = time.perf_counter() - step
    step = time.perf_counter()
    rederived = await _rederive(rt, plan.rows)
    seconds["rederive"] = time.perf_counter() - step
    step = time.perf_counter()
    dropped = await _drop_cache(rt.system_pool, plan.cache_hashes)
    seconds["cache"] = time.perf_counter() - step
    step = time.perf_counter()
    vacuumed = await _vacuum(rt.system_pool, plan, vacuum)
    seconds["vacuum"] = time.perf_counter() - step
    await rt.catch_up()  # the ContentErased event itself
    recorded = await _event_at(rt.system_pool, rt.scope.tenant_id, appended.first_position)
    seconds["total"] = time.perf_counter() - clock
    return ErasureResult(
        plan,
        erasure_id,
        appended.first_position,
        recorded,
        deleted,
        rederived,
        dropped,
        vacuumed,
        seconds,
    )


def _stream_event(erasure_id: str, event: ContentErased) -> StreamEvent:
    return StreamEvent(f"erasure:{erasure_id}", event)


async def _event_at(pool: asyncpg.Pool, tenant_id: str, position: int) -> RecordedEvent:
    row = await pool.fetchrow(
        f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND position = $2",
        tenant_id,
        position,
    )
    return record_from_row(row)


async def _rederive(rt: Runtime, rows: list[ProjectedRow]) -> int:
    """Apply again, in each schema (live and kept replays), the event each row was derived
    from: it now reads as erased, so the row, its passages and its vector follow."""
    by_schema: dict[str, list[ProjectedRow]] = {}
    for row in rows:
        by_schema.setdefault(row.schema, []).append(row)
    projection = NodesProjection()
    ctx = ProjectionContext(rt.embedder)
    for schema, mine in by_schema.items():
        async with rt.system_pool.acquire() as conn, conn.transaction():
            if schema != LIVE:
                await conn.execute(
                    f"SELECT set_config('search_path', '\"{check_schema_name(schema)}\", public', "
                    "true)"
                )
            found = await conn.fetch(
                f"SELECT {SELECT_EVENT} FROM public.kg_events kg_events WHERE tenant_id = $1 "
                "AND position = ANY($2::bigint[]) ORDER BY tenant_id, position",
                rt.scope.tenant_id,
                sorted({r.last_position for r in mine}),
            )
            await projection.apply(conn, [record_from_row(r) for r in found], ctx)
    return len(rows)


async def _drop_cache(pool: asyncpg.Pool, hashes: list[str]) -> int:
    """Drop the cached vectors of the erased texts (a vector leaks what it encodes), unless a
    live row still uses the same text."""
    if not hashes:
        return 0
    # Two statements: on a Citus cluster the cache is a reference table, whose DELETE cannot
    # read the (distributed) node tables. A row that starts using one of these texts between
    # the two finds its vector gone and computes it again: the cache is derived.
    async with pool.acquire() as conn, conn.transaction():
        live = await conn.fetchval(
            "SELECT array_agg(DISTINCT h) FROM ("
            "SELECT n.content_hash AS h FROM kg_nodes n WHERE n.content_hash = ANY($1) "
            "UNION ALL SELECT p.content_hash FROM kg_passages p WHERE p.content_hash = ANY($1)"
            ") used",
            hashes,
        )
        status = await conn.execute(
            "DELETE FROM embedding_cache WHERE content_hash = ANY($1) "
            "AND NOT content_hash = ANY($2)",
            hashes,
            list(live or []),
        )
    return int(status.split()[-1])


async def _vacuum(pool: asyncpg.Pool, plan: ErasurePlan, mode: Vacuum) -> list[str]:
    """Vacuum what the erasure touched, so dead row versions holding the content go.

    ``full`` (the default) rewrites each table and its indexes: plain VACUUM frees the dead
    tuples' space without overwriting it, and a GIN index (``tsv``) keeps a removed lexeme
    in its entry tree until rebuilt, so only a rewrite takes the bytes off the table's files.
    It takes an exclusive lock on each table for the rewrite (see bench/RESULTS.md)."""
    if mode == "none":
        return []
    tables = ["public.kg_event_content", "public.embedding_cache"]
    for schema in [LIVE, *plan.replays]:
        if any(r.schema == schema for r in plan.rows):
            q = "public" if schema == LIVE else f'"{check_schema_name(schema)}"'
            tables += [f"{q}.kg_nodes", f"{q}.kg_passages"]
    verb = "VACUUM (FULL, ANALYZE)" if mode == "full" else "VACUUM (ANALYZE)"
    async with pool.acquire() as conn:
        for table in tables:
            await conn.execute(f"{verb} {table}")
    return tables


__all__ = ["ErasureResult", "Selection", "Vacuum", "erase"]
