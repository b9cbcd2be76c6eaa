"""``kg watch`` (issue 35, item 1): save-to-searchable latency, a ``git checkout`` burst, and
the watcher's CPU while idle.

A git project of generated specs (``bench_ingest.generate``, ~2 KB each) is committed and
synced; the console script ``kg watch`` runs as a developer starts it (its own process, low
priority) on a fresh database (KG_DATABASE_URL) with the chosen embedder. Then:

* **save-to-searchable**: one spec is rewritten with a new word (a save), and a poller (its
  own connection, every 10 ms) waits until a projected node holds the word (content and
  embedding written: full-text and vector search see it); the time from the write to then.
  One save at a time, the watcher quiet between them;
* **burst**: ``git checkout`` of a branch that changes ``--burst`` files, until every one of
  them is searchable (and back);
* **idle CPU**: the watcher process's CPU time (user + system, children included) over
  ``--idle`` seconds with nothing changing, as a share of one core.

Run: ``python bench/bench_watch.py [--files 600] [--saves 20] [--burst 500]`` (under the
benchmark lock).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_ingest import generate, git, kg_console_script, path_of, user_env
from bench.common import fresh_database, machine, median, percentile
from kg.db.urls import asyncpg_url


def searchable(conn: psycopg.Connection, word: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM kg_nodes WHERE tenant_id = 'bench' AND project_id = 'a' "
        "AND content LIKE %s AND embedding IS NOT NULL",
        (f"%{word}%",),
    ).fetchone()
    return int(row[0]) if row else 0


def wait_until(
    conn: psycopg.Connection, word: str, count: int, start: float, limit: float = 120
) -> float:
    while searchable(conn, word) < count:
        if time.perf_counter() - start > limit:
            raise SystemExit(f"{word}: not searchable within {limit} s")
        time.sleep(0.01)
    return time.perf_counter() - start


def save(root: Path, i: int, word: str) -> None:
    path = root / path_of(i)
    text = path.read_text(encoding="utf-8")
    path.write_text(text + f"\n## Update {word}\n\nThe {word} changes the flow.\n", "utf-8")


class Watcher:
    """``kg watch`` in its own process; its output lines are collected."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [kg_console_script(), "watch"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    def wait_for_passes(self, count: int, limit: float = 300) -> None:
        end = time.monotonic() + limit
        while sum("working tree" in line for line in self.lines) < count:
            if self.proc.poll() is not None or time.monotonic() > end:
                raise SystemExit("kg watch failed:\n" + "\n".join(self.lines))
            time.sleep(0.05)

    def cpu(self) -> float:
        proc = psutil.Process(self.proc.pid)
        times = proc.cpu_times()
        return float(times.user + times.system + times.children_user + times.children_system)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--burst", type=int, default=500)
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()

    url = fresh_database()
    root = Path(tempfile.mkdtemp(prefix="kg-bench-watch-"))
    git(root, "init", "-q", "-b", "main")
    generate(root, args.files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "specs")
    git(root, "checkout", "-q", "-b", "burst")
    for i in range(args.burst):
        save(root, i, "burstword")
    git(root, "commit", "-q", "-am", "burst")
    git(root, "checkout", "-q", "main")

    env = {**user_env(), "KG_DATABASE_URL": url, "KG_EMBEDDER": args.embedder}
    print(f"# kg watch, {args.files} specs, embedder {args.embedder}\n\n{machine()}\n")
    started = time.perf_counter()
    watcher = Watcher(root, env)
    watcher.wait_for_passes(1)
    print(f"first pass (whole project, {args.files} files): {time.perf_counter() - started:.1f} s")
    time.sleep(2)
    with psycopg.connect(asyncpg_url(url), autocommit=True) as conn:
        before = watcher.cpu()
        time.sleep(args.idle)
        idle = (watcher.cpu() - before) / args.idle * 100

        latencies: list[float] = []
        for n in range(args.saves):
            word = f"savedword{n}x"
            start = time.perf_counter()
            save(root, args.files - 1 - n, word)
            latencies.append(wait_until(conn, word, 1, start))
            time.sleep(1.0)

        bursts: list[float] = []
        for _ in range(args.bursts):
            start = time.perf_counter()
            git(root, "checkout", "-q", "burst")
            bursts.append(wait_until(conn, "burstword", args.burst, start, limit=600))
            time.sleep(1.0)
            start = time.perf_counter()
            git(root, "checkout", "-q", "main")
            while searchable(conn, "burstword"):
                time.sleep(0.01)
            bursts.append(time.perf_counter() - start)
            time.sleep(1.0)
    watcher.stop()
    ms = [x * 1000 for x in latencies]
    print()
    print("| what | p50 | p95 | runs |")
    print("| --- | ---: | ---: | --- |")
    print(
        f"| save to searchable (one spec) | {median(ms):.0f} ms | {percentile(ms, 95):.0f} ms | "
        f"{len(ms)} |"
    )
    print(
        f"| `git checkout` of {args.burst} changed specs, until all are searchable (there and "
        f"back) | {median(bursts):.2f} s | {percentile(bursts, 95):.2f} s | "
        f"{', '.join(f'{b:.2f}' for b in bursts)} |"
    )
    print(f"| watcher CPU while idle ({args.idle:.0f} s) | {idle:.2f} % of a core | | 1 |")
    print(f"\npasses printed by kg watch: {sum('working tree' in x for x in watcher.lines)}")
    os.environ.pop("KG_DATABASE_URL", None)


if __name__ == "__main__":
    main()
