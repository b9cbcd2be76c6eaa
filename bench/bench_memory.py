"""``kg mcp --memory-compat`` against the reference MCP memory server, on the same data.

A synthetic ``memory.jsonl`` (entities with observations, relations; seeded) is served by
both, each spawned by the SDK's stdio client as an agent's host would:

* the reference, ``@modelcontextprotocol/server-memory`` (node; installed with
  ``npm install @modelcontextprotocol/server-memory`` into ``--reference-dir``), reading a
  copy of the file (it reads the whole file on every call);
* ``kg mcp --memory-compat`` on a fresh database into which ``kg import memory`` loaded it.

Measured: load (the reference: spawn to first answer; kg: the import, then spawn to first
answer), ``read_graph`` (latency and result tokens), ``search_nodes`` over the same queries
(p50/p95 latency, result tokens, and how many of the reference's matches kg returned within
its budget or counted as cut), and lost writes: two clients (two server processes, as two
agents each starting their own) adding observations to one entity at once.

Run: python bench/bench_memory.py [--entities 2000] [--relations 3000] [--queries 100]
     [--runs 3] [--reference-dir /tmp/memref]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import drop_database, fresh_database, machine, percentile
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, Implementation, TextContent

from kg.config import Scope

SCOPE = Scope("bench", "memory")
CLIENT = Implementation(name="bench-memory", version="1")
TYPES = ["person", "organization", "project", "service", "library", "meeting", "decision"]
RELATIONS = ["works_at", "depends_on", "owns", "attended", "reports_to", "uses", "blocks"]
WORDS = [
    "alpha",
    "billing",
    "cache",
    "deploy",
    "review",
    "latency",
    "postgres",
    "queue",
    "retry",
    "schema",
    "token",
    "budget",
    "webhook",
    "invoice",
    "charge",
    "refund",
    "ledger",
    "audit",
    "policy",
    "session",
    "agent",
    "context",
    "graph",
    "index",
    "migration",
    "rollback",
    "release",
    "incident",
    "oncall",
    "metrics",
    "tracing",
    "gateway",
    "kafka",
    "redis",
    "terraform",
    "kubernetes",
    "python",
    "rust",
    "typescript",
    "design",
    "tradeoff",
    "deadline",
    "customer",
]


def synthetic(entities: int, relations: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    names = [
        f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()} {i}" for i in range(entities)
    ]
    lines: list[dict[str, Any]] = []
    for name in names:
        observations = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
            for _ in range(rng.randint(3, 8))
        ]
        lines.append(
            {"type": "entity", "name": name, "entityType": rng.choice(TYPES),
             "observations": observations}
        )  # fmt: skip
    seen = set()
    while len(seen) < relations:
        a, b = rng.sample(names, 2)
        kind = rng.choice(RELATIONS)
        if (a, kind, b) in seen:
            continue
        seen.add((a, kind, b))
        lines.append({"type": "relation", "from": a, "to": b, "relationType": kind})
    return lines


def queries(lines: list[dict[str, Any]], n: int, seed: int = 11) -> list[str]:
    """A third entity names, a third single words, a third entity types or two-word phrases."""
    rng = random.Random(seed)
    names = [line["name"] for line in lines if line["type"] == "entity"]
    out = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            out.append(rng.choice(names))
        elif kind == 1:
            out.append(rng.choice(WORDS))
        else:
            out.append(f"{rng.choice(WORDS)} {rng.choice(WORDS)}" if i % 2 else rng.choice(TYPES))
    return out


def tokens(result: CallToolResult) -> int:
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    return (len(text) + 3) // 4


def structured(result: CallToolResult) -> dict[str, Any]:
    if result.is_error:
        raise RuntimeError(str(result.content))
    data = result.structured_content
    if data is None:  # older reference builds answer in text only
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        return dict(json.loads(text))
    return dict(data)


@asynccontextmanager
async def session(
    command: str, args: list[str], env: dict[str, str]
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command, args=args, env=env)
    with tempfile.TemporaryFile("w+") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=CLIENT, read_timeout_seconds=300) as s,
        ):
            await s.initialize()
            yield s


def reference(reference_dir: Path, memory_file: Path) -> tuple[str, list[str], dict[str, str]]:
    script = reference_dir / "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
    node = shutil.which("node") or "node"
    return node, [str(script)], {**os.environ, "MEMORY_FILE_PATH": str(memory_file)}


def kg_server(db_url: str) -> tuple[str, list[str], dict[str, str]]:
    env = {
        **os.environ,
        "KG_DATABASE_URL": db_url,
        "KG_TENANT": SCOPE.tenant_id,
        "KG_PROJECT": SCOPE.project_id,
        "KG_EMBEDDER": "hashing",
    }
    return sys.executable, ["-m", "kg.cli", "mcp", "--memory-compat"], env


async def measure(
    server: tuple[str, list[str], dict[str, str]], qs: list[str], kg: bool
) -> dict[str, Any]:
    command, args, env = server
    start = time.perf_counter()
    async with session(command, args, env) as s:
        first = await s.call_tool("read_graph", {})
        ready = time.perf_counter() - start
        graph_ms = []
        for _ in range(3):
            t0 = time.perf_counter()
            result = await s.call_tool("read_graph", {})
            graph_ms.append((time.perf_counter() - t0) * 1000)
        graph = structured(first)
        search_ms, search_tokens, found = [], [], []
        for q in qs:
            t0 = time.perf_counter()
            result = await s.call_tool("search_nodes", {"query": q})
            search_ms.append((time.perf_counter() - t0) * 1000)
            search_tokens.append(tokens(result))
            data = structured(result)
            names = {e["name"] for e in data["entities"]}
            cut = data.get("truncated", {}).get("entities", 0) if kg else 0
            found.append((names, cut))
    return {
        "ready_s": ready,
        "read_graph_ms": statistics.median(graph_ms),
        "read_graph_tokens": tokens(first),
        "read_graph_entities": len(graph["entities"]),
        "read_graph_relations": len(graph["relations"]),
        "read_graph_cut": graph.get("truncated"),
        "search_p50_ms": percentile(search_ms, 50),
        "search_p95_ms": percentile(search_ms, 95),
        "search_tokens_mean": statistics.mean(search_tokens),
        "search_tokens_max": max(search_tokens),
        "found": found,
    }


async def lost_writes(server: tuple[str, list[str], dict[str, str]], per_client: int) -> int:
    """Two server processes, one client each, adding observations to one entity at once:
    how many acknowledged observations are missing afterwards."""
    command, args, env = server
    async with session(command, args, env) as a, session(command, args, env) as b:
        await a.call_tool(
            "create_entities",
            {"entities": [{"name": "Race", "entityType": "note", "observations": []}]},
        )

        async def writer(s: ClientSession, who: str) -> None:
            for i in range(per_client):
                await s.call_tool(
                    "add_observations",
                    {"observations": [{"entityName": "Race", "contents": [f"{who}-{i}"]}]},
                )

        await asyncio.gather(writer(a, "a"), writer(b, "b"))
        data = structured(await a.call_tool("open_nodes", {"names": ["Race"]}))
    kept = set(data["entities"][0]["observations"]) if data["entities"] else set()
    return 2 * per_client - len(kept)


async def import_into(db_url: str, path: Path) -> float:
    from kg.memory.importer import import_memory
    from kg.runtime import open_runtime

    saved = dict(os.environ)
    os.environ.update(kg_server(db_url)[2])
    try:
        async with open_runtime() as rt:
            start = time.perf_counter()
            report = await import_memory(rt, path, actor="bench")
            await rt.catch_up()
            elapsed = time.perf_counter() - start
    finally:
        os.environ.clear()
        os.environ.update(saved)
    print(f"  import: {report.summary()} in {elapsed:.1f} s", flush=True)
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--relations", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--writes", type=int, default=50, help="per client, lost-write test")
    parser.add_argument("--reference-dir", type=Path, default=Path("/tmp/memref"))
    options = parser.parse_args()

    lines = synthetic(options.entities, options.relations)
    qs = queries(lines, options.queries)
    work = Path(tempfile.mkdtemp(prefix="kg-bench-memory-"))
    source = work / "memory.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine()}; load {os.getloadavg()}")
    print(f"memory.jsonl: {options.entities} entities, {options.relations} relations, "
          f"{source.stat().st_size / 1e6:.1f} MB; {len(qs)} queries")  # fmt: skip

    results: dict[str, list[dict[str, Any]]] = {"reference": [], "kg": []}
    imports: list[float] = []
    for run in range(options.runs):
        # Alternated, so that the machine's other load falls on both alike.
        copy = work / f"ref-{run}.jsonl"
        shutil.copy(source, copy)
        print(f"run {run + 1}: reference", flush=True)
        results["reference"].append(
            await measure(reference(options.reference_dir, copy), qs, False)
        )
        db_url = fresh_database()
        try:
            print(f"run {run + 1}: kg", flush=True)
            imports.append(await import_into(db_url, source))
            results["kg"].append(await measure(kg_server(db_url), qs, True))
        finally:
            drop_database(db_url)

    def med(name: str, key: str) -> float:
        return statistics.median(r[key] for r in results[name])

    print("\n| server | load s | read_graph ms | read_graph tokens | search p50 ms | search p95 ms "
          "| search tokens mean / max |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for name in ("reference", "kg"):
        load = f"{med(name, 'ready_s'):.2f}"
        if name == "kg":
            load = f"{statistics.median(imports):.1f} import + {load}"
        print(
            f"| {name} | {load} | {med(name, 'read_graph_ms'):.0f} | "
            f"{med(name, 'read_graph_tokens'):.0f} | {med(name, 'search_p50_ms'):.1f} | "
            f"{med(name, 'search_p95_ms'):.1f} | {med(name, 'search_tokens_mean'):.0f} / "
            f"{med(name, 'search_tokens_max'):.0f} |"
        )
    ref, kg = results["reference"][-1], results["kg"][-1]
    print(f"kg read_graph: {kg['read_graph_entities']} entities, {kg['read_graph_relations']} "
          f"relations, cut {kg['read_graph_cut']}; reference: {ref['read_graph_entities']} / "
          f"{ref['read_graph_relations']}")  # fmt: skip
    returned = matched = accounted = 0
    for (ref_names, _), (kg_names, cut) in zip(ref["found"], kg["found"], strict=True):
        matched += len(ref_names)
        returned += len(ref_names & kg_names)
        accounted += min(len(ref_names), len(ref_names & kg_names) + cut)
    print(f"search: of {matched} reference matches, kg returned {returned} within its budget "
          f"and counted {accounted - returned} more as cut ({accounted / max(matched, 1):.1%} "
          "returned or accounted for)")  # fmt: skip

    print("lost writes (2 processes x", options.writes, "add_observations on one entity):")
    race = work / "race.jsonl"
    race.write_text("", encoding="utf-8")
    print("  reference:", await lost_writes(reference(options.reference_dir, race), options.writes))
    db_url = fresh_database()
    try:
        print("  kg:", await lost_writes(kg_server(db_url), options.writes))
    finally:
        drop_database(db_url)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
