"""Projecting while an ingest appends, and building kg_nodes' indexes in bulk for large ones.

Two things keep a large ingest from waiting on the projections at the end:

* the projections catch up in the background while later chunks are still parsed and
  appended (the database works on both at once; rows and checkpoints still commit together,
  and the runner's checkpoint locks keep concurrent catch-ups from applying anything twice);
* inserting a row into pgvector's HNSW index costs about a millisecond, building the index
  over the whole table afterwards a fraction of that per row (the full-text GIN index is
  likewise cheaper to build than to maintain). The projection rebuild already does this
  (``NodesProjection.reset``/``finish_rebuild``); when an ingest brings many new nodes
  (absolutely, and relative to the table) the indexes are dropped first and built again at
  the end, by :meth:`ProjectionRunner.catch_up_in_bulk`.

In bulk mode the background catch-up runs in two lanes, kg_nodes and the others (kg_edges),
each moving its own checkpoints. kg_nodes then keeps pace with the appends instead of waiting
for kg_edges' share of every batch, so the index build, which must wait for the last node,
starts as soon as the last append is projected, and runs alone (10,000 files: the whole
catch-up in one lane ended 10-25 s after the appends, and the build then took 35-50 s).

Readers are never wrong meanwhile: a search without the indexes is an exact scan, slower but
correct. If the process dies half-way, the next catch-up of any runner recreates the indexes
(a runner checks for them on its first catch-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from kg.ingest.parts import IngestParts
from kg.projections.nodes import NodesProjection
from kg.projections.runner import ANALYZE_AFTER

#: Below this many new nodes an ingest inserts into the indexes row by row. 2,000: a
#: 5,000-directive rules ingest (5,200 nodes into a fresh project) went from 10,000's row by
#: row inserts to a bulk build and its projection tail shrank (bench/RESULTS.md, issue 20);
#: with BULK_MIN_SHARE the build never covers more than ~4x the new rows.
BULK_MIN_NODES = 2_000
BULK_MIN_SHARE = 0.3  # of the rows already in kg_nodes


Lane = tuple[str, ...] | None
"""The projections one background catch-up covers, by name; None: all of them."""


class Projector:
    """The projections of one ingest run."""

    def __init__(self, rt: IngestParts) -> None:
        self.rt = rt
        self.applied = 0
        self.tail_seconds = 0.0  # waiting for the projections after the last append
        self.bulk = False
        self._tasks: dict[Lane, asyncio.Task[None]] = {}
        self._nodes = next(
            (p for p in rt.runner.projections if isinstance(p, NodesProjection)), None
        )
        nodes = self._nodes.name if self._nodes is not None else ""
        self._nodes_lane: Lane = (nodes,)
        self._other_lane: Lane = tuple(p.name for p in rt.runner.projections if p.name != nodes)
        # Both lanes cover the same log positions: the events applied are counted in one.
        self._counted = self._other_lane or self._nodes_lane

    def _lanes(self) -> list[Lane]:
        if not self.bulk:
            return [None]
        return [self._nodes_lane, self._other_lane] if self._other_lane else [self._nodes_lane]

    async def plan(self, expected_nodes: int) -> None:
        """Drop the HNSW index when about ``expected_nodes`` new nodes make a bulk build pay.
        Call it before the first :meth:`kick`."""
        if self._nodes is None or self.bulk or self._tasks or expected_nodes < BULK_MIN_NODES:
            return
        async with self.rt.system_pool.acquire() as conn:
            existing = await conn.fetchval(
                "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE relname = 'kg_nodes'"
            )
            if expected_nodes >= BULK_MIN_SHARE * (existing or 0):
                await self._nodes.prepare_bulk(conn)
                self.bulk = True

    def kick(self) -> None:
        """Start a background catch-up in each lane where none is running (re-raising a failed
        one's error)."""
        for lane in self._lanes():
            task = self._tasks.get(lane)
            if task is not None and task.done():
                del self._tasks[lane]
                task.result()
            if lane not in self._tasks:
                self._tasks[lane] = asyncio.create_task(self._catch_up(lane))

    async def _catch_up(self, lane: Lane) -> None:
        # No statistics refresh after each of these catch-ups (one every few thousand
        # events, each an ANALYZE of tables that keep growing): :meth:`finish` does it once.
        applied = await self.rt.runner.catch_up(None if lane is None else list(lane), analyze=False)
        if lane is None or lane == self._counted:
            self.applied += applied

    async def _drain(self, lane: Lane) -> None:
        task = self._tasks.pop(lane, None)
        if task is not None:
            await task

    async def finish(self) -> int:
        """Catch up to the end of the log; in bulk mode kg_nodes finishes its lane and builds
        its indexes while the other lane finishes."""
        start = time.perf_counter()
        try:
            if self.bulk:
                # Each lane refreshes its own tables' statistics when it is done: the other
                # lane's while kg_nodes still builds its index (a bulk ingest is large).
                async with asyncio.TaskGroup() as group:
                    group.create_task(self._finish_nodes())
                    if self._other_lane:
                        group.create_task(self._finish_lane(self._other_lane, analyze=True))
                self.bulk = False  # the runner has built the indexes again
            else:
                await self._finish_lane(None)
                if self.applied >= ANALYZE_AFTER:
                    await self.rt.runner.analyze()
            self.rt.recent.clear(self.rt.scope.tenant_id)  # all projected: nothing to keep
        finally:
            await self._restore_index()
            self.tail_seconds += time.perf_counter() - start
        return self.applied

    async def _finish_nodes(self) -> None:
        """The rest of kg_nodes' replay, then its indexes (counted if it is the only lane)."""
        await self._drain(self._nodes_lane)
        assert self._nodes_lane is not None
        applied = await self.rt.runner.catch_up_in_bulk(list(self._nodes_lane), analyze=False)
        if self._counted == self._nodes_lane:
            self.applied += applied
        await self.rt.runner.analyze(list(self._nodes_lane))

    async def _finish_lane(self, lane: Lane, *, analyze: bool = False) -> None:
        await self._drain(lane)
        await self._catch_up(lane)
        if analyze:
            assert lane is not None
            await self.rt.runner.analyze(list(lane))

    async def abort(self) -> None:
        """After a failure: stop the background catch-ups and put the index back."""
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(BaseException):
                await task
        self._tasks.clear()
        await self._restore_index()

    async def _restore_index(self) -> None:
        if self.bulk and self._nodes is not None:
            async with self.rt.system_pool.acquire() as conn:
                await self._nodes.finish_rebuild(conn)
            self.bulk = False
