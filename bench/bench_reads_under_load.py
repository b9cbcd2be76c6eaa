"""Reads under write load (issue 34 item 5): 8 writers appending, 2 MCP readers, side by side.

For each checkout (this tree by default; e.g. ``git archive`` of main for the before figure):
a fresh database seeded with a graph (``--nodes`` Component nodes with words and ~2 edges each,
projected), then two ``kg mcp`` servers of that checkout, each spawned by the SDK's stdio
client as an agent's host would, and 8 writers in a process of their own (that checkout's
``EventStore.append``, each a batch of ``--batch`` new nodes and edges every
``8 * batch / rate`` seconds: ``--rate`` events/s in all) for ``--seconds``. Each reader
alternates ``query_knowledge_graph`` (hybrid, the hashing embedder) and ``build_context_graph``
(anchor, a random seeded node) as fast as it can; every call is timed through the client.
Reported: p50 / p95 / max per call kind, errors (tool errors and failed appends), the events
appended per second, and (where the checkout says it) the largest ``behind`` a search reported.

Run: python bench/bench_reads_under_load.py [--checkouts . /tmp/base] [--runs 1]
     [--seconds 60] [--rate 400] [--nodes 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WORDS = [
    "ledger",
    "invoice",
    "refund",
    "payment",
    "charge",
    "customer",
    "account",
    "balance",
    "settlement",
    "dispute",
    "audit",
    "tax",
    "currency",
    "webhook",
    "retry",
    "queue",
    "cache",
    "index",
    "shard",
    "replica",
    "backup",
    "restore",
    "deploy",
    "rollout",
    "feature",
    "flag",
    "metric",
    "alert",
    "latency",
    "budget",
    "quota",
    "tenant",
    "project",
    "policy",
    "review",
    "decision",
]
WRITERS = 8


def _env(checkout: Path, url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "KG_DATABASE_URL": url,
        "KG_TENANT": "bench",
        "KG_PROJECT": "load",
        "KG_EMBEDDER": "hashing",
        "KG_RESIDENT": "0",
        "HF_HUB_OFFLINE": "1",
    }


def _node(rng: random.Random, node_id: str) -> Any:
    from kg.events import NodeAsserted

    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
    return NodeAsserted(node_id=node_id, node_type="Component", name=node_id, content=text)


def _edge(a: str, b: str) -> Any:
    from kg.events import EdgeAsserted

    return EdgeAsserted(edge_type="USES", from_node=a, to_node=b)


async def prepare(url: str, nodes: int) -> None:
    """Migrate (this checkout's schema) and seed the graph, projected."""
    from kg.config import Scope
    from kg.db import migrate
    from kg.runtime import open_runtime

    migrate.upgrade(url)
    rng = random.Random(3)
    async with open_runtime() as rt:
        scope = Scope("bench", "load")
        for start in range(0, nodes, 500):
            ids = [f"component:n{i}" for i in range(start, min(nodes, start + 500))]
            events = [_node(rng, i) for i in ids]
            events += [_edge(i, f"component:n{rng.randrange(nodes)}") for i in ids for _ in (0, 1)]
            await rt.store.append(scope, f"seed-{start}", events)
        await rt.catch_up()


async def write(seconds: float, rate: float, batch: int) -> dict[str, Any]:
    """8 writers appending new nodes with edges to the seed for ``seconds``."""
    from kg.config import Scope
    from kg.runtime import open_runtime

    scope = Scope("bench", "load")
    appended, errors = [0], [0]
    period = WRITERS * batch / rate
    async with open_runtime(max_size=WRITERS + 2) as rt:
        deadline = time.perf_counter() + seconds

        async def writer(w: int) -> None:
            rng = random.Random(w)
            n = 0
            following = time.perf_counter()
            while time.perf_counter() < deadline:
                ids = [f"component:w{w}-{n + i}" for i in range(batch // 2)]
                n += len(ids)
                events = [_node(rng, i) for i in ids]
                events += [_edge(i, f"component:n{rng.randrange(1000)}") for i in ids]
                try:
                    await rt.store.append(scope, f"writer-{w}-{n}", events)
                    appended[0] += len(events)
                except Exception:  # counted: the figure is errors, not a crash
                    errors[0] += 1
                following += period
                await asyncio.sleep(max(0.0, following - time.perf_counter()))

        start = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        elapsed = time.perf_counter() - start
    return {"appended": appended[0], "append_errors": errors[0], "seconds": elapsed}


async def read(
    checkout: Path, url: str, options: argparse.Namespace, errlog: Any
) -> dict[str, Any]:
    """Two readers over stdio while the writers' process runs; the writers' figures too."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp_types import Implementation

    env = _env(checkout, url)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kg.cli", "mcp"], env=env, cwd=str(checkout)
    )
    timings: dict[str, list[float]] = {"search": [], "anchor build": []}
    errors: list[str] = []
    behind: list[int] = []
    stop = asyncio.Event()
    ready = [asyncio.Event(), asyncio.Event()]

    async def reader(r: int) -> None:
        rng = random.Random(100 + r)
        async with (
            stdio_client(params, errlog=errlog) as (rd, wr),
            ClientSession(rd, wr, client_info=Implementation(name=f"r{r}", version="1")) as s,
        ):
            await s.initialize()
            for i in range(5):  # pools and plans
                await s.call_tool("query_knowledge_graph", {"text": rng.choice(WORDS)})
                await s.call_tool(
                    "build_context_graph", {"anchors": [f"component:n{i}"], "mode": "anchor"}
                )
            ready[r].set()
            i = 0
            while not stop.is_set():
                if i % 2 == 0:
                    kind, tool = "search", "query_knowledge_graph"
                    args: dict[str, Any] = {"text": " ".join(rng.sample(WORDS, 2))}
                else:
                    kind, tool = "anchor build", "build_context_graph"
                    anchor = f"component:n{rng.randrange(options.nodes)}"
                    args = {"anchors": [anchor], "mode": "anchor"}
                t0 = time.perf_counter()
                result = await s.call_tool(tool, args)
                timings[kind].append((time.perf_counter() - t0) * 1000)
                if result.is_error:
                    errors.append(str(result.content)[:300])
                elif kind == "search" and result.structured_content is not None:
                    behind.append(int(result.structured_content.get("behind", 0)))
                i += 1

    readers = [asyncio.create_task(reader(r)) for r in range(2)]
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in ready)), timeout=300)
    writers = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--write", str(options.seconds), str(options.rate),
        str(options.batch), env=env, cwd=str(checkout), stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await writers.communicate()
    stop.set()
    await asyncio.gather(*readers)
    wrote = json.loads(out.decode().strip().splitlines()[-1])
    row: dict[str, Any] = {
        "events_per_s": wrote["appended"] / wrote["seconds"],
        "append_errors": wrote["append_errors"],
        "read_errors": len(errors),
        "max_behind": max(behind, default=0),
    }
    for kind, values in timings.items():
        ordered = sorted(values)
        row[f"{kind} calls"] = len(values)
        row[f"{kind} p50"] = ordered[len(ordered) // 2]
        row[f"{kind} p95"] = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        row[f"{kind} max"] = ordered[-1]
    if errors:
        row["first_error"] = errors[0]
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkouts", nargs="+", type=Path, default=[HERE.parent])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rate", type=float, default=400, help="events/s, all writers")
    parser.add_argument("--batch", type=int, default=10, help="events per append")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--prepare", nargs=2, metavar=("URL", "NODES"), help=argparse.SUPPRESS)
    parser.add_argument("--write", nargs=3, metavar=("S", "RATE", "BATCH"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.prepare:
        asyncio.run(prepare(options.prepare[0], int(options.prepare[1])))
        return
    if options.write:
        seconds, rate, batch = options.write
        print(json.dumps(asyncio.run(write(float(seconds), float(rate), int(batch)))))
        return

    import psycopg
    from common import _server, drop_database, machine

    from kg.db.urls import asyncpg_url, with_database

    server = _server(keep=False)
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine()}; load {os.getloadavg()}")
    print(
        f"{options.nodes} seeded nodes; {WRITERS} writers, {options.rate:g} events/s in batches "
        f"of {options.batch}, {options.seconds:g} s; 2 readers (search, anchor build)"
    )
    options.checkouts = [c.resolve() for c in options.checkouts]
    results: dict[Path, list[dict[str, Any]]] = {c: [] for c in options.checkouts}
    for run in range(options.runs):
        for checkout in options.checkouts:
            name = f"kg_bench_load_{os.getpid()}_{run}_{len(results[checkout])}"
            with psycopg.connect(asyncpg_url(server), autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
            url = with_database(server, name)
            try:
                subprocess.run(
                    [sys.executable, __file__, "--prepare", url, str(options.nodes)],
                    env=_env(checkout, url), cwd=checkout, check=True,
                )  # fmt: skip
                with open(os.environ.get("KG_BENCH_ERRLOG", os.devnull), "a") as errlog:
                    row = asyncio.run(read(checkout, url, options, errlog))
            finally:
                drop_database(url)
            results[checkout].append(row)
            print(f"run {run + 1} {checkout}: {json.dumps(row)}", flush=True)
    print(f"load at the end {os.getloadavg()}\n")
    keys = ["search p50", "search p95", "anchor build p50", "anchor build p95",
            "read_errors", "append_errors", "events_per_s", "max_behind"]  # fmt: skip
    print("| checkout | " + " | ".join(keys) + " |")
    print("| --- |" + " ---: |" * len(keys))
    for checkout, rows in results.items():
        cells = [f"{statistics.median(float(r[k]) for r in rows):.1f}" for k in keys]
        print(f"| {checkout} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
