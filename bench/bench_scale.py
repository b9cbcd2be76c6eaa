"""A tenant's log of about a million events on one machine: load, read-all, projection
catch-up and rebuild, as-of replay; memory and disk.

The log is loaded by COPY (binary, ``copy_records_to_table``) with real per-tenant positions,
chain hashes and, afterwards, the Merkle tree built by ``kg_merkle_rebuild``: exactly what the
append function would have written, at a fraction of its time, so the reads measured here are
of a genuine log (``kg audit verify`` would pass). The graph is ``bench/synthetic.py``'s
(typed nodes with prose, ``--edges-per-node`` edges each), generated in chunks so the
script's memory does not grow with the log.

After the catch-up, with the graph projected and indexed, it measures what an agent waits
for: context builds (anchor, semantic) and hybrid search, unfiltered and filtered by node type
(``hnsw.iterative_scan`` on, as ``kg/search.py`` sets it), and the recall@10 of the filtered and
unfiltered vector search against an exact search (the same query with index scans off).

Run: python bench/bench_scale.py [--nodes 200000] [--edges-per-node 4] [--runs 3]
                                 [--replays 1] [--rebuild] [--queries 100]
                                 [--build-memory 4GB]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import asyncpg
from common import fresh_database, machine, median, percentile
from synthetic import EDGE_TYPES, TYPES, VOCAB, WORDS, node_id, sentence

from kg.audit.replay import create_replay_schema, drop_replay_schema, replay
from kg.config import Scope
from kg.context.service import build_in_snapshot, parse_request
from kg.db.connect import create_pool
from kg.db.tenancy import tenant_transaction
from kg.db.urls import asyncpg_url
from kg.embeddings import HashingEmbedder
from kg.embeddings.cache import query_vector
from kg.events import EdgeAsserted, EventStore, NodeAsserted
from kg.events.base import DomainEvent
from kg.events.content import split_erasable
from kg.events.hashing import GENESIS_HASH, EventCanonicaliser, canonical_json, chain_hash
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.search import _VEC_ONLY, search, search_in_transaction

TENANT, PROJECT = "scale", "p"
RELATIONS = ("kg_events", "kg_event_content", "kg_nodes", "kg_edges", "kg_passages",
             "kg_merkle_nodes", "embedding_cache")  # fmt: skip
STREAM_BATCH = 2000  # events per stream, as bench/synthetic.append_all writes them
COLUMNS = [
    "position", "event_id", "tenant_id", "project_id", "stream_id", "stream_version",
    "event_type", "schema_version", "payload", "metadata", "recorded_at", "idempotency_key",
    "prev_hash", "hash",
]  # fmt: skip


def graph(n_nodes: int, edges_per_node: int, seed: int = 7) -> Iterator[DomainEvent]:
    """``synthetic.graph_events``, lazily."""
    rng = random.Random(seed)
    for i in range(n_nodes):
        kind = TYPES[i % len(TYPES)]
        yield NodeAsserted(
            node_id=node_id(i),
            node_type=kind,
            name=f"{kind} {i}: {sentence(rng, 5, VOCAB)}",
            content=sentence(rng, 18, VOCAB) + " " + sentence(rng, 18, VOCAB),
            labels=("sensitive",) if i % 50 == 0 else (),
        )
    for i in range(n_nodes):
        for k in range(edges_per_node):
            j = (i + rng.randint(1, 50)) % n_nodes if k % 3 else rng.randrange(n_nodes)
            if j != i:
                yield EdgeAsserted(
                    edge_type=EDGE_TYPES[(i + k) % len(EDGE_TYPES)],
                    from_node=node_id(i),
                    to_node=node_id(j),
                    weight=round(rng.uniform(0.2, 1.0), 2),
                )


async def load(url: str, system: object, n_nodes: int, edges_per_node: int) -> tuple[int, float]:
    """COPY the log; returns its length and the seconds it took (hashing included)."""
    recorded = datetime.now(UTC)
    canonicalise = EventCanonicaliser(
        tenant_id=TENANT, project_id=PROJECT, recorded_at=recorded, idempotency_key=None
    )
    meta = canonical_json({"actor": "bench"})
    prev, position, rows = GENESIS_HASH, 0, []
    bodies: list[tuple[str, int, str]] = []  # erasable content, beside the log (migration 0014)
    started = time.perf_counter()

    # A connection of its own whose jsonb codec writes the binary format COPY needs.
    copier = await asyncpg.connect(asyncpg_url(url))
    await copier.set_type_codec(
        "jsonb",
        schema="pg_catalog",
        encoder=lambda text: b"\x01" + text.encode(),
        decoder=lambda data: data[1:].decode(),
        format="binary",
    )

    async def flush() -> None:
        await copier.copy_records_to_table("kg_events", records=rows, columns=COLUMNS)
        await copier.copy_records_to_table(
            "kg_event_content", records=bodies, columns=["tenant_id", "position", "body"]
        )
        rows.clear()
        bodies.clear()

    for event in graph(n_nodes, edges_per_node):
        position += 1
        stream, version = (
            f"synthetic:{(position - 1) // STREAM_BATCH}",
            (position - 1) % STREAM_BATCH + 1,
        )
        event_id = str(uuid.uuid4())
        # As the append path stores it: free text apart, its salted digest in the payload.
        stored, body = split_erasable(event.to_payload(), event.erasable_fields)
        payload = canonical_json(stored)
        if body is not None:
            bodies.append((TENANT, position, body))
        digest = chain_hash(
            prev,
            canonicalise(
                position=position, event_id=event_id, stream_id=stream, stream_version=version,
                event_type=event.event_type, schema_version=event.schema_version,
                payload_json=payload, metadata_json=meta,
            ),
        )  # fmt: skip
        rows.append(
            (position, uuid.UUID(event_id), TENANT, PROJECT, stream, version, event.event_type,
             event.schema_version, payload, meta, recorded, None, prev, digest)
        )  # fmt: skip
        prev = digest
        if len(rows) == 50_000:
            await flush()
    if rows:
        await flush()
    await copier.close()
    await system.execute(  # type: ignore[attr-defined]
        "INSERT INTO kg_chain_heads (tenant_id, position, hash) VALUES ($1, $2, $3)",
        TENANT,
        position,
        prev,
    )
    await system.execute("SELECT kg_merkle_rebuild($1)", TENANT)  # type: ignore[attr-defined]
    await system.execute("VACUUM ANALYZE kg_events, kg_event_content")  # type: ignore[attr-defined]
    return position, time.perf_counter() - started


async def read_all(store: EventStore, chunk: int = 5000, *, calls: bool = False) -> float:
    """Events per second of a read of the whole log in chunks (``EventStore.read_chunks``,
    which asks for the next chunk while the current one is decoded); ``calls``: as a loop of
    ``read_all`` calls instead (each waits for its query)."""
    count = 0
    started = time.perf_counter()
    if calls:
        after = 0
        while events := await store.read_all(after, limit=chunk, tenant_id=TENANT):
            count += len(events)
            after = events[-1].position
    else:
        async for events in store.read_chunks(chunk=chunk, tenant_id=TENANT):
            count += len(events)
    return count / (time.perf_counter() - started)


async def latency(url: str, n_nodes: int, queries: int) -> list[tuple[str, float, float]]:
    """p50 and p95 (ms) of context builds and searches on the projected graph, and recall@10
    of vector search against exact search (as p50 = mean recall, p95 = worst decile)."""
    scope, embedder = Scope(TENANT, PROJECT), HashingEmbedder()
    app = await create_pool(url, app_role=True, max_size=4)
    rng = random.Random(18)
    anchors = [node_id(i) for i in (rng.randrange(n_nodes) for _ in range(queries)) if i % 50]
    tasks = [" ".join(rng.sample(WORDS, 2) + VOCAB.sample(rng, 2)) for _ in range(queries)]
    out: list[tuple[str, float, float]] = []

    async def timed(name: str, calls: list[Callable[[], Awaitable[object]]]) -> None:
        for call in calls[:5]:  # warm-up
            await call()
        times = []
        for call in calls:
            started = time.perf_counter()
            await call()
            times.append((time.perf_counter() - started) * 1000)
        out.append((name, percentile(times, 50), percentile(times, 95)))
        print(out[-1], flush=True)

    def build(request: object) -> Callable[[], Awaitable[object]]:
        return lambda: build_in_snapshot(app, scope, request, embedder)  # type: ignore[arg-type]

    def find(
        text: str, types: list[str] | None, mode: str = "hybrid"
    ) -> Callable[[], Awaitable[object]]:
        return lambda: search(app, scope, text, mode=mode, node_types=types, embedder=embedder)

    await timed("context build, anchor, ms", [build(parse_request(anchors=[a])) for a in anchors])
    await timed("context build, semantic (hashing embedder), ms",
                [build(parse_request(mode="semantic", task=t)) for t in tasks])  # fmt: skip
    await timed("hybrid search, limit 10, ms", [find(t, None) for t in tasks])
    await timed(f"hybrid search filtered to one node type (1/{len(TYPES)}), ms",
                [find(t, [TYPES[k % len(TYPES)]]) for k, t in enumerate(tasks)])  # fmt: skip
    one_type = ["Decision"]  # an eighth of the nodes
    await timed("vector search filtered to one node type, ms",
                [find(t, one_type, "semantic") for t in tasks])  # fmt: skip

    async def recall(types: list[str] | None) -> tuple[list[float], list[float]]:
        """Per query: the share of the exact top 10 found, and the same counting a hit whose
        similarity ties the exact 10th's (the hashing embedder's vectors tie often: which of
        two equally similar nodes comes 10th is arbitrary, not a miss)."""
        strict, tied = [], []
        for text in tasks:
            approx = await search(app, scope, text, mode="semantic", node_types=types,
                                  embedder=embedder)  # fmt: skip
            vector = await query_vector(embedder, text)
            async with tenant_transaction(app, TENANT) as conn:
                await conn.execute("SET LOCAL enable_indexscan = off")
                await conn.execute("SET LOCAL enable_bitmapscan = off")
                exact = await search_in_transaction(
                    conn, scope, text, "semantic", types, 10, vector, 40
                )
            if not exact:
                continue
            truth = {h.node_id for h in exact}
            strict.append(len(truth & {h.node_id for h in approx.hits}) / len(truth))
            floor = min(h.similarity or 0.0 for h in exact) - 1e-6
            good = sum(1 for h in approx.hits if (h.similarity or 0.0) >= floor)
            tied.append(min(good, len(truth)) / len(truth))
        return strict, tied

    def summary(values: list[float]) -> tuple[float, float]:
        values = sorted(values)
        return sum(values) / len(values), values[len(values) // 10]

    for name, types in (("unfiltered", None), ("filtered to one node type", one_type)):
        async with tenant_transaction(app, TENANT) as conn:  # which plan the search gets
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            plan = await conn.fetchval(
                "EXPLAIN (FORMAT JSON) " + _VEC_ONLY, TENANT, PROJECT, types,
                await query_vector(embedder, tasks[0]), 40, 10,
            )  # fmt: skip
        print(f"vector search {name}: HNSW index used: {'kg_nodes_embedding' in plan}")
        strict, tied = await recall(types)
        out.append((f"recall@10 of vector search {name} vs exact (mean, 10th percentile)",
                    *summary(strict)))  # fmt: skip
        out.append(("the same, ties with the exact 10th counted as found", *summary(tied)))
        print(out[-2:], flush=True)
    await app.close()
    return out


async def timed_lanes(runner: ProjectionRunner) -> dict[str, float]:
    """When each lane of the next rebuild finished its replay and its index builds (seconds
    after this call, filled in as the rebuild runs): ``nodes replayed`` (kg_nodes' lane is done
    replaying), ``nodes indexes but HNSW`` (its full-text, labels and B-tree indexes built),
    ``HNSW built``, and ``other lanes done`` (kg_edges and the rest, their indexes included).
    The HNSW index is built on its own, after the others, as ``finish_rebuild`` does anyway."""
    import kg.projections.nodes as nodes_module

    marks: dict[str, float] = {}
    started = time.perf_counter()
    bulk = nodes_module._ALL_BULK_INDEXES

    def mark(name: str) -> None:  # the first time only: the runner finishes again at the end
        marks.setdefault(name, time.perf_counter() - started)

    for projection in runner.projections:
        finish = projection.finish_rebuild
        if projection.name == "kg_nodes":

            async def nodes_finish(conn: asyncpg.Connection, finish=finish) -> None:  # type: ignore[no-untyped-def]
                mark("nodes replayed")
                hnsw = bulk.pop("kg_nodes_embedding")
                try:
                    await finish(conn)
                finally:
                    bulk["kg_nodes_embedding"] = hnsw
                mark("nodes indexes but HNSW")
                await finish(conn)
                mark("HNSW built")

            projection.finish_rebuild = nodes_finish  # type: ignore[method-assign]
        else:

            async def other_finish(  # type: ignore[no-untyped-def]
                conn: asyncpg.Connection, finish=finish, name=projection.name
            ) -> None:
                await finish(conn)
                if name == "kg_edges":  # the other lane's index builds (the rest build none)
                    mark("other lanes done")

            projection.finish_rebuild = other_finish  # type: ignore[method-assign]
    return marks


def server_memory(url: str) -> float:
    """Proportional set size (MiB) of the embedded server's processes (its shared buffers
    counted once), or 0 when the server is not local."""
    host = dict(part.split("=", 1) for part in url.split("?", 1)[-1].split("&")).get("host", "")
    pid_file = Path(host) / "postmaster.pid"
    if not pid_file.exists():
        return 0.0
    root = int(pid_file.read_text().split()[0])
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if int(proc.name) != root and ppid != root:
                continue
            for line in (proc / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1024


async def sizes(system: object) -> list[tuple[str, int]]:
    rows = await system.fetch(  # type: ignore[attr-defined]
        "SELECT relname, pg_total_relation_size(oid) AS bytes FROM pg_class "
        "WHERE relname = ANY($1) ORDER BY 1",
        list(RELATIONS),
    )
    total = await system.fetchval("SELECT pg_database_size(current_database())")  # type: ignore[attr-defined]
    return [(r["relname"], r["bytes"]) for r in rows] + [("database", total)]


async def main(
    n_nodes: int,
    edges_per_node: int,
    runs: int,
    replays: int,
    rebuild: bool,
    queries: int,
    build_memory: str | None,
) -> None:
    url = fresh_database()
    system = await create_pool(url, app_role=False, max_size=4)
    if build_memory:
        # An operator's setting for a large graph: the HNSW build is several times faster
        # when the whole graph fits in maintenance_work_mem (a million 384-dimension vectors
        # are ~1.5 GB, beyond the embedded default's 1 GB ceiling).
        assert build_memory[:-2].isdigit() and build_memory[-2:] in ("MB", "GB"), build_memory
        database = await system.fetchval("SELECT current_database()")
        await system.execute(
            f"ALTER DATABASE \"{database}\" SET maintenance_work_mem = '{build_memory}'"
        )
        await system.expire_connections()
    n, load_s = await load(url, system, n_nodes, edges_per_node)
    print(f"loaded {n:,} events in {load_s:.0f} s ({n / load_s:,.0f} events/s)", flush=True)
    results: list[tuple[str, float, list[float]]] = []

    # Alternately, `runs` times each: chunks read ahead, and a loop of read_all calls.
    loops: list[float] = []
    reads: list[float] = []
    for _ in range(runs):
        loops.append(await read_all(EventStore(system), calls=True))
        reads.append(await read_all(EventStore(system)))
    results.append((f"read-all of the tenant's {n:,} events, chunks of 5,000 (read_chunks), "
                    "events/s", median(reads), reads))  # fmt: skip
    results.append(("the same as a loop of read_all calls, events/s", median(loops), loops))
    print(results[-2:], flush=True)

    runner = ProjectionRunner(system, default_projections(), ProjectionContext(HashingEmbedder()))
    started = time.perf_counter()
    await runner.catch_up()
    first = n / (time.perf_counter() - started)
    results.append(("projection catch-up from empty (embeddings computed, bulk indexes), "
                    "events/s", first, [first]))  # fmt: skip
    print(results[-1], flush=True)
    memory_after_catch_up = server_memory(url)
    latencies = await latency(url, n_nodes, queries) if queries else []

    replay_s: list[float] = []
    for k in range(replays):
        schema = f"bench_asof_{k}"
        await create_replay_schema(system, schema)
        started = time.perf_counter()
        applied = await replay(url, schema, TENANT, n, HashingEmbedder())
        replay_s.append(time.perf_counter() - started)
        assert applied == n, applied
        await drop_replay_schema(system, schema)
    if replay_s:
        results.append((f"as-of replay of {n:,} events into a schema (no HNSW), seconds",
                        median(replay_s), replay_s))  # fmt: skip
        print(results[-1], flush=True)

    if rebuild:
        marks = await timed_lanes(runner)
        started = time.perf_counter()
        await runner.rebuild()
        seconds = time.perf_counter() - started
        hnsw = marks["HNSW built"] - marks["nodes indexes but HNSW"]
        # Everything but the HNSW build: both lanes replayed and every other index built.
        rest = max(marks["nodes indexes but HNSW"], marks["other lanes done"])
        results.append(("projection rebuild (cached embeddings, indexes built once), events/s",
                        n / seconds, [n / seconds]))  # fmt: skip
        results.append(("the same rebuild, seconds; building kg_nodes' HNSW index in it",
                        seconds, [hnsw]))  # fmt: skip
        results.append(("the rebuild up to the HNSW build (both lanes replayed, every other "
                        "index built), seconds; events/s", rest, [n / rest]))  # fmt: skip
        print(results[-3:], {k: round(v, 1) for k, v in marks.items()}, flush=True)

    disk = await sizes(system)
    await system.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nMachine: {machine()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; median of {runs} runs")
    print(f"Graph: {n_nodes:,} nodes, {edges_per_node} edges per node, {n:,} events; "
          f"load {load_s:.0f} s\n")  # fmt: skip
    print("| case | median | runs |")
    print("| --- | ---: | --- |")
    for name, value, values in results:
        print(f"| {name} | {value:,.1f} | {', '.join(f'{v:,.1f}' for v in values)} |")
    if latencies:
        print("\n| query | p50 | p95 |")
        print("| --- | ---: | ---: |")
        for name, p50, p95 in latencies:
            print(f"| {name} | {p50:,.2f} | {p95:,.2f} |")
    print(f"\nbench process peak RSS: {rss:,.0f} MiB; server PSS after the catch-up: "
          f"{memory_after_catch_up:,.0f} MiB, at the end: {server_memory(url):,.0f} MiB")  # fmt: skip
    print("| relation | size (MiB) |")
    print("| --- | ---: |")
    for name, size in disk:
        print(f"| {name} | {size / 2**20:,.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges-per-node", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3, help="read-all runs")
    parser.add_argument("--replays", type=int, default=1, help="as-of replay runs")
    parser.add_argument("--rebuild", action="store_true", help="also time a rebuild")
    parser.add_argument("--queries", type=int, default=100, help="builds and searches per case")
    parser.add_argument("--build-memory", help="maintenance_work_mem for the database, e.g. 4GB")
    a = parser.parse_args()
    asyncio.run(
        main(a.nodes, a.edges_per_node, a.runs, a.replays, a.rebuild, a.queries, a.build_memory)
    )
