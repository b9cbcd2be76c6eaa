"""Round trips through a real MCP client over stdio, and the server's memory.

For each graph size and each embedder, a fresh database is filled with the context benchmark's
synthetic graph (with its policies, ``bench_context.build``) and projected with that embedder (the index is pinned to one model), then ``kg mcp`` is spawned by
the SDK's stdio client, as an agent's host would, and timed per tool call: client send ->
server -> PostgreSQL -> server -> client parse. Memory is the server process's resident set
(psutil): idle after the handshake, after the first semantic call (MiniLM loads lazily, on
first use), and the peak (the kernel's high-water mark, VmHWM).

Run: python bench/bench_mcp.py [--sizes 10000 100000] [--calls 200] [--embedders hashing minilm]
     [--reuse]

Preparing the MiniLM database embeds every node on the CPU and dominates the run time (~3.5
min for 10,000 nodes on 2 cores); ``--embedders hashing`` skips it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil
from bench_context import build as build_graph
from common import (
    drop_database,
    machine,
    percentile,
    scratch_copy,
)
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, Implementation
from synthetic import VOCAB, WORDS, node_id

from kg.config import Scope

SCOPE = Scope("bench", "p")
MIB = 1024 * 1024


@dataclass
class Run:
    size: int
    embedder: str
    latencies: dict[str, list[float]] = field(default_factory=dict)
    validation: dict[str, list[float]] = field(default_factory=dict)  # client-side share
    memory: dict[str, float] = field(default_factory=dict)  # MiB


async def prepare(n: int, edges_per_node: int, embedder: str, reuse: bool) -> str:
    """The context benchmark's graph projected with ``embedder``: fresh, or with ``reuse`` a
    scratch copy of the one kept in bench/out/pg (the run records decisions into it)."""
    url, _ = await build_graph(n, edges_per_node, reuse, embedder)
    return scratch_copy(url) if reuse else url


def server_process(parent: psutil.Process) -> psutil.Process:
    """The ``kg mcp`` child the stdio client spawned (not the embedded PostgreSQL's)."""
    for child in parent.children(recursive=True):
        try:
            cmdline = child.cmdline()
        except psutil.Error:
            continue
        if "kg.cli" in cmdline and "mcp" in cmdline:
            return child
    raise RuntimeError("the kg mcp server process was not found")


def rss(proc: psutil.Process) -> float:
    return float(proc.memory_info().rss) / MIB


def peak_rss(proc: psutil.Process, sampled: float) -> float:
    """VmHWM (Linux), else the highest sample taken."""
    try:
        for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return sampled


class Probe:
    """Times each tool call through the client, and samples the server's memory after it.

    The SDK's client re-validates every structured result against the tool's output schema
    with ``jsonschema`` (pure Python, ~7 us per value: ~15 ms for a 128-node context graph);
    that share is timed on its own too, since hosts that validate with a compiled validator
    (ajv in the TypeScript SDK) do not pay it."""

    def __init__(self, session: ClientSession, server: psutil.Process) -> None:
        self.session = session
        self.server = server
        self.samples = [rss(server)]
        self.latencies: dict[str, list[float]] = {}
        self.validation: dict[str, list[float]] = {}  # the client's share of each latency
        self.validation_ms = 0.0
        validate = session.validate_tool_result

        async def timed_validation(name: str, result: CallToolResult) -> None:
            start = time.perf_counter()
            await validate(name, result)
            self.validation_ms = (time.perf_counter() - start) * 1000

        session.validate_tool_result = timed_validation  # type: ignore[method-assign]

    async def call(
        self, tool: str, arguments: dict[str, Any], series: str | None = None
    ) -> dict[str, Any]:
        """Call ``tool``; the timing goes into ``series`` (none: a warm-up call)."""
        start = time.perf_counter()
        result: CallToolResult = await self.session.call_tool(tool, arguments)
        if series is not None:
            self.latencies.setdefault(series, []).append((time.perf_counter() - start) * 1000)
            self.validation.setdefault(series, []).append(self.validation_ms)
        self.samples.append(rss(self.server))
        if result.is_error or result.structured_content is None:
            raise RuntimeError(f"{tool} failed: {result.content}")
        return dict(result.structured_content)


async def measure(url: str, n: int, embedder: str, calls: int, errlog: Any) -> Run:
    run = Run(n, embedder)
    env = {
        **os.environ,
        "KG_DATABASE_URL": url,
        "KG_TENANT": SCOPE.tenant_id,
        "KG_PROJECT": SCOPE.project_id,
        "KG_EMBEDDER": embedder,
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "kg.cli", "mcp"], env=env)
    rng = random.Random(11)
    anchors = [node_id(rng.randrange(n)) for _ in range(calls)]
    # Distinct texts: the server keeps recent query vectors, and each call should embed.
    tasks = [" ".join(rng.sample(WORDS, 2) + VOCAB.sample(rng, 2)) + f" {i}" for i in range(calls)]
    client = Implementation(name="bench", version="1")
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, client_info=client) as session,
    ):
        await session.initialize()
        await session.list_tools()
        server = server_process(psutil.Process())
        await asyncio.sleep(1)
        run.memory["idle"] = rss(server)
        probe = Probe(session, server)
        for i in range(5):  # pools, query plans, and (minilm) the model's first load
            await probe.call("build_context_graph", {"anchors": [anchors[-1 - i]]})
            await probe.call("build_context_graph", {"task": f"warm up {i}"})
        run.memory["after first semantic call"] = rss(server)

        anchor = "build_context_graph (anchor)"
        graph_ids = [
            (await probe.call("build_context_graph", {"anchors": [a]}, anchor))["context_graph_id"]
            for a in anchors
        ]
        for task in tasks:
            await probe.call(
                "build_context_graph", {"task": task}, "build_context_graph (semantic)"
            )
        decisions = [
            (
                await probe.call(
                    "record_decision",
                    {"text": f"decision {i}", "context_graph_ids": [graph_id]},
                    "record_decision",
                )
            )["decision_id"]
            for i, graph_id in enumerate(graph_ids[: max(10, calls // 4)])
        ]
        for i in range(calls):
            arguments = {"decision_id": decisions[i % len(decisions)], "depth": 3}
            await probe.call(
                "trace_decision_lineage", arguments, "trace_decision_lineage (upstream, depth 3)"
            )
        run.memory["peak"] = peak_rss(server, max(probe.samples))
        run.latencies, run.validation = probe.latencies, probe.validation
    return run


def report(runs: list[Run], edges_per_node: int) -> None:
    print(
        "| graph | KG_EMBEDDER | tool call (stdio round trip) | calls | p50 ms | p95 ms "
        "| without the client's jsonschema validation: p50 ms | p95 ms |"
    )
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for run in runs:
        label = f"{run.size:,} nodes, ~{run.size * edges_per_node:,} edges"
        for name, values in run.latencies.items():
            p50, p95 = percentile(values, 50), percentile(values, 95)
            bare = [t - v for t, v in zip(values, run.validation[name], strict=True)]
            b50, b95 = percentile(bare, 50), percentile(bare, 95)
            print(
                f"| {label} | {run.embedder} | {name} | {len(values)} | {p50:.1f} | {p95:.1f} "
                f"| {b50:.1f} | {b95:.1f} |"
            )
    print()
    print("| graph | KG_EMBEDDER | idle RSS MiB | after first semantic call MiB | peak RSS MiB |")
    print("| --- | --- | ---: | ---: | ---: |")
    for run in runs:
        m = run.memory
        print(
            f"| {run.size:,} nodes | {run.embedder} | {m['idle']:.0f} | "
            f"{m['after first semantic call']:.0f} | {m['peak']:.0f} |"
        )


async def main(
    sizes: list[int], edges_per_node: int, calls: int, embedders: list[str], reuse: bool
) -> None:
    print(f"Machine: {machine()}\n")
    runs = []
    with tempfile.TemporaryFile("w+") as errlog:
        for n in sizes:
            for embedder in embedders:
                url = await prepare(n, edges_per_node, embedder, reuse)
                try:
                    runs.append(await measure(url, n, embedder, calls, errlog))
                finally:
                    if reuse:
                        drop_database(url)
    report(runs, edges_per_node)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--edges-per-node", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200, help="timed calls per tool and mode")
    parser.add_argument("--embedders", nargs="+", default=["hashing", "minilm"])
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the prepared graphs in bench/out/pg and reuse them (shared with bench_context)",
    )
    args = parser.parse_args()
    asyncio.run(main(args.sizes, args.edges_per_node, args.calls, args.embedders, args.reuse))
