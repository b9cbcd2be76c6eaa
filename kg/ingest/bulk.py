"""Projecting while an ingest appends, and building kg_nodes' indexes in bulk for large ones.

Two things keep a large ingest from waiting on the projections at the end:

* the projections catch up in a background task while later chunks are still parsed and
  appended (the database works on both at once; rows and checkpoints still commit together,
  and the runner's checkpoint locks keep concurrent catch-ups from applying anything twice);
* inserting a row into pgvector's HNSW index costs about a millisecond, building the index
  over the whole table afterwards a fraction of that per row (the full-text GIN index is
  likewise cheaper to build than to maintain). The projection rebuild already does this
  (``NodesProjection.reset``/``finish_rebuild``); when an ingest brings many new nodes
  (absolutely, and relative to the table) the indexes are dropped first and built again at
  the end, by :meth:`ProjectionRunner.catch_up_in_bulk`: as soon as kg_nodes is caught up,
  while kg_edges is still catching up.

Readers are never wrong meanwhile: a search without the indexes is an exact scan, slower but
correct. If the process dies half-way, the next catch-up of any runner recreates the indexes
(a runner checks for them on its first catch-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from kg.projections.nodes import NodesProjection
from kg.runtime import Runtime

BULK_MIN_NODES = 10_000
BULK_MIN_SHARE = 0.3  # of the rows already in kg_nodes


class Projector:
    """The projections of one ingest run."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.applied = 0
        self.tail_seconds = 0.0  # waiting for the projections after the last append
        self.bulk = False
        self._task: asyncio.Task[None] | None = None
        self._nodes = next(
            (p for p in rt.runner.projections if isinstance(p, NodesProjection)), None
        )

    async def plan(self, expected_nodes: int) -> None:
        """Drop the HNSW index when about ``expected_nodes`` new nodes make a bulk build pay."""
        if self._nodes is None or self.bulk or expected_nodes < BULK_MIN_NODES:
            return
        async with self.rt.system_pool.acquire() as conn:
            existing = await conn.fetchval(
                "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE relname = 'kg_nodes'"
            )
            if expected_nodes >= BULK_MIN_SHARE * (existing or 0):
                await self._nodes.prepare_bulk(conn)
                self.bulk = True

    def kick(self) -> None:
        """Start a background catch-up unless one is running (re-raising a failed one's error)."""
        if self._task is not None and self._task.done():
            self._task.result()
            self._task = None
        if self._task is None:
            self._task = asyncio.create_task(self._catch_up())

    async def _catch_up(self) -> None:
        self.applied += await self.rt.catch_up()

    async def finish(self) -> int:
        """Catch up to the end of the log (and rebuild the index in bulk mode: as soon as
        kg_nodes is done, while the other projections finish their replay)."""
        start = time.perf_counter()
        try:
            if self._task is not None:
                await self._task
                self._task = None
            if self.bulk:
                self.applied += await self.rt.runner.catch_up_in_bulk()
                self.bulk = False  # the runner has built the index again
            else:
                await self._catch_up()
        finally:
            await self._restore_index()
            self.tail_seconds += time.perf_counter() - start
        return self.applied

    async def abort(self) -> None:
        """After a failure: stop the background catch-up and put the index back."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None
        await self._restore_index()

    async def _restore_index(self) -> None:
        if self.bulk and self._nodes is not None:
            async with self.rt.system_pool.acquire() as conn:
                await self._nodes.finish_rebuild(conn)
            self.bulk = False
