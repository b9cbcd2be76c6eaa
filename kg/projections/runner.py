"""The projection runner: catch up from the checkpoints, tail the log, rebuild.

Each batch is applied to every projection that has not seen it, in one transaction that also
moves those projections' checkpoints: rows and checkpoint commit together (exactly once). The
checkpoint rows are locked for the transaction, so two runners (a CLI command and a server, say)
never apply the same events twice.

A long catch-up reads the next batch from the log (on another connection) while the current one
is being written: the database and the Python side work at the same time. A prefetched batch is
used only if it starts exactly at the checkpoint found under the lock; the log is append-only
and gapless, so such a batch is exactly what a fresh read would return (or a prefix of it).

A bulk catch-up (a rebuild, a large ingest) replays kg_nodes in a lane of its own that reads
only the events it handles and builds its dropped indexes as soon as it is done, while the
other projections are still replaying (see :meth:`ProjectionRunner._replay_in_lanes`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from kg.errors import ValidationError
from kg.events.envelope import RecordedEvent
from kg.events.store import LOG_HEAD, SELECT_EVENT, EventStore, log_head, record_from_row
from kg.projections.base import Projection, ProjectionContext

_READ_TYPES = f"""
SELECT {SELECT_EVENT} FROM kg_events
 WHERE position > $1 AND position <= $2 AND event_type = ANY($3) ORDER BY position
"""


def _event_types(projections: Sequence[Projection]) -> list[str] | None:
    """The event types the projections read, when each of them declares its own
    (``event_types``); None (read everything) otherwise."""
    types: set[str] = set()
    for projection in projections:
        declared: frozenset[str] | None = getattr(projection, "event_types", None)
        if declared is None:
            return None
        types |= declared
    return sorted(types)


@dataclass(frozen=True)
class _Batch:
    """The events of the log positions (``after``, ``end``] that the projections read."""

    after: int
    end: int
    events: list[RecordedEvent]


@dataclass
class _Prefetch:
    """A read of ``limit`` positions after position ``after``, started ahead of time."""

    after: int
    limit: int
    task: asyncio.Task[_Batch]

    async def discard(self) -> None:
        self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task


@dataclass(frozen=True)
class ProjectionStatus:
    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        return self.head - self.position


# A catch-up that applied at least this many events refreshes the tables' statistics.
ANALYZE_AFTER = 1000


class ProjectionRunner:
    def __init__(
        self,
        pool: asyncpg.Pool,
        projections: Sequence[Projection],
        ctx: ProjectionContext,
        *,
        batch_size: int = 2000,
        maintain_indexes: bool = True,
        bulk_threshold: int = 50_000,
    ) -> None:
        self._pool = pool
        self._store = EventStore(pool)
        self.projections = list(projections)
        self.ctx = ctx
        self.batch_size = batch_size
        self.maintain_indexes = maintain_indexes
        self.bulk_threshold = bulk_threshold
        self._indexes_checked = not maintain_indexes
        self._rows_ensured = False
        # One catch-up of this runner at a time. A catch-up holds the checkpoint rows (FOR
        # UPDATE) on one pooled connection and reads the log on another; concurrent catch-ups
        # of one process (an MCP server answering several calls while events are pending)
        # queued on those rows, one per connection, left the holder none: a deadlock. Queued
        # here instead, a later caller finds the work done (lag 0) without a second pass.
        # Other processes have their own pools and still meet at the row locks.
        self._serial = asyncio.Lock()

    def _select(self, names: Sequence[str] | None) -> list[Projection]:
        if not names:
            return self.projections
        known = {p.name: p for p in self.projections}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValidationError(
                f"unknown projection(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )
        return [known[n] for n in names]

    async def _ensure_rows(self, conn: asyncpg.Connection) -> None:
        await conn.execute(
            "INSERT INTO projection_checkpoints (name) SELECT unnest($1::text[]) "
            "ON CONFLICT DO NOTHING",
            [p.name for p in self.projections],
        )

    async def status(self) -> list[ProjectionStatus]:
        async with self._pool.acquire() as conn:
            await self._ensure_rows(conn)
            rows = await conn.fetch("SELECT name, position FROM projection_checkpoints")
            head = await log_head(conn)
        positions = {r["name"]: r["position"] for r in rows}
        return [ProjectionStatus(p.name, positions[p.name], head) for p in self.projections]

    async def catch_up(
        self, names: Sequence[str] | None = None, *, until: int | None = None
    ) -> int:
        """Apply everything new (up to position ``until``, if given) to the selected
        projections; returns the events applied."""
        return await self._catch_up(self._select(names), until, None)

    async def catch_up_in_bulk(self, names: Sequence[str] | None = None) -> int:
        """:meth:`catch_up` for a caller that dropped the bulk-built indexes (``prepare_bulk``)
        before appending a lot: they are built again, each as soon as its projection is done."""
        return await self._catch_up(self._select(names), None, True)

    async def _catch_up(
        self, selected: list[Projection], until: int | None, bulk: bool | None
    ) -> int:
        """``bulk`` None: decide from the lag (at least ``bulk_threshold`` events behind)."""
        async with self._serial:
            return await self._catch_up_alone(selected, until, bulk)

    async def _catch_up_alone(
        self, selected: list[Projection], until: int | None, bulk: bool | None
    ) -> int:
        async with self._pool.acquire() as conn:
            if not self._rows_ensured:
                await self._ensure_rows(conn)
                self._rows_ensured = True
            if not self._indexes_checked:
                # A rebuild killed between reset and finish leaves a bulk-built index missing.
                for projection in self.projections:
                    await projection.finish_rebuild(conn)
                self._indexes_checked = True
            if bulk is None:
                lag = await conn.fetchval(
                    f"SELECT {LOG_HEAD} - min(c.position) FROM projection_checkpoints c "
                    "WHERE c.name = ANY($1)",
                    [p.name for p in selected],
                )
                if lag == 0:  # the common case before every command and tool call
                    return 0
                # A long way behind (a backfill, a restore), dropping indexes that are cheaper
                # to build once than to update row by row pays for itself.
                bulk = self.maintain_indexes and until is None and (lag or 0) >= self.bulk_threshold
            if bulk:
                for projection in selected:
                    await projection.prepare_bulk(conn)
        if not bulk:
            applied = await self._replay(selected, until)
        else:
            try:
                applied = await self._replay_in_lanes(selected, until)
            finally:
                await self._finish(selected)
        if applied >= ANALYZE_AFTER:
            await self._analyze(selected)
        return applied

    async def _analyze(self, selected: Sequence[Projection]) -> None:
        """Refresh the planner's statistics of the tables a large catch-up just filled.

        Until autovacuum gets to them, freshly loaded tables have none, and the first queries
        after a backfill, a large sync, a rebuild or a replay plan as if the tables were empty
        (an anchor build 15 times slower, measured). ANALYZE samples a bounded number of rows,
        so its cost does not grow with the table.
        """
        async with self._pool.acquire() as conn:
            for projection in selected:
                await conn.execute(f"ANALYZE {projection.name}")

    async def _finish(self, selected: Sequence[Projection]) -> None:
        async with self._pool.acquire() as conn:
            for projection in selected:
                await projection.finish_rebuild(conn)

    async def _replay_in_lanes(self, selected: list[Projection], until: int | None) -> int:
        """Replay with each projection that builds an index in bulk in a lane of its own, which
        builds its index as soon as that projection is done, while the other lanes go on.

        Building pgvector's HNSW index is most of a rebuild's time and runs in the database
        alone; replaying kg_edges meanwhile uses the other core. Each lane moves only its own
        projections' checkpoints, in the same transactions as their rows.
        """
        own = [[p] for p in selected if getattr(p, "builds_index_in_bulk", False)]
        rest = [p for p in selected if not getattr(p, "builds_index_in_bulk", False)]
        lanes = own + ([rest] if rest else [])

        async def lane(projections: list[Projection]) -> int:
            applied = await self._replay(projections, until)
            await self._finish(projections)
            return applied

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(lane(projections)) for projections in lanes]
        return max(task.result() for task in tasks)

    async def _replay(self, selected: list[Projection], until: int | None) -> int:
        applied = 0
        ahead: _Prefetch | None = None
        try:
            while True:
                n, ahead = await self._apply_next_batch(selected, until, ahead)
                if n == 0:
                    return applied
                applied += n
        finally:
            if ahead is not None:
                await ahead.discard()

    def _limit(self, start: int, until: int | None) -> int:
        return self.batch_size if until is None else min(self.batch_size, until - start)

    async def _read(
        self, start: int, limit: int, types: list[str] | None, ahead: _Prefetch | None
    ) -> _Batch:
        if ahead is not None and ahead.after == start and ahead.limit == limit:
            return await ahead.task
        if ahead is not None:
            await ahead.discard()
        return await self._read_batch(start, limit, types)

    async def _read_batch(self, start: int, limit: int, types: list[str] | None) -> _Batch:
        """The next ``limit`` log positions. With ``types``, only those events are fetched and
        decoded: positions are gapless and commit-ordered, so every position up to the head
        read first is committed, and a batch of positions is complete without reading the
        events the projections skip."""
        if types is None:
            events = await self._store.read_all(start, limit=limit)
            return _Batch(start, events[-1].position if events else start, events)
        async with self._pool.acquire() as conn:
            head = await log_head(conn)
            end = min(start + limit, int(head or 0))
            if end <= start:
                return _Batch(start, start, [])
            rows = await conn.fetch(_READ_TYPES, start, end, types)
        return _Batch(start, end, [record_from_row(r) for r in rows])

    async def _apply_next_batch(
        self, selected: list[Projection], until: int | None, ahead: _Prefetch | None
    ) -> tuple[int, _Prefetch | None]:
        """Apply one batch; returns how many events it held, and the read of the next batch
        (started only when this one was full, i.e. more is likely to follow)."""
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT name, position FROM projection_checkpoints WHERE name = ANY($1) "
                "ORDER BY name FOR UPDATE",
                [p.name for p in selected],
            )
            checkpoints = {r["name"]: r["position"] for r in rows}
            start = min(checkpoints.values())
            limit = self._limit(start, until)
            if limit <= 0:
                return 0, None
            types = _event_types(selected)
            batch = await self._read(start, limit, types, ahead)
            end = batch.end
            if end == start:
                return 0, None
            following: _Prefetch | None = None
            if end - start == limit and self._limit(end, until) > 0:
                following = _Prefetch(
                    end,
                    self._limit(end, until),
                    asyncio.create_task(self._read_batch(end, self._limit(end, until), types)),
                )
            try:
                await self._apply(conn, selected, checkpoints, start, end, batch.events)
            except BaseException:
                if following is not None:
                    await following.discard()
                raise
            return end - start, following

    async def _apply(
        self,
        conn: asyncpg.Connection,
        selected: list[Projection],
        checkpoints: dict[str, int],
        start: int,
        end: int,
        events: list[RecordedEvent],
    ) -> None:
        for projection in selected:
            seen = checkpoints[projection.name]
            todo = [e for e in events if e.position > seen] if seen > start else events
            if todo:
                await projection.apply(conn, todo, self.ctx)
        await conn.execute(
            "UPDATE projection_checkpoints SET position = $2, updated_at = now() "
            "WHERE name = ANY($1)",
            [p.name for p in selected],
            end,
        )

    async def rebuild(self, names: Sequence[str] | None = None) -> int:
        """Empty the selected projections and replay the whole log into them."""
        selected = self._select(names)
        async with self._pool.acquire() as conn, conn.transaction():
            await self._ensure_rows(conn)
            for projection in selected:
                await projection.reset(conn)
            await conn.execute(
                "UPDATE projection_checkpoints SET position = 0, updated_at = now() "
                "WHERE name = ANY($1)",
                [p.name for p in selected],
            )
        # reset() dropped the bulk-built indexes; the replay builds them again.
        return await self._catch_up(selected, None, True)

    async def run(self, stop: asyncio.Event, *, poll_interval: float = 1.0) -> None:
        """Keep the projections current until ``stop`` is set: catch up whenever the log moves
        (woken by NOTIFY, or by the poll interval if a notification is lost)."""
        async with self._store.listen() as wake:
            while not stop.is_set():
                wake.clear()
                await self.catch_up()
                stopping = asyncio.ensure_future(stop.wait())
                woken = asyncio.ensure_future(wake.wait())
                await asyncio.wait(
                    {stopping, woken}, timeout=poll_interval, return_when=asyncio.FIRST_COMPLETED
                )
                for task in (stopping, woken):
                    task.cancel()
