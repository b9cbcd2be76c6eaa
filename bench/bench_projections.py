"""Projection catch-up (embeddings computed vs cached) and hybrid search latency.

Run: python bench/bench_projections.py [--sizes 10000 100000] [--queries 200]
The graph's vectors come from the hashing embedder (HNSW cost depends on count and dimension,
not on the model); the MiniLM catch-up rate is measured on a smaller sample.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import fresh_database, machine, median, percentile
from synthetic import VOCAB, WORDS, Vocabulary, append_all, graph_events

from kg.config import Scope
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder, MiniLMEmbedder
from kg.events import EventStore
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.search import search

SCOPE = Scope("bench", "p")


async def build(n: int, edges_per_node: int, vocab: Vocabulary) -> tuple[str, dict[str, Any]]:
    url = fresh_database()
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    events = graph_events(n, edges_per_node, vocab=vocab)
    await append_all(EventStore(app), SCOPE, events)
    runner = ProjectionRunner(system, default_projections(), ProjectionContext(HashingEmbedder()))
    start = time.perf_counter()
    await runner.catch_up()
    computed = len(events) / (time.perf_counter() - start)
    cached, index_s = [], []
    for _ in range(3):
        # The whole rebuild: reset, replay (embeddings all come from the cache) and the bulk
        # build of the HNSW index, which overlaps the replay of the other projections.
        start = time.perf_counter()
        await runner.rebuild()
        cached.append(len(events) / (time.perf_counter() - start))
    nodes = next(p for p in runner.projections if p.name == "kg_nodes")
    for _ in range(3):
        # The index build alone, for reference.
        await system.execute("DROP INDEX kg_nodes_embedding")
        start = time.perf_counter()
        async with system.acquire() as conn:
            await nodes.finish_rebuild(conn)
        index_s.append(time.perf_counter() - start)
    await system.execute("VACUUM ANALYZE kg_nodes")
    await system.execute("VACUUM ANALYZE kg_edges")
    await app.close()
    await system.close()
    return url, {
        "events": len(events),
        "computed": computed,
        "cached": median(cached),
        "cached_runs": cached,
        "index_s": median(index_s),
    }


async def minilm_catch_up(n: int) -> float:
    url = fresh_database()
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    events = graph_events(n, 0)
    await append_all(EventStore(app), SCOPE, events)
    runner = ProjectionRunner(system, default_projections(), ProjectionContext(MiniLMEmbedder()))
    runner.ctx.embedder.embed(["warm up"])
    start = time.perf_counter()
    await runner.catch_up()
    rate = len(events) / (time.perf_counter() - start)
    await app.close()
    await system.close()
    return rate


async def search_latency(
    url: str, queries: int, embedder: object, mode: str = "hybrid"
) -> tuple[float, float]:
    app = await create_pool(url, app_role=True)
    rng = random.Random(3)
    # Two domain words and one word from the corpus: realistic, distinct queries.
    texts = [" ".join(rng.sample(WORDS, 2) + VOCAB.sample(rng, 1)) for _ in range(queries)]
    for t in texts[:10]:  # warm-up
        await search(app, SCOPE, t, mode=mode, embedder=embedder, limit=10)  # type: ignore[arg-type]
    times = []
    for t in texts:
        start = time.perf_counter()
        await search(app, SCOPE, t, mode=mode, embedder=embedder, limit=10)  # type: ignore[arg-type]
        times.append((time.perf_counter() - start) * 1000)
    await app.close()
    return percentile(times, 50), percentile(times, 95)


async def main(
    sizes: list[int], queries: int, edges_per_node: int, minilm_n: int, vocabulary: str
) -> None:
    print(f"Machine: {machine()}; vocabulary: {vocabulary}\n")
    print(
        "| graph | events | catch-up, embeddings computed (hashing) ev/s | rebuild, embeddings cached, incl. HNSW build ev/s (median) | rebuild runs ev/s | HNSW bulk build alone s |"
    )
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    urls = {}
    for n in sizes:
        url, r = await build(n, edges_per_node, Vocabulary(vocabulary))
        urls[n] = url
        runs = ", ".join(f"{x:,.0f}" for x in r["cached_runs"])
        print(
            f"| {n:,} nodes, {edges_per_node} edges/node | {r['events']:,.0f} | {r['computed']:,.0f} | {r['cached']:,.0f} | {runs} | {r['index_s']:.1f} |"
        )
    if minilm_n:
        rate = await minilm_catch_up(minilm_n)
        print(
            f"\nMiniLM catch-up (embeddings computed), {minilm_n:,} node events: {rate:,.0f} ev/s\n"
        )
    print("| graph | mode | query embedder | p50 ms | p95 ms |")
    print("| --- | --- | --- | ---: | ---: |")
    minilm = MiniLMEmbedder()
    minilm.embed(["warm up"])
    for n, url in urls.items():
        for mode, emb, label in (
            ("hybrid", HashingEmbedder(), "hashing"),
            ("hybrid", minilm, "MiniLM (query embedded, not cached)"),
            ("fulltext", None, "-"),
            ("semantic", HashingEmbedder(), "hashing"),
        ):
            p50, p95 = await search_latency(url, queries, emb, mode)
            print(f"| {n:,} nodes | {mode} | {label} | {p50:.1f} | {p95:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--edges-per-node", type=int, default=3)
    parser.add_argument("--minilm-nodes", type=int, default=2000)
    parser.add_argument("--vocabulary", choices=["zipf", "small"], default="zipf")
    args = parser.parse_args()
    asyncio.run(
        main(args.sizes, args.queries, args.edges_per_node, args.minilm_nodes, args.vocabulary)
    )
