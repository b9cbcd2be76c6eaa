"""The projection runner: catch up from the checkpoints, tail the log, rebuild.

Each batch is applied to every projection that has not seen it, in one transaction that also
moves those projections' checkpoints: rows and checkpoint commit together (exactly once). The
checkpoint rows are locked for the transaction, so two runners (a CLI command and a server, say)
never apply the same events twice.

A long catch-up reads the next batch from the log (on another connection) while the current one
is being written: the database and the Python side work at the same time. A prefetched batch is
used only if it starts exactly at the checkpoint found under the lock; a tenant's log is
append-only and commit-ordered, so such a batch is exactly what a fresh read would return (or
a prefix of it).

Positions are per tenant (migration 0013): every projection has a checkpoint per tenant, and a
catch-up replays each tenant that is ahead, one after the other. A tenant's history from before
that migration keeps its global positions (with gaps); batches are ranges of positions, so a
gap only makes a batch hold fewer events.

A bulk catch-up (a rebuild, a large ingest) replays kg_nodes in a lane of its own that reads
only the events it handles and builds its dropped indexes as soon as it is done, while the
other projections are still replaying (see :meth:`ProjectionRunner._replay_in_lanes`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import asyncpg

from kg.errors import ValidationError
from kg.events.envelope import RecordedEvent
from kg.events.recent import RecentEvents
from kg.events.store import (
    SELECT_EVENT_RANGE,
    EventStore,
    log_head,
    log_head_sql,
    record_from_row,
)
from kg.gc_pause import collector_paused, heap_frozen
from kg.progress import EVENTS_PROJECTED
from kg.projections.base import Projection, ProjectionContext

_READ_RANGE = SELECT_EVENT_RANGE.format(upper=" AND c.position <= $3") + (
    " WHERE e.tenant_id = $1 AND e.position > $2 AND e.position <= $3"
    " ORDER BY e.tenant_id, e.position"
)

# The next $5 events of the given types in positions ($2, $3].
_READ_TYPES = SELECT_EVENT_RANGE.format(upper=" AND c.position <= $3") + (
    " WHERE e.tenant_id = $1 AND e.position > $2 AND e.position <= $3"
    " AND e.event_type = ANY($4) ORDER BY e.tenant_id, e.position LIMIT $5"
)
# A read of only some event types looks this many batches' worth of positions ahead for a
# batch of them. A lane that skips most of the log (kg_nodes' lane past a log's nodes, the
# edges' lane over them) otherwise paid one transaction and checkpoint update per batch of
# positions it had nothing to do for: 400 of them for 800,000 edge events. A span stays
# bounded, so no read scans the rest of the log for a batch.
SKIP_SPAN = 16

# A batch's checkpoints, locked for its transaction, which commits without waiting for its WAL
# to reach the disk (synchronous_commit off, for this transaction only). Projections are derived:
# a crash can lose the last batches' commits, rows and checkpoints together (a transaction is
# still atomic), and the next catch-up replays them from the log, which is appended durably.
# Each COMMIT waited 10-17 ms for the flush on the benchmark machine, once per batch and lane.
_LOCK_CHECKPOINTS = """
SELECT name, position, set_config('synchronous_commit', 'off', true) FROM projection_checkpoints
 WHERE tenant_id = $1 AND name = ANY($2) ORDER BY name FOR UPDATE
"""

# The checkpoints of one tenant moved over positions no selected projection reads, from where
# they were seen only (see ProjectionRunner._skip_unread), without waiting for the WAL flush.
_SKIP_UNREAD = """
WITH quick AS (SELECT set_config('synchronous_commit', 'off', true))
UPDATE projection_checkpoints c SET position = $3, updated_at = now()
  FROM quick
 WHERE c.tenant_id = $1 AND c.name = ANY($2::text[]) AND c.position = $4
"""

# The tenants whose log is ahead of some selected projection, with how far the slowest one has
# got (a missing checkpoint row counts as 0). One row per tenant: the join is on tenant_id.
_BEHIND = """
SELECT h.tenant_id, h.position AS head,
       CASE WHEN count(c.name) < cardinality($1::text[]) THEN 0
            ELSE min(c.position) END AS seen,
       count(c.name) < cardinality($1::text[]) AS missing
  FROM kg_chain_heads h
  LEFT JOIN projection_checkpoints c ON c.tenant_id = h.tenant_id AND c.name = ANY($1::text[])
 WHERE $2::text IS NULL OR h.tenant_id = $2
 GROUP BY h.tenant_id, h.position
HAVING h.position > CASE WHEN count(c.name) < cardinality($1::text[]) THEN 0
                         ELSE min(c.position) END
 ORDER BY h.tenant_id
"""


# The log's head, and its newest erasure (0 for none): one round trip, both by index.
_HEAD_AND_ERASURE = f"""
SELECT {log_head_sql("$1")},
       coalesce((SELECT max(position) FROM kg_events
                  WHERE tenant_id = $1 AND event_type = 'ContentErased'), 0)
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
    """The events of a tenant's log positions (``after``, ``end``] that the projections read."""

    after: int
    end: int
    events: list[RecordedEvent]
    #: whether the read stopped before the head (or ``until``): more is likely to follow
    more: bool = False


@dataclass
class _Prefetch:
    """A read of ``limit`` positions of ``tenant_id`` after ``after``, started ahead of time."""

    tenant_id: str
    after: int
    limit: int
    task: asyncio.Task[_Batch]

    async def discard(self) -> None:
        self.task.cancel()
        with contextlib.suppress(BaseException):
            await self.task


@dataclass(frozen=True)
class ProjectionStatus:
    """How far a projection has got in one tenant's log."""

    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        return self.head - self.position


@dataclass(frozen=True)
class _Behind:
    """A tenant whose log is ahead of a projection: its head when looked at (``until`` is
    where its replay stops, None for wherever its head is by then)."""

    tenant_id: str
    head: int
    seen: int
    until: int | None
    #: some selected projection has no checkpoint row for this tenant yet
    missing: bool = False


# Once a runner has applied this many events to a projection since its last ANALYZE (in one
# catch-up or in many small ones: an import through the write path catches up per chunk), it
# refreshes that table's statistics.
ANALYZE_AFTER = 1000

# How long the background tail (run) lets notifications gather after one wakes it.
TAIL_SETTLE = 0.01
# A replay at least this far behind runs with the process's earlier objects frozen (gc_pause).
FREEZE_AFTER = 10_000


def _lag(behind: Sequence[_Behind]) -> int:
    return sum(b.head - b.seen for b in behind)  # (head is already capped at until)


class ProjectionRunner:
    """Keeps projections current, tenant by tenant: each tenant's log has its own positions,
    and each projection a checkpoint per tenant (``projection_checkpoints``, keyed by
    ``(tenant_id, name)``)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        projections: Sequence[Projection],
        ctx: ProjectionContext,
        *,
        batch_size: int = 2000,
        maintain_indexes: bool = True,
        bulk_threshold: int = 50_000,
        recent: RecentEvents | None = None,
    ) -> None:
        self._pool = pool
        self._unanalyzed: dict[str, int] = {}  # projection -> events applied since ANALYZE
        # What this process appended last (kg.events.recent): a batch it holds whole is taken
        # from there instead of read back from the log.
        self.recent = recent
        self._store = EventStore(pool)
        self.projections = list(projections)
        self.ctx = ctx
        self.batch_size = batch_size
        self.maintain_indexes = maintain_indexes
        self.bulk_threshold = bulk_threshold
        # Projections whose bulk-built indexes were checked (see _catch_up_alone).
        self._indexes_checked: set[str] = (
            set() if maintain_indexes else {p.name for p in self.projections}
        )
        # One catch-up of each projection at a time. A catch-up holds the checkpoint rows (FOR
        # UPDATE) on one pooled connection and reads the log on another; concurrent catch-ups
        # of one process (an MCP server answering several calls while events are pending)
        # queued on those rows, one per connection, left the holder none: a deadlock. Queued
        # here instead, a later caller finds the work done (lag 0) without a second pass.
        # The locks are per projection (taken in name order), so catch-ups of disjoint sets
        # (an ingest's kg_nodes lane beside its other lane) run side by side: they lock
        # different checkpoint rows. Other processes have their own pools and still meet at
        # the row locks.
        self._serial = {p.name: asyncio.Lock() for p in self.projections}

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

    async def _ensure_rows(self, conn: asyncpg.Connection, tenants: Sequence[str]) -> None:
        """Checkpoint rows (at 0) for every projection of ``tenants`` that has none yet."""
        await conn.execute(
            "INSERT INTO projection_checkpoints (tenant_id, name) "
            "SELECT t, n FROM unnest($1::text[]) AS t, unnest($2::text[]) AS n "
            "ON CONFLICT DO NOTHING",
            list(tenants),
            [p.name for p in self.projections],
        )

    async def status(self, tenant_id: str) -> list[ProjectionStatus]:
        """Each projection's checkpoint in ``tenant_id``'s log, and that log's head."""
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT name, position FROM projection_checkpoints WHERE tenant_id = $1",
                tenant_id,
            )
            head = await log_head(conn, tenant_id)
        positions = {r["name"]: r["position"] for r in rows}
        return [ProjectionStatus(p.name, positions.get(p.name, 0), head) for p in self.projections]

    async def catch_up(
        self,
        names: Sequence[str] | None = None,
        *,
        tenant_id: str | None = None,
        until: int | None = None,
        analyze: bool = True,
        in_lanes: bool = False,
    ) -> int:
        """Apply everything new to the selected projections, of every tenant or of
        ``tenant_id`` only (up to that tenant's position ``until``, if given); returns the
        events applied. ``analyze=False``: no statistics refresh after a large catch-up (a
        caller catching up again and again during one ingest calls :meth:`analyze` once at
        the end). ``in_lanes``: replay kg_nodes beside the other projections even when the
        catch-up is not a bulk one (an as-of replay, which builds no index), so that one
        lane's Python work overlaps the other's statements."""
        if until is not None and tenant_id is None:
            raise ValidationError(
                f"until={until} is a position in one tenant's log: pass tenant_id as well"
            )
        return await self._catch_up(self._select(names), tenant_id, until, None, analyze, in_lanes)

    async def catch_up_in_bulk(
        self,
        names: Sequence[str] | None = None,
        *,
        tenant_id: str | None = None,
        analyze: bool = True,
    ) -> int:
        """:meth:`catch_up` for a caller that dropped the bulk-built indexes (``prepare_bulk``)
        before appending a lot: they are built again, each as soon as its projection is done."""
        return await self._catch_up(self._select(names), tenant_id, None, True, analyze)

    async def analyze(self, names: Sequence[str] | None = None) -> None:
        """Refresh the planner's statistics of the selected projections' tables."""
        await self._analyze(self._select(names))

    async def _behind(
        self,
        conn: asyncpg.Connection,
        selected: Sequence[Projection],
        tenant_id: str | None,
        until: int | None,
    ) -> list[_Behind]:
        rows = await conn.fetch(_BEHIND, [p.name for p in selected], tenant_id)
        behind = [
            _Behind(r["tenant_id"], r["head"] if until is None else min(r["head"], until),
                    r["seen"], until, r["missing"])
            for r in rows
        ]  # fmt: skip
        return [b for b in behind if b.head > b.seen]

    async def _catch_up(
        self,
        selected: list[Projection],
        tenant_id: str | None,
        until: int | None,
        bulk: bool | None,
        analyze: bool = True,
        in_lanes: bool = False,
    ) -> int:
        """``bulk`` None: decide from the lag (at least ``bulk_threshold`` positions behind,
        over all tenants)."""
        async with contextlib.AsyncExitStack() as held:
            for name in sorted(p.name for p in selected):
                await held.enter_async_context(self._serial[name])
            return await self._catch_up_alone(selected, tenant_id, until, bulk, analyze, in_lanes)

    async def _catch_up_alone(
        self,
        selected: list[Projection],
        tenant_id: str | None,
        until: int | None,
        bulk: bool | None,
        analyze: bool = True,
        in_lanes: bool = False,
    ) -> int:
        async with self._pool.acquire() as conn:
            # A rebuild killed between reset and finish leaves a bulk-built index missing.
            # Only the selected projections: another lane's may be mid-bulk on purpose.
            for projection in selected:
                if projection.name not in self._indexes_checked:
                    await projection.finish_rebuild(conn)
                    self._indexes_checked.add(projection.name)
            behind = await self._behind(conn, selected, tenant_id, until)
            if not behind and not bulk:
                return 0  # the common case before every command and tool call
            missing = [b.tenant_id for b in behind if b.missing]
            if missing:  # a tenant's first catch-up (or a projection added since)
                await self._ensure_rows(conn, missing)
            skipped, todo = 0, behind
            if not bulk and until is None:
                skipped, todo = await self._skip_unread(conn, selected, behind)
            if bulk is None:
                # A long way behind (a backfill, a restore), dropping indexes that are cheaper
                # to build once than to update row by row pays for itself.
                bulk = self.maintain_indexes and until is None and _lag(todo) >= self.bulk_threshold
            if bulk:
                for projection in selected:
                    await projection.prepare_bulk(conn)
        # A long replay keeps the collector off the objects loaded before it (gc_pause).
        frozen = heap_frozen() if bulk or _lag(todo) >= FREEZE_AFTER else nullcontext()
        with frozen:
            if not bulk and in_lanes:
                applied = await self._replay_in_lanes(selected, todo, finish=False)
            elif not bulk:
                applied = await self._replay(selected, todo)
            else:
                try:
                    applied = await self._replay_in_lanes(selected, todo)
                finally:
                    await self._finish(selected)
        if self.recent is not None and until is None and len(selected) == len(self.projections):
            for tenant in behind:  # every projection has these: the window need not keep them
                self.recent.forget(tenant.tenant_id, tenant.head)
        for projection in selected:  # (positions passed over changed no table)
            self._unanalyzed[projection.name] = self._unanalyzed.get(projection.name, 0) + applied
        stale = [p for p in selected if self._unanalyzed[p.name] >= ANALYZE_AFTER]
        if analyze and stale:
            await self._analyze(stale)
        return skipped + applied

    async def _skip_unread(
        self, conn: asyncpg.Connection, selected: list[Projection], behind: list[_Behind]
    ) -> tuple[int, list[_Behind]]:
        """Move the checkpoints over positions that hold nothing the projections read, where
        this process appended all of them (its window says which types they are): one
        statement instead of a batch's transaction, its lock, its read and its update.

        Every ``query_directives`` call and every logged context graph appends a record no
        projection reads, and the next call's catch-up used to pay a whole batch for it. A
        checkpoint moves only from the position the tenant was seen at: one that another
        runner moved meanwhile is left to the batch path. The commit need not wait for its
        WAL (derived state, as in :data:`_LOCK_CHECKPOINTS`). Returns the positions passed
        over and the tenants still behind."""
        types = _event_types(selected)
        if self.recent is None or types is None:
            return 0, behind
        skipped, todo = 0, []
        names = [p.name for p in selected]
        for tenant in behind:
            held = self.recent.take(tenant.tenant_id, tenant.seen, tenant.head, types)
            if held != []:  # None: not all of them are this process's; else some are read
                todo.append(tenant)
                continue
            status = await conn.execute(
                _SKIP_UNREAD, tenant.tenant_id, names, tenant.head, tenant.seen
            )
            if status != f"UPDATE {len(names)}":
                todo.append(tenant)  # some checkpoint was elsewhere: the batch path decides
                continue
            skipped += tenant.head - tenant.seen
        return skipped, todo

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
                self._unanalyzed[projection.name] = 0

    async def _finish(self, selected: Sequence[Projection]) -> None:
        async with self._pool.acquire() as conn:
            for projection in selected:
                await projection.finish_rebuild(conn)

    async def _replay_in_lanes(
        self, selected: list[Projection], behind: list[_Behind], *, finish: bool = True
    ) -> int:
        """Replay with each projection that builds an index in bulk in a lane of its own, which
        builds its index as soon as that projection is done (``finish``), while the other
        lanes go on.

        Building pgvector's HNSW index is most of a rebuild's time and runs in the database
        alone; replaying kg_edges meanwhile uses the other core. Each lane moves only its own
        projections' checkpoints, in the same transactions as their rows. Each lane reads only
        the event types its projections declare, and while one lane waits for its statements
        the other's Python work goes on.
        """
        own = [[p] for p in selected if getattr(p, "builds_index_in_bulk", False)]
        rest = [p for p in selected if not getattr(p, "builds_index_in_bulk", False)]
        lanes = own + ([rest] if rest else [])

        async def lane(projections: list[Projection]) -> int:
            applied = await self._replay(projections, behind)
            if finish:
                await self._finish(projections)
            return applied

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(lane(projections)) for projections in lanes]
        return max(task.result() for task in tasks)

    def _progress_name(self, selected: list[Projection]) -> str:
        """The progress counter of a replay: one per lane when lanes run side by side."""
        if len(selected) == len(self.projections):
            return EVENTS_PROJECTED
        return f"{EVENTS_PROJECTED} ({', '.join(p.name for p in selected)})"

    async def _replay(self, selected: list[Projection], behind: list[_Behind]) -> int:
        """Replay each tenant's log that is ahead, one tenant after the other."""
        applied = 0
        name = self._progress_name(selected)
        progress = self.ctx.progress
        # How far this replay goes, as seen now (an ingest's log keeps growing: each replay
        # says it again).
        todo = sum(
            max(0, (t.head if t.until is None else min(t.head, t.until)) - t.seen) for t in behind
        )
        progress.total(name, progress.counter(name).value + todo)
        for tenant in behind:
            ahead: _Prefetch | None = None
            try:
                while True:
                    n, ahead = await self._apply_next_batch(
                        selected, tenant.tenant_id, tenant.until, ahead
                    )
                    if n == 0:
                        break
                    applied += n
                    progress.add(name, n)
                    if ahead is None:
                        # The batch reached the head as its read saw it (no read ahead was
                        # started): another transaction would only find nothing to do.
                        break
            finally:
                if ahead is not None:
                    await ahead.discard()
        return applied

    def _limit(self, start: int, until: int | None) -> int:
        return self.batch_size if until is None else min(self.batch_size, until - start)

    async def _read(
        self,
        conn: asyncpg.Connection,
        tenant_id: str,
        start: int,
        limit: int,
        types: list[str] | None,
        until: int | None,
        ahead: _Prefetch | None,
    ) -> _Batch:
        if ahead is not None and (ahead.tenant_id, ahead.after, ahead.limit) == (
            tenant_id,
            start,
            limit,
        ):
            return await ahead.task
        if ahead is not None:
            await ahead.discard()
        return await self._read_batch(tenant_id, start, limit, types, until, conn)

    async def _read_batch(
        self,
        tenant_id: str,
        start: int,
        limit: int,
        types: list[str] | None,
        until: int | None,
        conn: asyncpg.Connection | None = None,
    ) -> _Batch:
        """The tenant's next ``limit`` log positions. With ``types``, only those events are
        fetched and decoded, the next ``limit`` of them within ``SKIP_SPAN`` times as many
        positions: a tenant's positions are commit-ordered, so every position up to its head
        read first is committed, and a range of positions is complete without reading the
        events the projections skip.

        On ``conn`` (the batch's own transaction, READ COMMITTED: each statement sees what is
        committed) when given; a read ahead, which runs beside that transaction, takes a
        connection of its own."""
        if conn is None:
            async with self._pool.acquire() as own:
                return await self._read_batch(tenant_id, start, limit, types, until, own)
        erased = 0
        if self.recent is None:
            head = await log_head(conn, tenant_id)
        else:
            head, erased = await conn.fetchrow(_HEAD_AND_ERASURE, tenant_id)
        end = min(start + limit, head)
        if end <= start:
            return _Batch(start, start, [])
        if types is not None and self.recent is None:
            last = head if until is None else min(head, until)
            upper = min(start + limit * SKIP_SPAN, last)
            rows = await conn.fetch(_READ_TYPES, tenant_id, start, upper, types, limit)
            full = len(rows) == limit
            end = rows[-1][0] if full else upper  # (position is the first column)
            with collector_paused():
                events = [record_from_row(r) for r in rows]
            return _Batch(start, end, events, more=end < last)
        # Content erased since (a ContentErased after the range's start) may be in the
        # window still: the log is read then.
        held = (
            None
            if self.recent is None or erased > start
            else self.recent.take(tenant_id, start, end, types)
        )
        more = end - start == limit
        if held is not None:
            return _Batch(start, end, held, more)
        if types is None:
            rows = await conn.fetch(_READ_RANGE, tenant_id, start, end)
        else:
            rows = await conn.fetch(_READ_TYPES, tenant_id, start, end, types, limit)
        with collector_paused():
            return _Batch(start, end, [record_from_row(r) for r in rows], more)

    async def _apply_next_batch(
        self,
        selected: list[Projection],
        tenant_id: str,
        until: int | None,
        ahead: _Prefetch | None,
    ) -> tuple[int, _Prefetch | None]:
        """Apply one batch of ``tenant_id``'s log (not beyond ``until``); returns how many
        positions it covered (the events of the batch, skipped types included), and the read of
        the next batch (started only when this one was full, i.e. more is likely to follow)."""
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(_LOCK_CHECKPOINTS, tenant_id, [p.name for p in selected])
            checkpoints = {r["name"]: r["position"] for r in rows}
            start = min(checkpoints.values())
            limit = self._limit(start, until)
            if limit <= 0:
                return 0, None
            types = _event_types(selected)
            batch = await self._read(conn, tenant_id, start, limit, types, until, ahead)
            end = batch.end
            if end == start:
                return 0, None
            following: _Prefetch | None = None
            if batch.more and self._limit(end, until) > 0:
                following = _Prefetch(
                    tenant_id,
                    end,
                    self._limit(end, until),
                    asyncio.create_task(
                        self._read_batch(tenant_id, end, self._limit(end, until), types, until)
                    ),
                )
            try:
                await self._apply(conn, selected, tenant_id, checkpoints, start, end, batch.events)
            except BaseException:
                if following is not None:
                    await following.discard()
                raise
            return end - start, following

    async def _apply(
        self,
        conn: asyncpg.Connection,
        selected: list[Projection],
        tenant_id: str,
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
            "UPDATE projection_checkpoints SET position = $3, updated_at = now() "
            "WHERE tenant_id = $1 AND name = ANY($2)",
            tenant_id,
            [p.name for p in selected],
            end,
        )

    async def rebuild(self, names: Sequence[str] | None = None) -> int:
        """Empty the selected projections and replay every tenant's log into them."""
        selected = self._select(names)
        if self.recent is not None:
            self.recent.clear()  # a replay from the start reads the log itself
        async with self._pool.acquire() as conn, conn.transaction():
            for projection in selected:
                await projection.reset(conn)
            await conn.execute(
                "UPDATE projection_checkpoints SET position = 0, updated_at = now() "
                "WHERE name = ANY($1)",
                [p.name for p in selected],
            )
        # reset() dropped the bulk-built indexes; the replay builds them again.
        return await self._catch_up(selected, None, None, True)

    def lanes(self) -> list[list[str]]:
        """The projections in groups that read none of each other's event types (kg_nodes with
        kg_edges; each record table alone): what :meth:`run` catches up side by side."""
        groups: list[tuple[set[str], list[str]]] = []
        for projection in self.projections:
            declared: frozenset[str] | None = getattr(projection, "event_types", None)
            if declared is None:  # reads everything: one lane for all
                return [[p.name for p in self.projections]]
            types, names = set(declared), [projection.name]
            for group in [g for g in groups if g[0] & types]:
                groups.remove(group)
                types |= group[0]
                names = group[1] + names
            groups.append((types, names))
        return [names for _, names in groups]

    async def _forget_projected(self) -> None:
        """Drop from the window what every projection has applied (a catch-up of some lanes
        only cannot tell; :meth:`run` asks the checkpoints)."""
        if self.recent is None:
            return
        async with self._pool.acquire() as conn:
            rows = await conn.fetch(
                "SELECT tenant_id, min(position) FROM projection_checkpoints "
                "WHERE name = ANY($1) GROUP BY tenant_id",
                [p.name for p in self.projections],
            )
        for tenant_id, position in rows:
            self.recent.forget(tenant_id, position)

    async def run(self, stop: asyncio.Event, *, poll_interval: float = 1.0) -> None:
        """Keep the projections current until ``stop`` is set: catch up whenever the log moves
        (woken by NOTIFY, or by the poll interval if a notification is lost).

        Each lane (:meth:`lanes`) catches up on its own, side by side: a long backlog of graph
        events (8 writers) holds kg_nodes and kg_edges only, so a read waiting for its own
        logged context graph (:mod:`kg.read.reader`) projects the context graph records at
        once instead of queuing behind the whole backlog."""
        lanes = self.lanes()
        async with self._store.listen() as wake:
            while not stop.is_set():
                wake.clear()
                if len(lanes) == 1:
                    await self.catch_up()
                else:
                    await asyncio.gather(*(self.catch_up(lane) for lane in lanes))
                    await self._forget_projected()
                stopping = asyncio.ensure_future(stop.wait())
                woken = asyncio.ensure_future(wake.wait())
                await asyncio.wait(
                    {stopping, woken}, timeout=poll_interval, return_when=asyncio.FIRST_COMPLETED
                )
                for task in (stopping, woken):
                    task.cancel()
                if woken.done() and not stop.is_set():
                    # Let a burst of appends (ten concurrent tool calls each log one) notify
                    # before catching up once for all of them; a read catches up by itself.
                    await asyncio.sleep(TAIL_SETTLE)
