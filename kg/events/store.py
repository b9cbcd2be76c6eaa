"""The event store: append, read and subscribe on PostgreSQL through asyncpg.

An append is one transaction of four round trips whatever the batch size: lock the log head
(which serialises appends, so positions follow commit order without gaps), check the stream
version and the idempotency key under that lock, insert the batch with ``unnest`` and move the
heads, commit. ``NOTIFY kg_events`` fires at commit to wake subscribers.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg

from kg.config import Scope
from kg.db.tenancy import set_tenant
from kg.errors import (
    ConcurrencyConflictError,
    IdempotencyKeyReusedError,
    SchemaNotReadyError,
    ValidationError,
)
from kg.events.base import DomainEvent
from kg.events.envelope import AppendResult, EventMetadata, PendingEvent, RecordedEvent
from kg.events.hashing import GENESIS_HASH, canonical_event, canonical_json, chain_hash

NOTIFY_CHANNEL = "kg_events"
MAX_BATCH = 50_000
_STREAM_ID = re.compile(r"^[^\x00-\x1f]{1,500}$")

EVENT_COLUMNS = (
    "position, event_id, tenant_id, project_id, stream_id, stream_version, event_type, "
    "schema_version, payload, metadata, recorded_at, idempotency_key, prev_hash, hash"
)

# The columns of RecordedEvent, in its field order.
SELECT_EVENT = EVENT_COLUMNS.replace("event_id", "event_id::text")

_LOCK_HEAD = """
SELECT h.position,
       (SELECT c.hash FROM kg_chain_heads c WHERE c.tenant_id = $1) AS chain_hash,
       (SELECT max(e.stream_version) FROM kg_events e
         WHERE e.tenant_id = $1 AND e.project_id = $2 AND e.stream_id = $3) AS version
  FROM kg_log_head h WHERE h.id = 1 FOR UPDATE OF h
"""

_FIND_IDEMPOTENT = """
SELECT stream_id, position, stream_version, event_id::text
  FROM kg_events
 WHERE tenant_id = $1 AND project_id = $2 AND idempotency_key = $3
 ORDER BY position
"""

_INSERT_BATCH = f"""
WITH ins AS (
    INSERT INTO kg_events ({EVENT_COLUMNS})
    SELECT p, e, $3, $4, $5, v, t, s, pl::jsonb, md::jsonb, $6, $7, ph, h
      FROM unnest($1::bigint[], $2::uuid[], $8::int[], $9::text[], $10::int[], $11::text[],
                  $12::text[], $13::text[], $14::text[]) AS x(p, e, v, t, s, pl, md, ph, h)
    RETURNING 1
), head AS (
    UPDATE kg_log_head SET position = $15 WHERE id = 1 RETURNING 1
), chain AS (
    INSERT INTO kg_chain_heads (tenant_id, position, hash) VALUES ($3, $15, $16)
    ON CONFLICT (tenant_id) DO UPDATE SET position = excluded.position, hash = excluded.hash
    RETURNING 1
)
SELECT (SELECT count(*) FROM ins) AS inserted, pg_notify('{NOTIFY_CHANNEL}', $15::text)
"""


def record_from_row(row: asyncpg.Record) -> RecordedEvent:
    """Build from a row selected with :data:`SELECT_EVENT` (positional: the read hot path)."""
    return RecordedEvent(*row)


def _check_append_args(
    stream_id: str, count: int, expected_version: int | None, idempotency_key: str | None
) -> None:
    if not _STREAM_ID.match(stream_id):
        raise ValidationError(
            f"stream id {stream_id[:80]!r} is invalid: use 1-500 characters without control "
            "characters"
        )
    if count == 0:
        raise ValidationError(f"append to stream {stream_id!r} has no events: pass at least one")
    if count > MAX_BATCH:
        raise ValidationError(
            f"append to stream {stream_id!r} has {count} events; the limit is {MAX_BATCH}: "
            "split the batch"
        )
    if expected_version is not None and expected_version < 0:
        raise ValidationError(
            f"expected_version {expected_version} is invalid: use None (any), 0 (stream must not "
            "exist yet) or the stream's current version"
        )
    if idempotency_key is not None and not 1 <= len(idempotency_key) <= 200:
        raise ValidationError("idempotency_key must be 1-200 characters")


def _payload_json(event: DomainEvent) -> str:
    if not isinstance(event, DomainEvent):
        raise ValidationError(
            f"cannot append {type(event).__name__}: events must be DomainEvent subclasses"
        )
    payload = event.to_payload()
    try:
        text = canonical_json(payload)
    except ValueError as exc:
        raise ValidationError(f"{event.event_type} payload is not valid JSON: {exc}") from None
    if "\\u0000" in text:
        raise ValidationError(
            f"{event.event_type} payload contains a NUL character (\\u0000), which PostgreSQL "
            "cannot store: remove it from the text"
        )
    return text


class EventStore:
    """Append-only, hash-chained event log. All methods are safe to call concurrently."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @property
    def pool(self) -> asyncpg.Pool:
        return self._pool

    async def append(
        self,
        scope: Scope,
        stream_id: str,
        events: Sequence[DomainEvent | PendingEvent],
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        metadata: EventMetadata | None = None,
    ) -> AppendResult:
        """Append ``events`` to ``stream_id`` atomically.

        ``expected_version``: ``None`` appends whatever the stream's version, ``0`` requires a new
        stream, ``n`` requires the stream to be at version ``n``; otherwise
        :class:`ConcurrencyConflictError` and nothing is written. With ``idempotency_key``, a
        repeat of the same append writes nothing and returns the first result.
        """
        _check_append_args(stream_id, len(events), expected_version, idempotency_key)
        default_meta = metadata or EventMetadata()
        meta_texts: dict[int, str] = {}  # one serialisation per distinct metadata object
        prepared = []
        for item in events:
            event, meta = (
                (item.event, item.metadata)
                if isinstance(item, PendingEvent)
                else (item, default_meta)
            )
            meta_text = meta_texts.get(id(meta))
            if meta_text is None:
                meta_text = meta_texts[id(meta)] = canonical_json(meta.to_json())
            prepared.append((event, _payload_json(event), meta_text))
        recorded_at = datetime.now(UTC)

        try:
            async with self._pool.acquire() as conn, conn.transaction():
                await set_tenant(conn, scope.tenant_id)
                head, prev_hash, version = await conn.fetchrow(
                    _LOCK_HEAD, scope.tenant_id, scope.project_id, stream_id
                )
                if idempotency_key is not None:
                    earlier = await conn.fetch(
                        _FIND_IDEMPOTENT, scope.tenant_id, scope.project_id, idempotency_key
                    )
                    if earlier:
                        return _duplicate_result(stream_id, idempotency_key, earlier)
                current = version or 0
                if expected_version is not None and expected_version != current:
                    raise ConcurrencyConflictError(stream_id, expected_version, current)

                prev = prev_hash or GENESIS_HASH
                cols: dict[str, list[Any]] = {
                    k: [] for k in ("p", "e", "v", "t", "s", "pl", "md", "ph", "h")
                }
                for offset, (event, payload_text, meta_text) in enumerate(prepared, 1):
                    position, event_id = head + offset, str(uuid.uuid4())
                    digest = chain_hash(
                        prev,
                        canonical_event(
                            position=position,
                            event_id=event_id,
                            tenant_id=scope.tenant_id,
                            project_id=scope.project_id,
                            stream_id=stream_id,
                            stream_version=current + offset,
                            event_type=event.event_type,
                            schema_version=event.schema_version,
                            payload_json=payload_text,
                            metadata_json=meta_text,
                            recorded_at=recorded_at,
                            idempotency_key=idempotency_key,
                        ),
                    )
                    for key, value in zip(
                        cols,
                        (
                            position,
                            event_id,
                            current + offset,
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
                    prev = digest
                last = head + len(prepared)
                await conn.fetchrow(
                    _INSERT_BATCH,
                    cols["p"],
                    cols["e"],
                    scope.tenant_id,
                    scope.project_id,
                    stream_id,
                    recorded_at,
                    idempotency_key,
                    cols["v"],
                    cols["t"],
                    cols["s"],
                    cols["pl"],
                    cols["md"],
                    cols["ph"],
                    cols["h"],
                    last,
                    prev,
                )
        except asyncpg.UndefinedTableError as exc:
            raise SchemaNotReadyError(
                f"the event store tables are missing ({exc}): run `kg init` or `kg db upgrade`"
            ) from exc
        return AppendResult(
            stream_id=stream_id,
            first_position=head + 1,
            last_position=last,
            from_version=current + 1,
            to_version=current + len(prepared),
            event_ids=tuple(cols["e"]),
        )

    async def read_all(
        self, after: int = 0, *, limit: int = 1000, scope: Scope | None = None
    ) -> list[RecordedEvent]:
        """Events with position > ``after`` in position order, at most ``limit``.

        With ``scope`` only that tenant's project is read. Without it the whole log is read,
        which only the system pool can do: under the application role RLS returns nothing.
        """
        async with self._pool.acquire() as conn, conn.transaction():
            if scope is None:
                rows = await conn.fetch(
                    f"SELECT {SELECT_EVENT} FROM kg_events WHERE position > $1 "
                    "ORDER BY position LIMIT $2",
                    after,
                    limit,
                )
            else:
                await set_tenant(conn, scope.tenant_id)
                rows = await conn.fetch(
                    f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 "
                    "AND project_id = $2 AND position > $3 ORDER BY tenant_id, position LIMIT $4",
                    scope.tenant_id,
                    scope.project_id,
                    after,
                    limit,
                )
        return [record_from_row(r) for r in rows]

    async def read_stream(
        self, scope: Scope, stream_id: str, *, from_version: int = 1
    ) -> list[RecordedEvent]:
        async with self._pool.acquire() as conn, conn.transaction():
            await set_tenant(conn, scope.tenant_id)
            rows = await conn.fetch(
                f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND project_id = $2 "
                "AND stream_id = $3 AND stream_version >= $4 ORDER BY stream_version",
                scope.tenant_id,
                scope.project_id,
                stream_id,
                from_version,
            )
        return [record_from_row(r) for r in rows]

    async def last_position(self, scope: Scope | None = None) -> int:
        """The newest position: of the whole log, or of one tenant's project."""
        async with self._pool.acquire() as conn, conn.transaction():
            if scope is None:
                value = await conn.fetchval("SELECT position FROM kg_log_head WHERE id = 1")
            else:
                await set_tenant(conn, scope.tenant_id)
                value = await conn.fetchval(
                    "SELECT max(position) FROM kg_events WHERE tenant_id = $1 AND project_id = $2",
                    scope.tenant_id,
                    scope.project_id,
                )
        return int(value or 0)

    async def count(self, scope: Scope | None = None) -> int:
        async with self._pool.acquire() as conn, conn.transaction():
            if scope is None:
                return int(await conn.fetchval("SELECT count(*) FROM kg_events"))
            await set_tenant(conn, scope.tenant_id)
            return int(
                await conn.fetchval(
                    "SELECT count(*) FROM kg_events WHERE tenant_id = $1 AND project_id = $2",
                    scope.tenant_id,
                    scope.project_id,
                )
            )

    @contextlib.asynccontextmanager
    async def listen(self) -> AsyncIterator[asyncio.Event]:
        """An event that is set whenever an append commits (LISTEN/NOTIFY on one connection)."""
        wake = asyncio.Event()

        def on_notify(*_: object) -> None:
            wake.set()

        listener = await self._pool.acquire()
        await listener.add_listener(NOTIFY_CHANNEL, on_notify)
        try:
            yield wake
        finally:
            await listener.remove_listener(NOTIFY_CHANNEL, on_notify)
            await self._pool.release(listener)

    async def subscribe(
        self,
        after: int = 0,
        *,
        scope: Scope | None = None,
        batch_size: int = 1000,
        poll_interval: float = 1.0,
    ) -> AsyncIterator[list[RecordedEvent]]:
        """Yield batches of new events forever, starting after ``after``.

        A notification wakes the reader as soon as an append commits; the poll interval is the
        fallback when a notification is lost (connection trouble, a proxy dropping it).
        """
        async with self.listen() as wake:
            position = after
            while True:
                wake.clear()
                batch = await self.read_all(position, limit=batch_size, scope=scope)
                if batch:
                    position = batch[-1].position
                    yield batch
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), poll_interval)


def _duplicate_result(stream_id: str, key: str, rows: Sequence[asyncpg.Record]) -> AppendResult:
    if rows[0]["stream_id"] != stream_id:
        raise IdempotencyKeyReusedError(
            f"idempotency key {key!r} was already used for stream {rows[0]['stream_id']!r}, not "
            f"{stream_id!r}: use a new key for a different command"
        )
    return AppendResult(
        stream_id=stream_id,
        first_position=rows[0]["position"],
        last_position=rows[-1]["position"],
        from_version=rows[0]["stream_version"],
        to_version=rows[-1]["stream_version"],
        event_ids=tuple(r["event_id"] for r in rows),
        duplicate=True,
    )
