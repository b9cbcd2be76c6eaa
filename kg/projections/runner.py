"""The projection runner: catch up from the checkpoints, tail the log, rebuild.

Each batch is applied to every projection that has not seen it, in one transaction that also
moves those projections' checkpoints: rows and checkpoint commit together (exactly once). The
checkpoint rows are locked for the transaction, so two runners (a CLI command and a server, say)
never apply the same events twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from kg.errors import ValidationError
from kg.events.store import EventStore
from kg.projections.base import Projection, ProjectionContext


@dataclass(frozen=True)
class ProjectionStatus:
    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        return self.head - self.position


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
            head = await conn.fetchval("SELECT position FROM kg_log_head WHERE id = 1")
        positions = {r["name"]: r["position"] for r in rows}
        return [ProjectionStatus(p.name, positions[p.name], head) for p in self.projections]

    async def catch_up(
        self, names: Sequence[str] | None = None, *, until: int | None = None
    ) -> int:
        """Apply everything new (up to position ``until``, if given) to the selected
        projections; returns the events applied."""
        selected = self._select(names)
        async with self._pool.acquire() as conn:
            await self._ensure_rows(conn)
            if not self._indexes_checked:
                # A rebuild killed between reset and finish leaves a bulk-built index missing.
                for projection in self.projections:
                    await projection.finish_rebuild(conn)
                self._indexes_checked = True
            lag = await conn.fetchval(
                "SELECT h.position - min(c.position) FROM kg_log_head h, projection_checkpoints c "
                "WHERE h.id = 1 AND c.name = ANY($1) GROUP BY h.position",
                [p.name for p in selected],
            )
            # A long way behind (a backfill, a restore), dropping indexes that are cheaper to
            # build once than to update row by row pays for itself.
            bulk = self.maintain_indexes and until is None and (lag or 0) >= self.bulk_threshold
            if bulk:
                for projection in selected:
                    await projection.prepare_bulk(conn)
        applied = 0
        try:
            while True:
                n = await self._apply_next_batch(selected, until)
                if n == 0:
                    return applied
                applied += n
        finally:
            if bulk:
                async with self._pool.acquire() as conn:
                    for projection in selected:
                        await projection.finish_rebuild(conn)

    async def _apply_next_batch(self, selected: list[Projection], until: int | None) -> int:
        async with self._pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(
                "SELECT name, position FROM projection_checkpoints WHERE name = ANY($1) "
                "ORDER BY name FOR UPDATE",
                [p.name for p in selected],
            )
            checkpoints = {r["name"]: r["position"] for r in rows}
            start = min(checkpoints.values())
            limit = self.batch_size if until is None else min(self.batch_size, until - start)
            if limit <= 0:
                return 0
            events = await self._store.read_all(start, limit=limit)
            if not events:
                return 0
            for projection in selected:
                seen = checkpoints[projection.name]
                todo = [e for e in events if e.position > seen] if seen > start else events
                if todo:
                    await projection.apply(conn, todo, self.ctx)
            await conn.execute(
                "UPDATE projection_checkpoints SET position = $2, updated_at = now() "
                "WHERE name = ANY($1)",
                [p.name for p in selected],
                events[-1].position,
            )
            return len(events)

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
        applied = await self.catch_up([p.name for p in selected])
        async with self._pool.acquire() as conn:
            for projection in selected:
                await projection.finish_rebuild(conn)
        return applied

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
