"""Invariant 3: positions are gapless and commit-ordered under concurrent writers."""

from __future__ import annotations

import asyncio

from kg.config import Scope
from kg.events import EventStore, NodeAsserted
from tests.support import assert_log_verifies

WRITERS, EVENTS_PER_WRITER, BATCH = 8, 1000, 10


async def test_tailing_reader_sees_every_position_once_in_order(
    store: EventStore, system_store: EventStore
) -> None:
    total = WRITERS * EVENTS_PER_WRITER
    seen: list[int] = []

    async def tail() -> None:
        async for batch in system_store.subscribe(0, batch_size=500, poll_interval=0.2):
            seen.extend(e.position for e in batch)
            if len(seen) >= total:
                return

    async def write(writer: int) -> None:
        scope = Scope(f"tenant-{writer % 3}", "p")
        for start in range(0, EVENTS_PER_WRITER, BATCH):
            events = [
                NodeAsserted(node_id=f"file:w{writer}/{start + i}", node_type="File", name="f")
                for i in range(BATCH)
            ]
            await store.append(scope, f"writer-{writer}", events)

    reader = asyncio.create_task(tail())
    await asyncio.gather(*(write(w) for w in range(WRITERS)))
    await asyncio.wait_for(reader, timeout=60)

    assert seen == list(range(1, total + 1)), (
        "a position was skipped, repeated or seen out of order"
    )
    assert await system_store.last_position() == total
    await assert_log_verifies(system_store, [f"tenant-{t}" for t in range(3)])
