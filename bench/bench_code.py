"""Benchmark: ingest a generated Python/TypeScript repository, then sync one changed file.

Run: ``python bench/bench_code.py [--files 5000] [--syncs 5] [--minilm 0]``. The repository
(half Python packages, half TypeScript modules; each file has two classes with three methods,
two functions, imports of two sibling modules, calls within and across files, a docstring
naming a requirement) is committed in 20 commits (so git facts and co-change edges exist),
then ingested through ``sync_project`` into a fresh database of an embedded server:

1. full ingest (the first sync is a full scan), hashing embedder, everything projected;
2. re-ingest of the unchanged repository (nothing to append);
3. one code file changed and committed, then ``sync_project`` (``--syncs`` times; median);
4. anchor context builds (``build_in_snapshot``, default depth and budget) around
   ``--builds`` random functions and methods, p50 and p95 (after 5 warm-up builds);
5. with ``--minilm N``: a full ingest of N files with MiniLM, for its rate.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import fresh_database, machine, percentile
from kg.config import Scope, Settings
from kg.context.service import build_in_snapshot, parse_request
from kg.embeddings import HashingEmbedder
from kg.embeddings.base import EmbeddingProvider
from kg.ingest.report import IngestReport
from kg.ingest.service import ingest_paths, sync_project
from kg.runtime import Runtime, open_runtime

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
PER_PACKAGE = 25


def path_of(i: int) -> str:
    package = f"pkg{i // PER_PACKAGE}"
    return f"src/{package}/mod{i}.py" if i % 2 == 0 else f"web/{package}/mod{i}.ts"


def python_module(i: int, rng: random.Random) -> str:
    base = i - i % PER_PACKAGE
    a, b = base + rng.randrange(PER_PACKAGE) // 2 * 2, base + rng.randrange(PER_PACKAGE) // 2 * 2
    a, b = (a if a != i else base), (b if b != i else base + 2)
    return f'''"""Module {i}: orders and payments, implements FR-{i % 300}."""

from __future__ import annotations

from src.pkg{i // PER_PACKAGE}.mod{a} import helper_{a}
from src.pkg{i // PER_PACKAGE} import mod{b}


class Order{i}:
    """An order of module {i}."""

    def __init__(self, amount: int) -> None:
        self.amount = amount

    def total(self) -> int:
        return self.amount + helper_{i}(self.amount)

    def describe(self) -> str:
        return f"{{self.total()}} via {{helper_{a}(1)}}"


class Checkout{i}(Order{i}):
    def pay(self, order: Order{i}) -> bool:
        return order.total() > mod{b}.helper_{b}(0) and self.describe() != ""

    def refund(self) -> int:
        return len(str(self.total()))

    def audit(self) -> None:
        print(self.describe())


def helper_{i}(value: int) -> int:
    """Doubles ``value``."""
    return value * 2


def run_{i}() -> bool:
    checkout = Checkout{i}(3)
    return checkout.pay(Order{i}(helper_{i}(1)))
'''


def ts_module(i: int, rng: random.Random) -> str:
    base = i - i % PER_PACKAGE + 1
    a = base + rng.randrange(PER_PACKAGE) // 2 * 2
    a = a if a != i else base + 2
    return f"""// Module {i}: the web client, implements FR-{i % 300}.
import {{ helper{a} }} from "./mod{a}";

export interface Client{i} {{
  get(path: string): Promise<string>;
}}

/** A view of module {i}. */
export class View{i} {{
  constructor(private client: Client{i}) {{}}

  async load(id: string): Promise<string> {{
    const body = await this.client.get(id);
    return this.render(body);
  }}

  render(body: string): string {{
    return body + helper{i}(body.length) + helper{a}(1);
  }}

  reset(): void {{
    this.render("");
  }}
}}

export function helper{i}(n: number): string {{
  return String(n * 2);
}}

export function make{i}(client: Client{i}): View{i} {{
  const view = new View{i}(client);
  view.reset();
  return view;
}}
"""


def generate(root: Path, count: int) -> None:
    rng = random.Random(7)
    for i in range(count):
        path = root / path_of(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = python_module(i, rng) if i % 2 == 0 else ts_module(i, rng)
        path.write_text(text, encoding="utf-8")
    for folder in {(root / path_of(i)).parent for i in range(count) if i % 2 == 0}:
        (folder / "__init__.py").write_text("")
    (root / "src/__init__.py").write_text("")


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=root, env={**os.environ, **GIT_ENV}, check=True, capture_output=True
    )


def commit_in_parts(root: Path, count: int, parts: int = 20) -> None:
    """Commit the repository in ``parts`` commits; later commits touch earlier files again,
    two packages at a time, so co-change has something to count."""
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "repository")
    for n in range(parts - 1):
        package = n % max(1, count // PER_PACKAGE)
        for i in range(package * PER_PACKAGE, min(count, package * PER_PACKAGE + 6)):
            target = root / path_of(i)
            target.write_text(target.read_text() + ("\n# touch\n" if i % 2 == 0 else "\n// t\n"))
        git(root, "commit", "-q", "-am", f"touch package {package}")


def row(name: str, files: int, report: IngestReport, seconds: float) -> str:
    rate = f"{files / seconds:,.0f}" if files else "-"
    return (
        f"| {name} | {files:,} | {report.events:,} | {report.embedded:,} | {seconds:.2f} | "
        f"{report.catch_up_seconds:.2f} | {rate} |"
    )


def minilm() -> EmbeddingProvider:
    from kg.embeddings.factory import provider_from_config

    return provider_from_config("minilm")


async def context_builds(rt: Runtime, builds: int) -> tuple[tuple[int, int], float, float]:
    """Anchor builds around random functions and methods: (nodes, edges), p50, p95 in ms."""
    async with rt.system_pool.acquire() as conn:
        nodes = await conn.fetchval("SELECT count(*) FROM kg_nodes")
        edges = await conn.fetchval("SELECT count(*) FROM kg_edges")
        ids = [
            r["node_id"]
            for r in await conn.fetch(
                "SELECT node_id FROM kg_nodes WHERE node_type IN ('Function', 'Method') "
                "ORDER BY node_id"
            )
        ]
    rng = random.Random(5)
    requests = [parse_request(anchors=[rng.choice(ids)]) for _ in range(builds + 5)]
    times = []
    for i, request in enumerate(requests):
        start = time.perf_counter()
        graph = await build_in_snapshot(rt.app_pool, rt.scope, request, None)
        if i >= 5:
            times.append((time.perf_counter() - start) * 1000)
        assert graph.nodes
    return (nodes, edges), percentile(times, 50), percentile(times, 95)


async def run(files: int, syncs: int, minilm_files: int, builds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="kg-bench-code-"))
    rows: list[str] = []
    try:
        generate(root, files)
        commit_in_parts(root, files)
        url = await asyncio.to_thread(fresh_database)
        settings = Settings(database_url=url, scope=Scope("bench", "code"), project_root=root)
        async with open_runtime(settings, url=url, embedder=HashingEmbedder()) as rt:
            start = time.perf_counter()
            first = await sync_project(rt)
            elapsed = time.perf_counter() - start
            full = first.ingest
            assert full is not None and len(full.changed) >= files, full.summary()
            rows.append(row("full ingest (first kg sync), hashing embedder", files, full, elapsed))
            start = time.perf_counter()
            same = await ingest_paths(rt, None)
            assert same.events == 0, same.summary()
            rows.append(row("re-ingest, nothing changed", files, same, time.perf_counter() - start))
            latencies = []
            last: IngestReport | None = None
            for n in range(syncs):
                target = root / path_of((2 * n + 200) % files // 2 * 2)
                text = target.read_text(encoding="utf-8")
                target.write_text(
                    text.replace("return value * 2", f"return value * 2 + {n}"), encoding="utf-8"
                )
                git(root, "commit", "-q", "-am", f"edit {n}")
                start = time.perf_counter()
                report = await sync_project(rt)
                latencies.append(time.perf_counter() - start)
                assert report.mode == "incremental" and report.ingest is not None
                last = report.ingest
            assert last is not None
            rows.append(
                row(
                    f"one-file sync after a code commit (median of {syncs})",
                    1,
                    last,
                    statistics.median(latencies),
                )
            )
            graph_size, p50, p95 = await context_builds(rt, builds)
        if minilm_files:
            sub = Path(tempfile.mkdtemp(prefix="kg-bench-code-minilm-"))
            generate(sub, minilm_files)
            commit_in_parts(sub, minilm_files)
            url2 = await asyncio.to_thread(fresh_database)
            settings2 = Settings(database_url=url2, scope=Scope("bench", "m"), project_root=sub)
            async with open_runtime(settings2, url=url2, embedder=minilm()) as rt:
                start = time.perf_counter()
                report2 = await ingest_paths(rt, None)
                rows.append(
                    row("full ingest, MiniLM", minilm_files, report2, time.perf_counter() - start)
                )
            shutil.rmtree(sub, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{machine()}")
    print(f"repository: {files:,} files (half Python, half TypeScript), 20 commits\n")
    print("| run | files | events | texts embedded | seconds | of which projections | files/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for line in rows:
        print(line)
    print(
        f"\nanchor builds around a function or method ({builds}, default depth and budget) on "
        f"{graph_size[0]:,} nodes, {graph_size[1]:,} edges: p50 {p50:.1f} ms, p95 {p95:.1f} ms"
    )
    print(f"\nfull ingest: {full.summary()}")
    print(f"one-file sync: {', '.join(f'{x:.2f}' for x in latencies)} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--syncs", type=int, default=5)
    parser.add_argument("--minilm", type=int, default=0, help="files for a MiniLM ingest")
    parser.add_argument("--builds", type=int, default=200, help="anchor context builds")
    args = parser.parse_args()
    asyncio.run(run(args.files, args.syncs, args.minilm, args.builds))


if __name__ == "__main__":
    main()
