"""What governance as code costs (issue 19): the per-call guard, path-glob selectors in a
build, and a no-op policy sync.

On a fresh database with the synthetic graph (``--nodes``, 6 edges per node), four figures,
each the median (and p95) of ``--calls`` repetitions, in two policy sets:

* ``check``: :func:`kg.governance.enforce.check` for 3 named nodes, what every MCP tool call and
  CLI command now runs first (catch-up, policies, the nodes' rows, the verdict);
* ``build``: an anchor build (3 anchors, depth 2, 128 nodes), where every reached node is
  checked against every policy's selectors;
* ``sync``: :func:`kg.governance.sync.apply_policy_files` with the files unchanged (read and
  parse the YAML, compare with the graph's policies, append nothing).

Policy sets: ``none`` (no policy at all) and ``files`` (20 policies in 5 files: path-glob
denies and redacts that match ~1% of the nodes, and gating allow_actions policies with actors,
plus ``default: deny-writes``).

Run: python bench/bench_policy_guard.py [--nodes 10000] [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import drop_database, fresh_database, machine, median, percentile
from synthetic import append_all, graph_events, node_id

from kg.config import Scope, Settings
from kg.context.service import build_in_snapshot, parse_request
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder
from kg.events import EventMetadata
from kg.governance.enforce import check
from kg.governance.sync import apply_policy_files
from kg.runtime import Runtime

SCOPE = Scope("bench", "p")
META = EventMetadata(actor="bench")


def policy_files(root: Path) -> None:
    folder = root / ".kg" / "policies"
    folder.mkdir(parents=True)
    (folder / "0-default.yaml").write_text("default: deny-writes\n", encoding="utf-8")
    for f in range(1, 5):
        lines = ["policies:"]
        for k in range(5):
            i = f * 5 + k
            if k < 2:
                lines.append(f"  - {{id: hide-{i}, effect: deny, paths: ['n{i}7*']}}")
            elif k < 3:
                lines.append(f"  - {{id: redact-{i}, effect: redact, paths: ['n{i}3*']}}")
            else:
                lines.append(
                    f"  - {{id: team-{i}, effect: allow_actions, node_types: [Component], "
                    f"paths: ['n{i}*'], actions: [read, write], actors: ['mcp:team-{i}-*']}}"
                )
        (folder / f"{f}-teams.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


async def measure(fn: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    await fn()  # warm
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


async def run(nodes: int, calls: int) -> dict[str, dict[str, list[float]]]:
    url = fresh_database()
    app = await create_pool(url, app_role=True)
    system = await create_pool(url, app_role=False)
    results: dict[str, dict[str, list[float]]] = {}
    try:
        root = Path(tempfile.mkdtemp(prefix="kg-bench-policies-"))
        settings = Settings(database_url=url, scope=SCOPE, project_root=root)
        rt = Runtime(settings, url, app, system, HashingEmbedder())
        await append_all(rt.store, SCOPE, graph_events(nodes, 6), batch=5000)
        await rt.catch_up()
        rng = random.Random(3)
        anchors = [tuple(node_id(rng.randrange(nodes)) for _ in range(3)) for _ in range(64)]
        turn = iter(range(10**9))

        def pick() -> tuple[str, ...]:
            return anchors[next(turn) % len(anchors)]

        async def guard() -> None:
            await check(rt, "mcp:team-7-a", "record_decision", pick())

        async def build() -> None:
            request = parse_request(anchors=pick(), mode="anchor", max_depth=2, max_nodes=128)
            await build_in_snapshot(rt.app_pool, SCOPE, request, None)

        async def sync() -> None:
            await apply_policy_files(rt, META)

        for name in ("none", "files"):
            if name == "files":
                policy_files(root)
                applied = await apply_policy_files(rt, META)
                assert applied.events == 21 and not applied.problems, applied
            rt = dataclasses.replace(rt)
            results[name] = {
                "check": await measure(guard, calls),
                "build": await measure(build, calls),
                "sync": await measure(sync, max(20, calls // 5)),
            }
    finally:
        await app.close()
        await system.close()
        drop_database(url)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    results = asyncio.run(run(args.nodes, args.calls))
    print(f"# {machine()}; {args.nodes} nodes, {args.calls} calls")
    print("| policies | what | median ms | p95 ms |")
    print("| --- | --- | --- | --- |")
    for name, parts in results.items():
        for what, values in parts.items():
            print(f"| {name} | {what} | {median(values):.2f} | {percentile(values, 95):.2f} |")


if __name__ == "__main__":
    main()
