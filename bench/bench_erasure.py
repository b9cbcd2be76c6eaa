"""The cost of an erasure at 100,000 events, and what erasable content costs reads.

A tenant's log of ``--events`` ``NodeAsserted`` events (sections of ~400 characters, 100 per
"file" stream, each with a ``source``) is appended through the real store (content split into
``kg_event_content``) and projected (kg_nodes with the hashing embedder, passages, HNSW).
Each run plants a different token in three events (three files), then times ``erase`` by
pattern (full scan of the tenant's content), by node and by source, with its steps (plan,
append + delete, re-derive, cache, vacuum). Vacuum ``full`` (the default: rewrites the touched
tables) and ``plain`` alternate.

Reads: the tenant's whole log through ``SELECT_EVENT`` (with the content subquery) against the
same columns without it, alternated, median of the runs.

Run: python bench/bench_erasure.py [--events 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's kg

from common import fresh_database, machine, median

from kg.config import Scope, Settings
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder
from kg.erasure import Selection, erase
from kg.events import EventMetadata, EventStore, NodeAsserted, PendingEvent
from kg.events.store import EVENT_COLUMNS, SELECT_EVENT, StreamEvent
from kg.runtime import Runtime

SCOPE = Scope("bench", "p")
WORDS = [
    "checkout",
    "payment",
    "ledger",
    "refund",
    "invoice",
    "customer",
    "order",
    "gateway",
    "retry",
    "latency",
    "cache",
    "queue",
    "batch",
    "schema",
    "index",
    "tenant",
    "policy",
    "audit",
    "replay",
    "digest",
    "vector",
]


def section(i: int, extra: str = "") -> NodeAsserted:
    words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(60))
    return NodeAsserted(
        node_id=f"section:docs/f{i // 100}.md#s{i % 100}",
        node_type="Section",
        name=f"Section {i}",
        content=f"{words} {extra}".strip(),
    )


async def load(rt: Runtime, events: int) -> float:
    start = time.perf_counter()
    batch: list[StreamEvent] = []
    for i in range(events):
        meta = EventMetadata(actor="bench", source=f"docs/f{i // 100}.md@worktree")
        batch.append(StreamEvent(f"doc:docs/f{i // 100}.md", PendingEvent(section(i), meta)))
        if len(batch) == 5000:
            await rt.store.append_many(SCOPE, batch)
            batch = []
    if batch:
        await rt.store.append_many(SCOPE, batch)
    await rt.catch_up()
    return time.perf_counter() - start


async def plant(rt: Runtime, run: int, events: int) -> str:
    """Re-assert three sections of three files with a token in their content."""
    token = f"sk_live_bench{run:04d}Xq7Zr2Wm9Lp4"
    picks = [(run * 3 + k) * (events // 10 + 1) % events for k in range(3)]
    await rt.store.append_many(
        SCOPE,
        [
            StreamEvent(
                f"doc:docs/f{i // 100}.md",
                PendingEvent(
                    section(i, f"key {token}"),
                    EventMetadata(actor="bench", source=f"docs/f{i // 100}.md@worktree"),
                ),
            )
            for i in picks
        ],
    )
    await rt.catch_up()
    return token


async def read_all(pool: object, with_content: bool) -> float:
    columns = SELECT_EVENT if with_content else EVENT_COLUMNS.replace("event_id", "event_id::text")
    start = time.perf_counter()
    async with pool.acquire() as conn, conn.transaction():  # type: ignore[attr-defined]
        rows = await conn.fetch(
            f"SELECT {columns} FROM kg_events WHERE tenant_id = $1 ORDER BY tenant_id, position",
            SCOPE.tenant_id,
        )
    assert rows
    return time.perf_counter() - start


def totals(rows: list[dict[str, float]]) -> str:
    return ", ".join(f"{r['total']:.2f}" for r in rows)


async def main(events: int, runs: int) -> None:
    url = fresh_database()
    app = await create_pool(url, app_role=True, max_size=4)
    system = await create_pool(url, app_role=False, max_size=4)
    settings = Settings(database_url=url, scope=SCOPE, project_root=Path.cwd())
    rt = Runtime(settings, url, app, system, HashingEmbedder())
    print(f"# {machine()}")
    print(f"load {events:,} events (append + project): {await load(rt, events):.1f} s")
    sizes = await system.fetch(
        "SELECT relname, pg_size_pretty(pg_total_relation_size(oid)) AS size FROM pg_class "
        "WHERE relname IN ('kg_events', 'kg_event_content', 'kg_nodes', 'kg_passages', "
        "'embedding_cache')"
    )
    print("sizes: " + ", ".join(f"{r['relname']} {r['size']}" for r in sizes))
    results: dict[str, list[dict[str, float]]] = {}
    planted = 0  # every plant gets a token of its own
    for _run in range(runs):
        for vacuum in ("full", "plain"):
            for selector in ("pattern", "node", "source"):
                planted += 1
                token = await plant(rt, planted, events)
                value = token
                if selector != "pattern":
                    hit = await system.fetchrow(
                        "SELECT payload->>'node_id' AS node, metadata->>'source' AS source "
                        "FROM kg_events WHERE tenant_id = $1 AND event_type = 'NodeAsserted' "
                        "ORDER BY position DESC LIMIT 1",
                        SCOPE.tenant_id,
                    )
                    value = hit["node"] if selector == "node" else hit["source"].split("@")[0]
                result = await erase(
                    rt,
                    Selection(selector, value),  # type: ignore[arg-type]
                    reason="bench",
                    authority="bench",
                    vacuum=vacuum,  # type: ignore[arg-type]
                )
                key = f"{selector}, vacuum {vacuum}"
                results.setdefault(key, []).append(
                    result.seconds | {"events": float(len(result.plan.events))}
                )
                print(key, {k: round(v, 3) for k, v in result.seconds.items()}, flush=True)
    print()
    print(
        f"| erasure at {events:,} events | events erased | plan | append + delete | re-derive | "
        "cache | vacuum | total (median) | runs, total s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for key, rows in results.items():

        def med(name: str, rows: list[dict[str, float]] = rows) -> float:
            return median([r[name] for r in rows])

        print(
            f"| {key} | {med('events'):.0f} | {med('plan'):.2f} | {med('append_and_delete'):.2f} "
            f"| {med('rederive'):.2f} | {med('cache'):.3f} | {med('vacuum'):.2f} | "
            f"{med('total'):.2f} | {totals(rows)} |"
        )
    with_c: list[float] = []
    without: list[float] = []
    for _ in range(max(3, runs)):
        without.append(await read_all(system, False))
        with_c.append(await read_all(system, True))
    print()
    print(
        f"read the whole log ({events:,}+ events, one fetch): without content subquery "
        f"{median(without):.2f} s, with {median(with_c):.2f} s "
        f"({100 * (median(with_c) - median(without)) / median(without):+.0f}%); runs "
        f"{[round(x, 2) for x in without]} / {[round(x, 2) for x in with_c]}"
    )
    print()
    print(await append_ab(EventStore(app), runs))
    await app.close()
    await system.close()


async def append_ab(store: EventStore, runs: int) -> str:
    """Append throughput with the content kept beside the log vs. inside the payload (as
    before migration 0014), alternated run by run, bench_event_store's workload."""
    from bench_event_store import append_rate

    cases = [
        ("1 event", 1, 1_000),
        ("10", 10, 5_000),
        ("100", 100, 10_000),
        ("1,000", 1000, 20_000),
    ]
    lines = [
        "| append batch (1 writer) | content in payload, events/s | content beside, events/s "
        "| change |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, size, total in cases:
        inside: list[float] = []
        beside: list[float] = []
        for _ in range(runs):
            NodeAsserted.erasable_fields = ()
            inside.append(await append_rate(store, 1, size, total))
            NodeAsserted.erasable_fields = ("content",)
            beside.append(await append_rate(store, 1, size, total))
        a, b = median(inside), median(beside)
        lines.append(f"| {name} | {a:,.0f} | {b:,.0f} | {100 * (b - a) / a:+.0f}% |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.events, args.runs))
