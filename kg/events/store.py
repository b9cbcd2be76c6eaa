"""The event store: append, read and subscribe on PostgreSQL through asyncpg.

Positions are per tenant (migration 0013): each tenant's log has its own gapless,
commit-ordered positions, handed out under a lock of the tenant's row in ``kg_chain_heads``, so
tenants never wait on each other. An append is one transaction of four round trips whatever the
batch size: lock the tenant's head (which serialises that tenant's appends, so its positions
follow commit order without gaps), check the stream version and the idempotency key under that
lock, insert the batch with ``unnest`` and move the head, commit. ``NOTIFY kg_events`` fires at
commit to wake subscribers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
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
from kg.events import written
from kg.events.base import DomainEvent
from kg.events.content import split_erasable
from kg.events.envelope import AppendResult, EventMetadata, PendingEvent, RecordedEvent
from kg.events.hashing import (
    GENESIS_HASH,
    EventCanonicaliser,
    canonical_json,
    canonical_json_plain,
    chain_hash,
)
from kg.events.recent import RecentEvents
from kg.gc_pause import collector_paused
from kg.json_text import decode_json
from kg.telemetry import traced

NOTIFY_CHANNEL = "kg_events"
MAX_BATCH = 50_000
_STREAM_ID = re.compile(r"^[^\x00-\x1f]{1,500}$")
# A NUL character in canonical JSON: the escape ``\u0000`` not itself escaped (a text holding a
# backslash followed by "u0000" is written ``\\u0000`` and is fine).
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")

EVENT_COLUMNS = (
    "position, event_id, tenant_id, project_id, stream_id, stream_version, event_type, "
    "schema_version, payload, metadata, recorded_at, idempotency_key, prev_hash, hash"
)

# The columns of RecordedEvent, in its field order: the last is the event's erasable content,
# kept beside the log (migration 0014; NULL when there is none or it was erased). Every read of
# events uses this list with ``FROM kg_events`` (a table or a kept replay's view of it). Payload
# and metadata come as JSON text, decoded when first read (RecordedEvent's fields): a bulk read
# (a replay, a rebuild) decoding both up front spent most of its time there.
_COLUMNS = EVENT_COLUMNS.replace("event_id", "event_id::text").replace(
    "payload, metadata", "payload::text AS payload, metadata::text AS metadata"
)
SELECT_EVENT = _COLUMNS + (
    ", (SELECT c.body FROM kg_event_content c WHERE kg_events.payload ? '$content' "
    "AND c.tenant_id = kg_events.tenant_id AND c.position = kg_events.position)"
)

# A range of one tenant's log (``read_all``, the projection runner): the same columns, with the
# content joined rather than looked up event by event (a twentieth of the buffer reads where
# events carry content). The join repeats the range on the content's side, so that a merge
# join starts at the range, not at the tenant's first content row. ``$1`` is the tenant, ``$2``
# the position the range starts after; ``{upper}`` an optional upper bound on ``c.position``.
SELECT_EVENT_RANGE = (
    "SELECT "
    + _COLUMNS.replace("position,", "e.position,", 1).replace("tenant_id,", "e.tenant_id,", 1)
    + ", c.body FROM kg_events e LEFT JOIN kg_event_content c ON c.tenant_id = e.tenant_id "
    "AND c.position = e.position AND c.tenant_id = $1 AND c.position > $2{upper}"
)

_READ_ALL = (
    SELECT_EVENT_RANGE.format(upper="")
    + " WHERE e.tenant_id = $1 AND e.position > $2 ORDER BY e.tenant_id, e.position LIMIT $3"
)
_READ_PROJECT = (
    SELECT_EVENT_RANGE.format(upper="")
    + " WHERE e.tenant_id = $1 AND e.project_id = $4 AND e.position > $2"
    " ORDER BY e.tenant_id, e.position LIMIT $3"
)

# Both functions are SECURITY DEFINER (migrations 0009, 0013): the application role has no other
# way to append or move a head. The lock function locks the tenant's head row (position and
# chain hash); the append function refuses positions or hash links that do not continue it.
# The transaction's tenant (row-level security) set and the tenant's head locked in one round
# trip: the lock takes the tenant as set_config returns it, so the setting comes first.
_SET_TENANT_AND_LOCK_HEAD = """
SELECT l.head, l.chain_hash
  FROM (SELECT set_config('kg.tenant_id', $1, true) AS tenant) t, LATERAL kg_append_lock(t.tenant) l
"""

# The same on a Citus cluster (``kg db distribute``): the tenant set by a statement Citus forwards
# to the workers (:func:`kg.db.tenancy.set_tenant_sql`), then the lock as a bare call of the
# distributed function, which the coordinator delegates to the tenant's worker (a call inside a
# larger query would run on the coordinator as the owner, on a second connection to the shards).
_LOCK_HEAD_DELEGATED = "SELECT kg_append_lock($1)"

# On a Citus cluster, an append delegated to the worker that held the tenant's shards just before
# the rebalancer moved them (its last step, under a brief lock) finds them remote and fails with
# this; nothing was written, and the same append sent again reaches the new worker.
_SHARD_MOVED = "cannot execute a distributed query from a query on a shard"
_MOVE_RETRIES = 5

_CITUS = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"

# Per open pool (a store is made per use, a pool lives long): whether its database has Citus.
# Keyed by id and holding the pool itself, so a later pool reusing a closed one's id is never
# taken for it; closed pools are dropped whenever a new one is asked about.
_CITUS_BY_POOL: dict[int, tuple[asyncpg.Pool, bool]] = {}


async def _has_citus(pool: asyncpg.Pool, conn: asyncpg.Connection) -> bool:
    known = _CITUS_BY_POOL.get(id(pool))
    if known is not None and known[0] is pool:
        return known[1]
    found = bool(await conn.fetchval(_CITUS))
    for key, (other, _) in list(_CITUS_BY_POOL.items()):
        if other.is_closing():
            del _CITUS_BY_POOL[key]
    _CITUS_BY_POOL[id(pool)] = (pool, found)
    return found


_VERSIONS = """
SELECT stream_id, max(stream_version) AS version FROM kg_events
 WHERE tenant_id = $1 AND project_id = $2 AND stream_id = ANY($3::text[])
 GROUP BY stream_id
"""

_FIND_IDEMPOTENT = """
SELECT stream_id, position, stream_version, event_id::text
  FROM kg_events
 WHERE tenant_id = $1 AND project_id = $2 AND idempotency_key = $3
 ORDER BY position
"""

_INSERT_BATCH = """
SELECT kg_append_events($3, $4, $5, $14, $1::bigint[], $2::uuid[], $6::text[], $7::int[],
                        $8::text[], $9::int[], $10::text[], $11::text[], $12::text[], $13::text[])
"""

# A batch with erasable content: the same append, and the bodies inserted by the function
# beside their events (migration 0014; the application role cannot insert content otherwise).
_INSERT_BATCH_WITH_CONTENT = """
SELECT kg_append_events($3, $4, $5, $14, $1::bigint[], $2::uuid[], $6::text[], $7::int[],
                        $8::text[], $9::int[], $10::text[], $11::text[], $12::text[], $13::text[],
                        $15::text[])
"""


# The newest committed position of one tenant's log: the one place that spells it. ``{tenant}``
# is the SQL expression of the tenant id (a parameter such as ``$1``, or a column).
LOG_HEAD = "coalesce((SELECT h.position FROM kg_chain_heads h WHERE h.tenant_id = {tenant}), 0)"


def log_head_sql(tenant: str) -> str:
    """:data:`LOG_HEAD` for the tenant id given by the SQL expression ``tenant``."""
    return LOG_HEAD.format(tenant=tenant)


async def log_head(conn: asyncpg.Connection | asyncpg.Pool, tenant_id: str) -> int:
    """The newest committed position of ``tenant_id``'s log (system pool, or a connection in a
    transaction scoped to that tenant)."""
    return int(await conn.fetchval(f"SELECT {log_head_sql('$1')}", tenant_id) or 0)


# A step run inside an append's transaction, after its insert (see EventStore.append_many).
AfterAppend = Callable[[asyncpg.Connection, list[AppendResult]], Awaitable[None]]


@dataclass(frozen=True)
class StreamEvent:
    """One event for one stream, in a multi-stream append."""

    stream_id: str
    event: DomainEvent | PendingEvent


_FIELDS = tuple(f.name for f in dataclasses.fields(RecordedEvent))


def record_from_row(row: asyncpg.Record) -> RecordedEvent:
    """Build from a row selected with :data:`SELECT_EVENT` or :data:`SELECT_EVENT_RANGE`
    (positional: the read hot path).

    The instance's fields are set in one dict update rather than through the frozen
    dataclass's ``__init__`` (fifteen ``object.__setattr__`` calls): the row comes from the
    store, in field order, and needs none of ``__init__``'s work. Payload and metadata stay JSON
    text until read (see :class:`RecordedEvent`).
    """
    event = object.__new__(RecordedEvent)
    event.__dict__.update(zip(_FIELDS, row, strict=True))
    return event


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


def _holds_nul(text: str) -> bool:
    """Whether canonical JSON ``text`` escapes a NUL character (the substring test first: the
    pattern scan was a tenth of an append's Python time, and almost no text has the escape)."""
    return "\\u0000" in text and _JSON_NUL.search(text) is not None


def _payload_json(event: DomainEvent) -> tuple[str, str | None, dict[str, Any] | None]:
    """The stored payload's canonical JSON, the body (canonical JSON) of its erasable
    content when it keeps some apart (:mod:`kg.events.content`), and the stored payload
    itself when it is plain JSON (equal to what a read of the log decodes), else None."""
    if not isinstance(event, DomainEvent):
        raise ValidationError(
            f"cannot append {type(event).__name__}: events must be DomainEvent subclasses"
        )
    try:
        payload, body_text = split_erasable(event.to_payload(), event.erasable_fields)
        text, plain = canonical_json_plain(payload)
    except UnicodeEncodeError:
        raise ValidationError(
            f"{event.event_type} payload holds an unpaired surrogate, which is not valid "
            "Unicode: fix the text's encoding"
        ) from None
    except ValueError as exc:
        raise ValidationError(f"{event.event_type} payload is not valid JSON: {exc}") from None
    if _holds_nul(text) or (body_text is not None and _holds_nul(body_text)):
        raise ValidationError(
            f"{event.event_type} payload contains a NUL character (\\u0000), which PostgreSQL "
            "cannot store: remove it from the text"
        )
    return text, body_text, payload if plain else None


@dataclass(frozen=True)
class StreamHead:
    """Where a stream stands (:meth:`EventStore.stream_heads`)."""

    version: int
    #: its newest event of the types asked for (None: it has none of them)
    event: RecordedEvent | None


class EventStore:
    """Append-only, hash-chained event log. All methods are safe to call concurrently."""

    def __init__(self, pool: asyncpg.Pool, recent: RecentEvents | None = None) -> None:
        self._pool = pool
        # Where committed appends are recorded for this process's projection runner.
        self._recent = recent

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
        (result,) = await self.append_many(
            scope,
            [StreamEvent(stream_id, e) for e in events],
            expected_versions=None if expected_version is None else {stream_id: expected_version},
            idempotency_key=idempotency_key,
            metadata=metadata,
        )
        return result

    @traced("kg.append")
    async def append_many(
        self,
        scope: Scope,
        items: Sequence[StreamEvent],
        *,
        expected_versions: Mapping[str, int] | None = None,
        idempotency_key: str | None = None,
        metadata: EventMetadata | None = None,
        then: AfterAppend | None = None,
    ) -> list[AppendResult]:
        """Append ``items`` (events of one or many streams) atomically, in the given order.

        One transaction, one lock of the log head, one version check for all streams and one
        insert, whatever the number of streams: what a bulk writer (ingestion: one stream per
        file) needs to avoid a commit per stream. Positions, versions and the hash chain are
        exactly those the same appends made one by one would produce. ``expected_versions``
        maps stream ids to the version each must be at. Returns one result per stream, in
        order of first appearance (a stream's positions increase but need not be contiguous).
        ``then`` runs in the append's transaction, after the insert (an erasure removes the
        content its ``ContentErased`` event lists in the same commit).
        """
        if len(items) > MAX_BATCH:
            raise ValidationError(
                f"append has {len(items)} events; the limit is {MAX_BATCH}: split the batch"
            )
        counts: dict[str, int] = {}
        for item in items:
            counts[item.stream_id] = counts.get(item.stream_id, 0) + 1
        expected = dict(expected_versions or {})
        for stream_id, count in counts.items():
            _check_append_args(stream_id, count, expected.get(stream_id), idempotency_key)
        if not items:
            return []
        default_meta = metadata or EventMetadata()
        meta_texts: dict[int, str] = {}  # one serialisation per distinct metadata object
        prepared: list[tuple[str, DomainEvent, str, str]] = []
        contents: list[str | None] = []  # per event: the body of its erasable content
        stored: list[dict[str, Any] | None] = []  # per event: its stored payload, if plain
        for item in items:
            event, meta = (
                (item.event.event, item.event.metadata)
                if isinstance(item.event, PendingEvent)
                else (item.event, default_meta)
            )
            meta_text = meta_texts.get(id(meta))
            if meta_text is None:
                try:
                    meta_text = meta_texts[id(meta)] = canonical_json(meta.to_json())
                except ValueError as exc:
                    raise ValidationError(f"event metadata is not valid JSON: {exc}") from None
            payload_text, content, plain = _payload_json(event)
            prepared.append((item.stream_id, event, payload_text, meta_text))
            stored.append(plain)
            contents.append(content)
        recent = self._recent
        kept: list[RecordedEvent] | None = [] if recent is not None and then is None else None
        sizes = [len(p[2]) + len(c or "") for p, c in zip(prepared, contents, strict=True)]
        try:
            for attempt in range(_MOVE_RETRIES + 1):
                try:
                    async with self._pool.acquire() as conn, conn.transaction():
                        results = await _append_locked(
                            conn, scope, list(counts), expected, prepared, idempotency_key,
                            contents, kept, stored,
                            delegated=await _has_citus(self._pool, conn),
                        )  # fmt: skip
                        if then is not None and not any(r.duplicate for r in results):
                            await then(conn, results)
                    break
                except asyncpg.InternalServerError as exc:
                    if _SHARD_MOVED not in str(exc) or attempt == _MOVE_RETRIES:
                        raise
                    # Rolled back whole: nothing of it was written, so it runs again as new.
                    if kept is not None:
                        kept.clear()
                    await asyncio.sleep(0.05 * 2**attempt)
            writes = written.current()
            if writes is not None:  # the caller's next read waits for these (read-your-writes)
                types = {p[1].event_type for p in prepared}
                writes.note(scope.tenant_id, max(r.last_position for r in results), types)
            if recent is not None:  # committed: the runner may take these instead of reading
                if kept:
                    recent.add(scope.tenant_id, kept, sizes)
                elif then is not None:
                    recent.clear(scope.tenant_id)  # e.g. an erasure: read the log again
            return results
        except (asyncpg.UndefinedTableError, asyncpg.UndefinedFunctionError) as exc:
            raise SchemaNotReadyError(
                f"the event store is missing or out of date ({exc}): run `kg init` or "
                "`kg db upgrade`"
            ) from exc

    async def read_all(
        self,
        after: int = 0,
        *,
        limit: int = 1000,
        scope: Scope | None = None,
        tenant_id: str | None = None,
    ) -> list[RecordedEvent]:
        """Events with position > ``after`` in position order, at most ``limit``.

        Positions are per tenant, so a read is of one tenant: with ``scope`` that tenant's
        project, with ``tenant_id`` all of that tenant's projects. Either way the transaction
        is scoped to that tenant (row-level security on the application role).
        """
        if (scope is None) == (tenant_id is None):
            raise ValidationError(
                "read_all reads one tenant's log: pass either scope or tenant_id (positions are "
                "per tenant)"
            )
        rows = await self._read_rows(after, limit, scope, tenant_id)
        with collector_paused():
            return [record_from_row(r) for r in rows]

    async def read_chunks(
        self,
        after: int = 0,
        *,
        chunk: int = 5000,
        scope: Scope | None = None,
        tenant_id: str | None = None,
    ) -> AsyncIterator[list[RecordedEvent]]:
        """One tenant's log from ``after`` to its head, as :meth:`read_all` reads it, in chunks
        of ``chunk`` events; stops at the first chunk that is not full (the head as of that
        read).

        The next chunk's query is sent before the current chunk's rows are made into events
        and handed over: the database reads and sends it while Python decodes, instead of each
        waiting for the other (a loop of :meth:`read_all` calls leaves the database idle while
        it decodes, and itself idle while the database reads).
        """
        if (scope is None) == (tenant_id is None):
            raise ValidationError(
                "read_chunks reads one tenant's log: pass either scope or tenant_id (positions "
                "are per tenant)"
            )
        if chunk < 1:
            raise ValidationError(f"chunk={chunk}: read at least one event at a time")
        pending: asyncio.Task[list[asyncpg.Record]] | None = asyncio.create_task(
            self._read_rows(after, chunk, scope, tenant_id)
        )
        try:
            while pending is not None:
                rows = await pending
                pending = None
                if not rows:
                    return
                if len(rows) == chunk:  # more may follow: ask for it now
                    pending = asyncio.create_task(
                        self._read_rows(rows[-1][0], chunk, scope, tenant_id)
                    )
                with collector_paused():
                    events = [record_from_row(r) for r in rows]
                del rows
                yield events
        finally:
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending

    async def _read_rows(
        self, after: int, limit: int, scope: Scope | None, tenant_id: str | None
    ) -> list[asyncpg.Record]:
        """The rows :meth:`read_all` turns into events."""
        async with self._pool.acquire() as conn, conn.transaction():
            if scope is None:
                assert tenant_id is not None
                await set_tenant(conn, tenant_id)
                rows: list[asyncpg.Record] = await conn.fetch(_READ_ALL, tenant_id, after, limit)
            else:
                await set_tenant(conn, scope.tenant_id)
                rows = await conn.fetch(
                    _READ_PROJECT, scope.tenant_id, after, limit, scope.project_id
                )
        return rows

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

    async def stream_heads(
        self, scope: Scope, stream_ids: Sequence[str], event_types: Sequence[str] = ()
    ) -> dict[str, StreamHead]:
        """For each of ``stream_ids`` that has events: its version (what an append expecting
        no change must name) and its newest event of ``event_types`` (any type when empty).
        Two round trips for a whole batch of streams, each found through the unique
        stream-version index."""
        ids = list(dict.fromkeys(stream_ids))
        async with self._pool.acquire() as conn, conn.transaction():
            await set_tenant(conn, scope.tenant_id)
            versions = await conn.fetch(
                "SELECT stream_id, max(stream_version) FROM kg_events WHERE tenant_id = $1 "
                "AND project_id = $2 AND stream_id = ANY($3::text[]) GROUP BY stream_id",
                scope.tenant_id,
                scope.project_id,
                ids,
            )
            rows = await conn.fetch(
                f"SELECT {SELECT_EVENT} FROM unnest($3::text[]) AS s(id) CROSS JOIN LATERAL "
                "(SELECT * FROM kg_events WHERE tenant_id = $1 AND project_id = $2 "
                "AND stream_id = s.id AND ($4::text[] IS NULL OR event_type = ANY($4)) "
                "ORDER BY stream_version DESC LIMIT 1) AS kg_events",
                scope.tenant_id,
                scope.project_id,
                ids,
                list(event_types) or None,
            )
        newest = {r.stream_id: r for r in map(record_from_row, rows)}
        return {sid: StreamHead(int(v), newest.get(sid)) for sid, v in versions}

    async def head(self, tenant_id: str) -> int:
        """The head of ``tenant_id``'s log: its newest committed position (0 for none)."""
        async with self._pool.acquire() as conn, conn.transaction():
            await set_tenant(conn, tenant_id)
            return await log_head(conn, tenant_id)

    async def last_position(
        self, scope: Scope | None = None, *, tenant_id: str | None = None
    ) -> int:
        """The newest position of one tenant's project (``scope``) or of the whole tenant
        (``tenant_id``): positions are per tenant."""
        if (scope is None) == (tenant_id is None):
            raise ValidationError(
                "last_position is of one tenant's log: pass either scope or tenant_id"
            )
        async with self._pool.acquire() as conn, conn.transaction():
            if scope is None:
                assert tenant_id is not None
                await set_tenant(conn, tenant_id)
                value = await log_head(conn, tenant_id)
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
        tenant_id: str | None = None,
        batch_size: int = 1000,
        poll_interval: float = 1.0,
    ) -> AsyncIterator[list[RecordedEvent]]:
        """Yield batches of new events of one tenant (``scope``: its project, or
        ``tenant_id``: all its projects) forever, starting after ``after``.

        A notification wakes the reader as soon as an append commits; the poll interval is the
        fallback when a notification is lost (connection trouble, a proxy dropping it).
        """
        async with self.listen() as wake:
            position = after
            while True:
                wake.clear()
                batch = await self.read_all(
                    position, limit=batch_size, scope=scope, tenant_id=tenant_id
                )
                if batch:
                    position = batch[-1].position
                    yield batch
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), poll_interval)


async def _append_locked(
    conn: asyncpg.Connection,
    scope: Scope,
    streams: list[str],
    expected: dict[str, int],
    prepared: list[tuple[str, DomainEvent, str, str]],
    idempotency_key: str | None,
    contents: Sequence[str | None] = (),
    kept: list[RecordedEvent] | None = None,
    stored: Sequence[dict[str, Any] | None] = (),
    *,
    delegated: bool = False,
) -> list[AppendResult]:
    """The append itself, under the lock of the tenant's head: checks, hash chain, one insert.
    With ``kept``, the appended events are added to it as a read of the log returns them.
    ``delegated``: the database has Citus (two statements to lock, see _LOCK_HEAD_DELEGATED)."""
    if delegated:
        await set_tenant(conn, scope.tenant_id)
        head, prev_hash = await conn.fetchval(_LOCK_HEAD_DELEGATED, scope.tenant_id)
    else:
        head, prev_hash = await conn.fetchrow(_SET_TENANT_AND_LOCK_HEAD, scope.tenant_id)
    if idempotency_key is not None:
        earlier = await conn.fetch(
            _FIND_IDEMPOTENT, scope.tenant_id, scope.project_id, idempotency_key
        )
        if earlier:
            return _duplicate_results(streams, idempotency_key, earlier)
    rows = await conn.fetch(_VERSIONS, scope.tenant_id, scope.project_id, streams)
    start = {r["stream_id"]: r["version"] or 0 for r in rows}
    for stream_id in streams:
        wanted = expected.get(stream_id)
        if wanted is not None and wanted != start.get(stream_id, 0):
            raise ConcurrencyConflictError(stream_id, wanted, start.get(stream_id, 0))
    recorded_at = datetime.now(UTC)
    canonicalise = EventCanonicaliser(
        tenant_id=scope.tenant_id,
        project_id=scope.project_id,
        recorded_at=recorded_at,
        idempotency_key=idempotency_key,
    )
    versions = {s: start.get(s, 0) for s in streams}
    positions: dict[str, list[int]] = {s: [] for s in streams}
    ids: dict[str, list[str]] = {s: [] for s in streams}
    prev = prev_hash or GENESIS_HASH
    count = len(prepared)
    all_positions = list(range(head + 1, head + count + 1))
    event_ids = [str(uuid.uuid4()) for _ in range(count)]
    stream_versions: list[int] = []
    prev_hashes: list[str] = []
    hashes: list[str] = []
    for position, event_id, (stream_id, event, payload_text, meta_text) in zip(
        all_positions, event_ids, prepared, strict=True
    ):
        version = versions[stream_id] = versions[stream_id] + 1
        canonical = canonicalise(
            position=position,
            event_id=event_id,
            stream_id=stream_id,
            stream_version=version,
            event_type=event.event_type,
            schema_version=event.schema_version,
            payload_json=payload_text,
            metadata_json=meta_text,
        )
        digest = chain_hash(prev, canonical)
        stream_versions.append(version)
        prev_hashes.append(prev)
        hashes.append(digest)
        positions[stream_id].append(position)
        ids[stream_id].append(event_id)
        prev = digest
    with_content = any(c is not None for c in contents)
    await conn.fetchrow(
        _INSERT_BATCH_WITH_CONTENT if with_content else _INSERT_BATCH,
        all_positions, event_ids, scope.tenant_id, scope.project_id, recorded_at,
        [p[0] for p in prepared], stream_versions, [p[1].event_type for p in prepared],
        [p[1].schema_version for p in prepared], [p[2] for p in prepared],
        [p[3] for p in prepared], prev_hashes, hashes, idempotency_key,
        *([list(contents)] if with_content else []),
    )  # fmt: skip
    if kept is not None:
        _keep(kept, scope, recorded_at, idempotency_key, all_positions, event_ids,
              stream_versions, prepared, prev_hashes, hashes, contents, stored)  # fmt: skip
    return [
        AppendResult(
            stream_id=s,
            first_position=positions[s][0],
            last_position=positions[s][-1],
            from_version=start.get(s, 0) + 1,
            to_version=versions[s],
            event_ids=tuple(ids[s]),
        )
        for s in streams
    ]


def _keep(
    kept: list[RecordedEvent],
    scope: Scope,
    recorded_at: datetime,
    idempotency_key: str | None,
    positions: list[int],
    event_ids: list[str],
    versions: list[int],
    prepared: list[tuple[str, DomainEvent, str, str]],
    prev_hashes: list[str],
    hashes: list[str],
    contents: Sequence[str | None],
    stored: Sequence[dict[str, Any] | None],
) -> None:
    """The appended events as :data:`SELECT_EVENT` reads them back: payload and metadata are
    the jsonb texts the insert stored, decoded as every connection decodes jsonb (a plain
    payload, ``stored``, is that already)."""
    metas: dict[str, dict[str, object]] = {}
    for i, (stream_id, event, payload_text, meta_text) in enumerate(prepared):
        meta = metas.get(meta_text)
        if meta is None:
            meta = metas[meta_text] = decode_json(meta_text)
        plain = stored[i] if stored else None
        payload: dict[str, Any] = plain if plain is not None else decode_json(payload_text)
        kept.append(
            RecordedEvent(
                positions[i], event_ids[i], scope.tenant_id, scope.project_id, stream_id,
                versions[i], event.event_type, event.schema_version,
                payload, meta, recorded_at, idempotency_key, prev_hashes[i], hashes[i],
                contents[i] if contents else None,
            )
        )  # fmt: skip


def _duplicate_results(
    streams: list[str], key: str, rows: Sequence[asyncpg.Record]
) -> list[AppendResult]:
    """The first append's results, for a retry with the same idempotency key."""
    earlier: dict[str, list[asyncpg.Record]] = {}
    for r in rows:
        earlier.setdefault(r["stream_id"], []).append(r)
    if set(earlier) != set(streams):
        raise IdempotencyKeyReusedError(
            f"idempotency key {key!r} was already used for stream(s) "
            f"{', '.join(repr(s) for s in earlier)}, not {', '.join(repr(s) for s in streams)}: "
            "use a new key for a different command"
        )
    return [
        AppendResult(
            stream_id=s,
            first_position=earlier[s][0]["position"],
            last_position=earlier[s][-1]["position"],
            from_version=earlier[s][0]["stream_version"],
            to_version=earlier[s][-1]["stream_version"],
            event_ids=tuple(r["event_id"] for r in earlier[s]),
            duplicate=True,
        )
        for s in streams
    ]
