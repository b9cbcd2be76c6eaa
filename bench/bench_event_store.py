"""Event store throughput: batched appends (1 and 8 writers), read-all, and the cost of the
gapless-order lock compared with plain sequence-numbered inserts.

Run: python bench/bench_event_store.py [--runs 3] [--tenants-only]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_database, machine, median, timed

from kg.config import Scope
from kg.db.connect import create_pool
from kg.events import EventStore, NodeAsserted
from kg.events.hashing import canonical_json


def batch(size: int, tag: str) -> list[NodeAsserted]:
    return [
        NodeAsserted(
            node_id=f"section:docs/{tag}/{i}.md#intro",
            node_type="Section",
            name=f"Section {i}",
            content="A paragraph of specification text, about two hundred characters long, "
            "describing what the component does and which decision it follows. " * 1,
            properties={"line": i, "level": 2},
        )
        for i in range(size)
    ]


async def append_rate(
    store: EventStore, writers: int, batch_size: int, total: int, tenants: int = 4
) -> float:
    """Events/s of ``writers`` concurrent writers spread over ``tenants`` tenants. Positions
    are per tenant (migration 0013): writers of different tenants never share a lock."""
    per_writer = total // writers
    run = uuid.uuid4().hex[:6]  # fresh tenants per run: each starts from an empty head

    async def write(w: int) -> None:
        scope = Scope(f"tenant{w % tenants}-{run}", "p")
        events = batch(batch_size, f"w{w}")
        for _ in range(per_writer // batch_size):
            await store.append(scope, f"stream-{w}-{uuid.uuid4().hex[:6]}", events)

    seconds = await timed(lambda: asyncio.gather(*(write(w) for w in range(writers))))
    return total / seconds


NOLOCK_DDL = """
CREATE TABLE IF NOT EXISTS bench_nolock (LIKE kg_events INCLUDING DEFAULTS);
CREATE SEQUENCE IF NOT EXISTS bench_nolock_seq;
"""
NOLOCK_INSERT = """
INSERT INTO bench_nolock (position, event_id, tenant_id, project_id, stream_id, stream_version,
    event_type, schema_version, payload, metadata, recorded_at, idempotency_key, prev_hash, hash)
SELECT nextval('bench_nolock_seq'), e, $2, 'p', $3, v, 'NodeAsserted', 1, pl::jsonb, '{}'::jsonb,
       now(), NULL, '', ''
  FROM unnest($1::uuid[], $4::int[], $5::text[]) AS x(e, v, pl)
"""


async def nolock_rate(pool: object, writers: int, batch_size: int, total: int) -> float:
    """The same batches, numbered by a plain sequence: no head lock, no hash chain, no version
    check. Faster under concurrency, but positions can commit out of order (readers skip)."""
    per_writer = total // writers
    payloads = [canonical_json(e.to_payload()) for e in batch(batch_size, "nolock")]

    async def write(w: int) -> None:
        for _ in range(per_writer // batch_size):
            ids = [uuid.uuid4() for _ in payloads]
            await pool.execute(  # type: ignore[attr-defined]
                NOLOCK_INSERT,
                ids,
                f"tenant{w % 4}",
                f"s{w}",
                list(range(1, batch_size + 1)),
                payloads,
            )

    seconds = await timed(lambda: asyncio.gather(*(write(w) for w in range(writers))))
    return total / seconds


async def read_rate(store: EventStore, chunk: int = 5000) -> tuple[int, float]:
    """Every tenant's log, tenant after tenant (positions are per tenant)."""
    count = 0
    tenants = [
        r["tenant_id"]
        for r in await store.pool.fetch("SELECT tenant_id FROM kg_chain_heads ORDER BY 1")
    ]

    async def read() -> None:
        nonlocal count
        for tenant in tenants:
            after = 0
            while True:
                events = await store.read_all(after, limit=chunk, tenant_id=tenant)
                if not events:
                    break
                count += len(events)
                after = events[-1].position

    seconds = await timed(read)
    return count, count / seconds


async def main(runs: int, tenants_only: bool) -> None:
    url = fresh_database()
    app = await create_pool(url, app_role=True, max_size=10)
    system = await create_pool(url, app_role=False, max_size=10)
    await system.execute(NOLOCK_DDL)
    store, system_store = EventStore(app), EventStore(system)
    cases = [
        ("append, 1 writer, batches of 100", lambda: append_rate(store, 1, 100, 20_000)),
        ("append, 1 writer, batches of 1,000", lambda: append_rate(store, 1, 1000, 50_000)),
        ("append, 8 writers, batches of 100", lambda: append_rate(store, 8, 100, 40_000)),
        ("append, 8 writers, batches of 10", lambda: append_rate(store, 8, 10, 8_000)),
        (
            "append, 1 tenant, 1 writer, batches of 10",
            lambda: append_rate(store, 1, 10, 4_000, tenants=1),
        ),
        (
            "append, 1 tenant, 8 writers, batches of 10",
            lambda: append_rate(store, 8, 10, 8_000, tenants=1),
        ),
        (
            "append, 8 tenants, 8 writers, batches of 10",
            lambda: append_rate(store, 8, 10, 8_000, tenants=8),
        ),
        (
            "without gapless lock: 8 writers, batches of 100",
            lambda: nolock_rate(system, 8, 100, 40_000),
        ),
        (
            "without gapless lock: 8 writers, batches of 10",
            lambda: nolock_rate(system, 8, 10, 8_000),
        ),
    ]
    if tenants_only:  # also runs on the code before per-tenant order, for a comparison
        cases = [c for c in cases if "tenant" in c[0]]
    rows = []
    for name, case in cases:
        rates = [await case() for _ in range(runs)]
        rows.append((name, median(rates), rates))
    if not tenants_only:
        reads = [await read_rate(system_store) for _ in range(runs)]
        rows.append(
            (
                f"read all ({reads[0][0]:,} events, chunks of 5,000)",
                median([r for _, r in reads]),
                [r for _, r in reads],
            )
        )
    await app.close()
    await system.close()

    print(f"Machine: {machine()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; median of {runs} runs\n")
    print("| case | events/s (median) | runs |")
    print("| --- | ---: | --- |")
    for name, value, rates in rows:
        print(f"| {name} | {value:,.0f} | {', '.join(f'{r:,.0f}' for r in rates)} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--tenants-only", action="store_true", help="only the 1-tenant / 8-tenant cases"
    )
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.tenants_only))
