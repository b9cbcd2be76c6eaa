"""Backfill rate of a generated legacy database, projection catch-up after it, an idempotent
rerun, and a replay of the whole log into a fresh schema (what `kg audit replay` does).

Run: python bench/bench_backfill.py [--rows 100000] [--chunk-size 5000]
The hashing embedder is used (the catch-up measures projection work, not a model).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_database, machine

from backfill.generate import generate
from backfill.importer import BackfillOptions, run_backfill
from kg.audit.replay import create_replay_schema, drop_replay_schema, replay
from kg.config import Scope
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder
from kg.events import EventStore
from kg.projections import ProjectionContext, ProjectionRunner, default_projections

SCOPE = Scope("bench", "legacy")


async def main(rows: int, chunk_size: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="kg-bench-legacy-"))
    start = time.perf_counter()
    legacy = generate(folder, rows=rows, seed=1)
    generated = time.perf_counter() - start
    url = fresh_database()
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    store = EventStore(app)
    embedder = HashingEmbedder()

    start = time.perf_counter()
    report = await run_backfill(store, SCOPE, legacy.paths, BackfillOptions(chunk_size=chunk_size))
    backfill = time.perf_counter() - start
    events = report.total("events")

    runner = ProjectionRunner(system, default_projections(), ProjectionContext(embedder))
    start = time.perf_counter()
    applied = await runner.catch_up()
    catch_up = time.perf_counter() - start

    start = time.perf_counter()
    again = await run_backfill(store, SCOPE, legacy.paths)
    rerun = time.perf_counter() - start
    assert again.total("imported") == 0

    head = await EventStore(system).last_position(tenant_id=SCOPE.tenant_id)
    await create_replay_schema(system, "bench_replay")
    start = time.perf_counter()
    replayed = await replay(url, "bench_replay", SCOPE.tenant_id, head, embedder)
    replay_time = time.perf_counter() - start
    await drop_replay_schema(system, "bench_replay")
    await app.close()
    await system.close()

    total = legacy.total_rows
    print(f"Machine: {machine()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; one run\n")
    print(
        f"Legacy database: {total:,} rows in 6 tables ({len(report.rejected):,} rejected, "
        f"{sum(t.unresolved for t in report.tables):,} of them unresolved calls), generated in "
        f"{generated:.1f} s; chunks of {chunk_size:,} rows; KG_EMBEDDER=hashing\n"
    )
    print("| step | amount | seconds | rate |")
    print("| --- | ---: | ---: | ---: |")
    print(
        f"| backfill (read, map, append) | {total:,} rows -> {events:,} events | {backfill:.1f} | {total / backfill:,.0f} rows/s |"
    )
    print(
        f"| projection catch-up after it | {applied:,} events | {catch_up:.1f} | {applied / catch_up:,.0f} events/s |"
    )
    print(
        f"| backfill + catch-up | {total:,} rows | {backfill + catch_up:.1f} | {total / (backfill + catch_up):,.0f} rows/s |"
    )
    print(
        f"| rerun (idempotent, nothing new) | {total:,} rows | {rerun:.1f} | {total / rerun:,.0f} rows/s |"
    )
    print(
        f"| replay whole log into a fresh schema | {replayed:,} events | {replay_time:.1f} | {replayed / replay_time:,.0f} events/s |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--chunk-size", type=int, default=5000)
    args = parser.parse_args()
    asyncio.run(main(args.rows, args.chunk_size))
