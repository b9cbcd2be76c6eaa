"""Context-graph build latency per mode on synthetic graphs, against a networkx ego graph.

Run: python bench/bench_context.py [--sizes 10000 100000] [--edges-per-node 10] [--builds 200]
     [--reuse]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import networkx as nx
from common import fresh_database, kept_database, machine, mark_complete, percentile
from synthetic import VOCAB, WORDS, append_all, graph_events, node_id

from kg.config import Scope, Settings
from kg.context.service import build_context_graph, build_in_snapshot, parse_request
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder, MiniLMEmbedder, provider_from_config
from kg.events import EdgeAsserted, EventStore, PolicyDefined
from kg.events.base import DomainEvent
from kg.policies.model import PolicyRule
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.runtime import Runtime

SCOPE = Scope("bench", "p")


def policy_events(n: int) -> list[DomainEvent]:
    rule_deny = PolicyRule(effect="deny", labels=("sensitive",))
    rule_allow = PolicyRule(effect="allow_actions", actions=("read", "edit"))
    events: list[DomainEvent] = [
        PolicyDefined(policy_id="policy:no-sensitive", name="No sensitive nodes", rule=rule_deny),
        PolicyDefined(policy_id="policy:team", name="Team may edit", rule=rule_allow),
    ]
    events += [
        EdgeAsserted(edge_type="GOVERNED_BY", from_node=node_id(i), to_node="policy:team")
        for i in range(0, n, 3)
    ]
    return events


async def build(
    n: int, edges_per_node: int, reuse: bool, embedder: str = "hashing"
) -> tuple[str, list[DomainEvent]]:
    """The synthetic graph with its policies, appended and projected with ``embedder``: in a
    fresh database, or with ``reuse`` in one kept in bench/out/pg (built once)."""
    events = graph_events(n, edges_per_node) + policy_events(n)
    name = f"kg_bench_context_{n}_{edges_per_node}" + (
        "" if embedder == "hashing" else f"_{embedder}"
    )
    url, complete = kept_database(name) if reuse else (fresh_database(), False)
    if complete:
        print(f"  {n:,} nodes: reusing database {name}", file=sys.stderr)
        return url, events
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    start = time.perf_counter()
    await append_all(EventStore(app), SCOPE, events, batch=5000)
    appended = time.perf_counter() - start
    runner = ProjectionRunner(
        system,
        default_projections(),
        ProjectionContext(provider_from_config(embedder)),
        batch_size=5000,
    )
    start = time.perf_counter()
    await runner.rebuild()
    projected = time.perf_counter() - start
    await system.execute("VACUUM ANALYZE kg_nodes")
    await system.execute("VACUUM ANALYZE kg_edges")
    print(
        f"  {n:,} nodes: {len(events):,} events appended in {appended:.0f} s, "
        f"projected with {embedder} in {projected:.0f} s",
        file=sys.stderr,
    )
    await app.close()
    await system.close()
    if reuse:
        mark_complete(url, name)
    return url, events


def to_networkx(events: list[DomainEvent]) -> nx.Graph:
    graph = nx.Graph()
    for e in events:
        if isinstance(e, EdgeAsserted):
            graph.add_edge(e.from_node, e.to_node, weight=e.weight, type=e.edge_type)
    return graph


async def latencies(
    url: str, n: int, builds: int, embedder: object, minilm: object
) -> dict[str, tuple[float, float]]:
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    rng = random.Random(11)
    anchors = [node_id(rng.randrange(n)) for _ in range(builds)]
    anchors = [a for i, a in enumerate(anchors) if int(a.split(":n")[1]) % 50]  # not denied ones
    tasks = [" ".join(rng.sample(WORDS, 2) + VOCAB.sample(rng, 2)) for _ in range(builds)]
    cases = {
        "anchor": [parse_request(anchors=[a]) for a in anchors],
        "semantic (hashing query embedding)": [
            parse_request(mode="semantic", task=t) for t in tasks
        ],
        "semantic (MiniLM query embedding)": [
            parse_request(mode="semantic", task=t + " m") for t in tasks
        ],
        "policy_first (anchor)": [parse_request(mode="policy_first", anchors=[a]) for a in anchors],
    }
    results = {}
    for name, requests in cases.items():
        emb = minilm if "MiniLM" in name else embedder
        for r in requests[:5]:
            await build_in_snapshot(app, SCOPE, r, emb)  # type: ignore[arg-type]
        times = []
        for r in requests:
            start = time.perf_counter()
            await build_in_snapshot(app, SCOPE, r, emb)  # type: ignore[arg-type]
            times.append((time.perf_counter() - start) * 1000)
        results[name] = (percentile(times, 50), percentile(times, 95))
    # The whole application call: catch-up check, build, ContextGraphBuilt appended.
    rt = Runtime(Settings(url, SCOPE, Path(".")), url, app, system, embedder)  # type: ignore[arg-type]
    times = []
    for a in anchors[:100]:
        start = time.perf_counter()
        await build_context_graph(rt, parse_request(anchors=[a]))
        times.append((time.perf_counter() - start) * 1000)
    results["anchor, logged (build_context_graph)"] = (percentile(times, 50), percentile(times, 95))
    await app.close()
    await system.close()
    return results


def networkx_latency(graph: nx.Graph, n: int, builds: int) -> tuple[float, float]:
    rng = random.Random(11)
    times = []
    for _ in range(builds):
        anchor = node_id(rng.randrange(n))
        start = time.perf_counter()
        ego = nx.ego_graph(graph, anchor, radius=2)
        top = sorted(ego.nodes)[:128]
        _ = graph.subgraph(top)
        times.append((time.perf_counter() - start) * 1000)
    return percentile(times, 50), percentile(times, 95)


async def main(sizes: list[int], edges_per_node: int, builds: int, reuse: bool) -> None:
    minilm = MiniLMEmbedder()
    minilm.embed(["warm up"])
    print(f"Machine: {machine()}\n")
    print("| graph | mode | p50 ms | p95 ms |")
    print("| --- | --- | ---: | ---: |")
    for n in sizes:
        url, events = await build(n, edges_per_node, reuse)
        results = await latencies(url, n, builds, HashingEmbedder(), minilm)
        start = time.perf_counter()
        g = to_networkx(events)
        load = time.perf_counter() - start
        nx50, nx95 = networkx_latency(g, n, builds)
        label = f"{n:,} nodes, {g.number_of_edges():,} edges"
        for name, (p50, p95) in results.items():
            print(f"| {label} | {name} | {p50:.1f} | {p95:.1f} |")
        print(
            f"| {label} | networkx ego_graph radius 2 (in memory; loading took {load:.1f} s) | {nx50:.1f} | {nx95:.1f} |"
        )
        ratio = results["anchor"][0] / nx50 if nx50 else float("nan")
        print(f"| {label} | ratio anchor p50 / networkx p50 | {ratio:.2f} | |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--edges-per-node", type=int, default=10)
    parser.add_argument("--builds", type=int, default=200)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the built graphs in bench/out/pg and reuse them on the next run",
    )
    args = parser.parse_args()
    asyncio.run(main(args.sizes, args.edges_per_node, args.builds, args.reuse))
