"""Appending to many streams in one transaction (bulk ingestion: one stream per source file).

:meth:`EventStore.append` costs one transaction (and one WAL flush at commit) per stream. An
ingest of thousands of files, one stream each, would spend most of its time committing; here
the same events go in one transaction with one lock of the log head, one version check for all
streams and one insert. Positions, stream versions and the hash chain are exactly what the
same appends made one by one would have produced.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg

from kg.config import Scope
from kg.db.tenancy import set_tenant
from kg.errors import ConcurrencyConflictError, SchemaNotReadyError, ValidationError
from kg.events.base import DomainEvent
from kg.events.envelope import AppendResult, EventMetadata, PendingEvent
from kg.events.hashing import GENESIS_HASH, canonical_event, canonical_json, chain_hash
from kg.events.store import (
    EVENT_COLUMNS,
    MAX_BATCH,
    NOTIFY_CHANNEL,
    EventStore,
    _check_append_args,
    _payload_json,
)


@dataclass(frozen=True)
class StreamEvent:
    """One event for one stream, in a multi-stream append."""

    stream_id: str
    event: DomainEvent | PendingEvent


_LOCK_HEAD = """
SELECT h.position, (SELECT c.hash FROM kg_chain_heads c WHERE c.tenant_id = $1) AS chain_hash
  FROM kg_log_head h WHERE h.id = 1 FOR UPDATE OF h
"""

_VERSIONS = """
SELECT stream_id, max(stream_version) AS version FROM kg_events
 WHERE tenant_id = $1 AND project_id = $2 AND stream_id = ANY($3::text[])
 GROUP BY stream_id
"""

_INSERT_MANY = f"""
WITH ins AS (
    INSERT INTO kg_events ({EVENT_COLUMNS})
    SELECT p, e, $3, $4, sid, v, t, s, pl::jsonb, md::jsonb, $5, NULL, ph, h
      FROM unnest($1::bigint[], $2::uuid[], $6::text[], $7::int[], $8::text[], $9::int[],
                  $10::text[], $11::text[], $12::text[], $13::text[])
           AS x(p, e, sid, v, t, s, pl, md, ph, h)
    RETURNING 1
), head AS (
    UPDATE kg_log_head SET position = $14 WHERE id = 1 RETURNING 1
), chain AS (
    INSERT INTO kg_chain_heads (tenant_id, position, hash) VALUES ($3, $14, $15)
    ON CONFLICT (tenant_id) DO UPDATE SET position = excluded.position, hash = excluded.hash
    RETURNING 1
)
SELECT (SELECT count(*) FROM ins) AS inserted, pg_notify('{NOTIFY_CHANNEL}', $14::text)
"""


async def append_multi(
    store: EventStore,
    scope: Scope,
    items: Sequence[StreamEvent],
    *,
    expected_versions: Mapping[str, int] | None = None,
    metadata: EventMetadata | None = None,
) -> list[AppendResult]:
    """Append ``items`` atomically, in the given order: all of them or, on any error, none.

    Events of different streams may interleave (a bulk writer groups them by kind so that
    projections apply long runs); each stream's versions still follow its events' order.
    ``expected_versions`` maps stream ids to the version each must be at (as
    ``expected_version`` in :meth:`EventStore.append`); a mismatch raises
    :class:`ConcurrencyConflictError` and nothing is written. Returns one result per stream, in
    order of first appearance; a stream's positions are increasing but need not be contiguous.
    """
    if len(items) > MAX_BATCH:
        raise ValidationError(f"append has {len(items)} events; the limit is {MAX_BATCH}")
    counts: dict[str, int] = {}
    for item in items:
        counts[item.stream_id] = counts.get(item.stream_id, 0) + 1
    expected = dict(expected_versions or {})
    for stream_id, count in counts.items():
        _check_append_args(stream_id, count, expected.get(stream_id), None)
    if not items:
        return []
    default_meta = metadata or EventMetadata()
    meta_texts: dict[int, str] = {}
    prepared: list[tuple[str, DomainEvent, str, str]] = []
    for item in items:
        event, meta = (
            (item.event.event, item.event.metadata)
            if isinstance(item.event, PendingEvent)
            else (item.event, default_meta)
        )
        meta_text = meta_texts.get(id(meta))
        if meta_text is None:
            meta_text = meta_texts[id(meta)] = canonical_json(meta.to_json())
        prepared.append((item.stream_id, event, _payload_json(event), meta_text))
    recorded_at = datetime.now(UTC)
    try:
        async with store.pool.acquire() as conn, conn.transaction():
            return await _append_locked(conn, scope, list(counts), expected, prepared, recorded_at)
    except asyncpg.UndefinedTableError as exc:
        raise SchemaNotReadyError(
            f"the event store tables are missing ({exc}): run `kg init` or `kg db upgrade`"
        ) from exc


async def _append_locked(
    conn: asyncpg.Connection,
    scope: Scope,
    streams: list[str],
    expected: dict[str, int],
    prepared: list[tuple[str, DomainEvent, str, str]],
    recorded_at: datetime,
) -> list[AppendResult]:
    await set_tenant(conn, scope.tenant_id)
    head, prev_hash = await conn.fetchrow(_LOCK_HEAD, scope.tenant_id)
    rows = await conn.fetch(_VERSIONS, scope.tenant_id, scope.project_id, streams)
    start = {r["stream_id"]: r["version"] for r in rows}
    for stream_id in streams:
        current = start.get(stream_id) or 0
        wanted = expected.get(stream_id)
        if wanted is not None and wanted != current:
            raise ConcurrencyConflictError(stream_id, wanted, current)
    versions = {s: start.get(s) or 0 for s in streams}
    positions: dict[str, list[int]] = {s: [] for s in streams}
    ids: dict[str, list[str]] = {s: [] for s in streams}
    prev = prev_hash or GENESIS_HASH
    cols: dict[str, list[Any]] = {
        k: [] for k in ("p", "e", "sid", "v", "t", "s", "pl", "md", "ph", "h")
    }
    position = head
    for stream_id, event, payload_text, meta_text in prepared:
        position += 1
        versions[stream_id] += 1
        event_id = str(uuid.uuid4())
        digest = chain_hash(
            prev,
            canonical_event(
                position=position,
                event_id=event_id,
                tenant_id=scope.tenant_id,
                project_id=scope.project_id,
                stream_id=stream_id,
                stream_version=versions[stream_id],
                event_type=event.event_type,
                schema_version=event.schema_version,
                payload_json=payload_text,
                metadata_json=meta_text,
                recorded_at=recorded_at,
                idempotency_key=None,
            ),
        )
        for key, value in zip(
            cols,
            (
                position,
                event_id,
                stream_id,
                versions[stream_id],
                event.event_type,
                event.schema_version,
                payload_text,
                meta_text,
                prev,
                digest,
            ),
            strict=True,
        ):
            cols[key].append(value)
        positions[stream_id].append(position)
        ids[stream_id].append(event_id)
        prev = digest
    await conn.fetchrow(
        _INSERT_MANY,
        cols["p"],
        cols["e"],
        scope.tenant_id,
        scope.project_id,
        recorded_at,
        cols["sid"],
        cols["v"],
        cols["t"],
        cols["s"],
        cols["pl"],
        cols["md"],
        cols["ph"],
        cols["h"],
        position,
        prev,
    )
    return [
        AppendResult(
            stream_id=s,
            first_position=positions[s][0],
            last_position=positions[s][-1],
            from_version=(start.get(s) or 0) + 1,
            to_version=versions[s],
            event_ids=tuple(ids[s]),
        )
        for s in streams
    ]
