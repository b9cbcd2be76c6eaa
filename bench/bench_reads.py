"""Read speed over MCP stdio at 10,000 memory entities, one or more checkouts side by side.

For each checkout (a source tree: this one by default, or e.g. ``git archive`` of an earlier
commit), in a process of its own whose ``kg`` is that checkout's: a fresh database, ``kg import
memory`` of a seeded ``memory.jsonl`` (``bench_memory.synthetic``: 10,000 entities, 15,000
relations) timed with its catch-up ("load"), then ``kg mcp --memory-compat`` spawned by the
SDK's stdio client and timed per tool call (client send -> server -> PostgreSQL -> client
parse): ``query_knowledge_graph`` in full-text mode and ``get_entity_neighbors`` one hop. Runs
alternate the checkouts, so the machine's other load falls on each alike; medians over runs.

Run: python bench/bench_reads.py [--checkouts . /tmp/base] [--runs 3] [--calls 200]
     [--entities 10000] [--relations 15000]

Each checkout migrates its own database, so checkouts with different schemas compare fine.
``--shared-db URL`` reads one loaded database instead (same schema; no load figure): the read
figures alone, in minutes.
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
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def _env(checkout: Path, url: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "KG_DATABASE_URL": url,
        "KG_TENANT": "bench",
        "KG_PROJECT": "reads",
        "KG_EMBEDDER": "hashing",
        "KG_RESIDENT": "0",
        "HF_HUB_OFFLINE": "1",
    }


async def worker(
    server: str, source: Path, observations: list[str], calls: int, errlog: Any
) -> dict[str, Any]:
    """One run of this process's kg (whatever PYTHONPATH gave): load, then the timed calls."""
    import psycopg
    from common import drop_database, percentile
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp_types import Implementation

    from kg.db import migrate
    from kg.db.urls import asyncpg_url, with_database
    from kg.memory.importer import import_memory
    from kg.runtime import open_runtime

    shared = os.environ.get("KG_BENCH_SHARED_DB")  # --shared-db: read a loaded database
    name = f"kg_bench_reads_{os.getpid()}"
    if shared:
        url = shared
    else:
        with psycopg.connect(asyncpg_url(server), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        url = with_database(server, name)
    try:
        env = _env(Path(os.environ["PYTHONPATH"]), url)
        os.environ.update(env)
        load = 0.0
        if not shared:
            migrate.upgrade(url)
            async with open_runtime() as rt:
                start = time.perf_counter()
                await import_memory(rt, source, actor="bench")
                await rt.catch_up()
                load = time.perf_counter() - start
        async with open_runtime() as rt, rt.system_pool.acquire() as conn:
            ids = [
                r[0]
                for r in await conn.fetch(
                    "SELECT DISTINCT from_node FROM kg_edges WHERE tenant_id = 'bench' "
                    "ORDER BY 1 LIMIT 2000"
                )
            ]
        rng = random.Random(5)
        texts = [" ".join(rng.choice(observations).split()[:2]) for _ in range(calls)]
        anchors = [rng.choice(ids) for _ in range(calls)]
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "kg.cli", "mcp", "--memory-compat"],
            env=env,
            cwd=env["PYTHONPATH"],  # python -m puts the working folder first on the path
        )
        timings: dict[str, list[float]] = {"search": [], "neighbours": []}
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=Implementation(name="b", version="1")) as s,
        ):
            await s.initialize()
            for i in range(10):  # pools and query plans
                await s.call_tool("query_knowledge_graph", {"text": texts[i], "mode": "fulltext"})
                await s.call_tool("get_entity_neighbors", {"node_id": anchors[i]})
            for series, tool, args in (
                ("search", "query_knowledge_graph", [{"text": t, "mode": "fulltext"} for t in texts]),
                ("neighbours", "get_entity_neighbors", [{"node_id": a} for a in anchors]),
            ):  # fmt: skip
                for arguments in args:
                    t0 = time.perf_counter()
                    result = await s.call_tool(tool, arguments)
                    timings[series].append((time.perf_counter() - t0) * 1000)
                    if result.is_error:
                        raise RuntimeError(f"{tool} failed: {result.content}")
        return {
            "load_s": load,
            **{f"{k}_p50": percentile(v, 50) for k, v in timings.items()},
            **{f"{k}_p95": percentile(v, 95) for k, v in timings.items()},
        }
    finally:
        if not shared:
            drop_database(url)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkouts", nargs="+", type=Path, default=[HERE.parent])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--relations", type=int, default=15_000)
    parser.add_argument("--worker", nargs=3, metavar=("SERVER", "SOURCE", "CALLS"))
    parser.add_argument(
        "--shared-db",
        help="read this loaded database (tenant bench, project reads) instead of loading one per "
        "run: the checkouts must share its schema; load_s is then 0",
    )
    options = parser.parse_args()
    if options.worker:
        server, source, calls = options.worker
        lines = [json.loads(line) for line in Path(source).read_text().splitlines()]
        observations = [o for x in lines if x["type"] == "entity" for o in x["observations"]]
        with open(os.environ.get("KG_BENCH_ERRLOG", os.devnull), "a") as errlog:
            row = asyncio.run(worker(server, Path(source), observations, int(calls), errlog))
        print(json.dumps(row))
        return

    from bench_memory import synthetic
    from common import _server, machine

    server = _server(keep=False)
    work = Path(tempfile.mkdtemp(prefix="kg-bench-reads-"))
    source = work / "memory.jsonl"
    lines = synthetic(options.entities, options.relations)
    source.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine()}; load {os.getloadavg()}")
    print(f"{options.entities} entities, {options.relations} relations, {options.calls} calls")
    results: dict[Path, list[dict[str, Any]]] = {c: [] for c in options.checkouts}
    for run in range(options.runs):
        for checkout in options.checkouts:
            env = _env(checkout.resolve(), server)
            if options.shared_db:
                env["KG_BENCH_SHARED_DB"] = options.shared_db
            out = subprocess.run(
                [sys.executable, __file__, "--worker", server, str(source), str(options.calls)],
                env=env,
                cwd=checkout,
                capture_output=True,
                text=True,
                check=False,
            )
            if out.returncode != 0:
                raise SystemExit(f"{checkout} failed:\n{out.stderr[-4000:]}")
            row = json.loads(out.stdout.strip().splitlines()[-1])
            results[checkout].append(row)
            print(f"run {run + 1} {checkout}: {row}", flush=True)
    print(f"load at the end {os.getloadavg()}\n")
    keys = ["load_s", "search_p50", "search_p95", "neighbours_p50", "neighbours_p95"]
    print("| checkout | " + " | ".join(keys) + " |")
    print("| --- |" + " ---: |" * len(keys))
    for checkout, rows in results.items():
        cells = [f"{statistics.median(r[k] for r in rows):.1f}" for k in keys]
        print(f"| {checkout} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
