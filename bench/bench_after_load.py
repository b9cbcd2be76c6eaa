"""The first context builds after a bulk load, with and without fresh planner statistics.

A backfill or large sync appends tens of thousands of events and catches the projections up;
until autovacuum analyses the tables, the planner has no statistics and plans the first
queries as if the tables were empty. The runner now ANALYZEs after a large catch-up
(``kg.projections.runner.ANALYZE_AFTER``). This loads the same synthetic graph twice, into two
fresh databases, once with the runner's ANALYZE and once with it switched off, and times the
first anchor builds after each load.

Run: python bench/bench_after_load.py [--nodes 20000] [--builds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import drop_database, fresh_database, machine, median, percentile
from synthetic import append_all, graph_events, node_id

from kg.config import Scope
from kg.context.service import build_in_snapshot, parse_request
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder
from kg.events import EventStore
from kg.projections import ProjectionContext, ProjectionRunner, default_projections, runner

SCOPE = Scope("bench", "p")


async def first_builds(n: int, builds: int, analyze: bool) -> list[float]:
    url = fresh_database()
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    try:
        await system.execute("ALTER TABLE kg_nodes SET (autovacuum_enabled = false)")
        await system.execute("ALTER TABLE kg_edges SET (autovacuum_enabled = false)")
        await append_all(EventStore(app), SCOPE, graph_events(n, 6), batch=5000)
        runner.ANALYZE_AFTER = 1000 if analyze else 10**12
        projections = ProjectionRunner(
            system, default_projections(), ProjectionContext(HashingEmbedder()), batch_size=5000
        )
        await projections.catch_up()
        rng = random.Random(5)
        times = []
        for _ in range(builds):
            request = parse_request(anchors=[node_id(rng.randrange(n))])
            start = time.perf_counter()
            await build_in_snapshot(app, SCOPE, request, None)
            times.append((time.perf_counter() - start) * 1000)
        return times
    finally:
        await app.close()
        await system.close()
        drop_database(url)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--builds", type=int, default=30)
    args = parser.parse_args()
    print(machine())
    print(f"\n{args.nodes:,} nodes, 6 edges each; the first {args.builds} anchor builds\n")
    print("| after the load | p50 ms | p95 ms |\n| --- | ---: | ---: |")
    for analyze in (False, True):
        times = await first_builds(args.nodes, args.builds, analyze)
        label = "catch-up ANALYZEs (now)" if analyze else "no statistics (before)"
        print(f"| {label} | {median(times):.1f} | {percentile(times, 95):.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
