"""Benchmark: parse 2,000 synthetic spec files and report files per second (median of 3).

Run: ``python bench/bench_parse.py [--files N] [--runs R] [--workers W]``. The figure covers
reading the files, parsing, resolving links and wiki links (``parse_project``), not database
writes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from kg.ingest import DEFAULT_SCHEMA, find_dangling, parse_project

FOLDERS = ("docs", "docs/adr", "planning/epics", "planning/stories", "specs/api", "specs/ui")


def synthetic_file(i: int, total: int, rng: random.Random) -> str:
    """A spec of roughly 3-4 KB: front matter, nested headings, links, ids, code, a table."""
    other = rng.randrange(total)
    folder = FOLDERS[other % len(FOLDERS)]
    parts = [
        "---",
        f"title: Spec {i}",
        f"owner: team-{i % 7}",
        "tags: [checkout, payments]",
        "---",
        f"Spec {i} refines FR-{i % 300} and [the overview](../README.md).",
        "",
        f"# Spec {i}",
        "",
        f"This document covers NFR{i % 40} and links to [spec {other}](/{folder}/spec-{other}.md).",
    ]
    for s in range(6):
        parts += [
            "",
            f"## Area {s}: {rng.choice(['Cart', 'Checkout', 'Billing', 'Search'])}",
            "",
            f"Body of area {s} mentions FR-{rng.randrange(300)} and "
            f"[a sibling](./spec-{rng.randrange(total)}.md#area-{s}-cart), "
            f"[[spec-{rng.randrange(total)}#Area 1]] and `NFR-{rng.randrange(40)}`.",
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
            "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam.",
            "",
            f"### FR-{1000 + i * 10 + s} Detail",
            "",
            "- a list item with *emphasis* and **strong** text",
            f"- another item with [external](https://example.com/{i}) link",
            "",
            "```python",
            "# not a heading",
            f"def f_{s}(): return {s}",
            "```",
            "",
            "| field | rule |",
            "|---|---|",
            f"| amount | see FR-{s} |",
        ]
    return "\n".join(parts) + "\n"


def generate(root: Path, count: int) -> None:
    rng = random.Random(42)
    (root / "README.md").write_text("# Readme\n", encoding="utf-8")
    for i in range(count):
        folder = root / FOLDERS[i % len(FOLDERS)]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"spec-{i}.md").write_text(synthetic_file(i, count, rng), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1, help="processes for parse_project")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kg-bench-") as tmp:
        root = Path(tmp)
        generate(root, args.files)
        rates: list[float] = []
        for run in range(args.runs):
            start = time.perf_counter()
            docs = parse_project(root, schema=DEFAULT_SCHEMA, workers=args.workers)
            elapsed = time.perf_counter() - start
            rates.append(len(docs) / elapsed)
            print(f"run {run + 1}: {len(docs)} files in {elapsed:.2f} s = {rates[-1]:.0f} files/s")
        nodes = sum(len(d.nodes) for d in docs)
        edges = sum(len(d.edges) for d in docs)
        start = time.perf_counter()
        problems = find_dangling(docs)
        lint_s = time.perf_counter() - start
        print(f"{nodes} nodes, {edges} edges; lint {lint_s:.2f} s, {len(problems)} problems")
        size = sum(p.stat().st_size for p in root.rglob("*.md")) / len(docs)
        print(f"average file size {size / 1024:.1f} KiB, workers={args.workers}")
        print(f"median: {statistics.median(rates):.0f} files/s")


if __name__ == "__main__":
    main()
