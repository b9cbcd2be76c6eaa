"""Start-up of the CLI: ``kg --help`` and ``kg status``, two source trees back to back.

    python bench/bench_startup.py --tree before=/tmp/kg-base --tree after=. --runs 7

Each tree is put first on ``PYTHONPATH`` for its runs (the shared venv supplies the
dependencies), runs alternate between the trees so that load from other work on the machine
falls on both alike, and the median wall clock of each command is printed as a Markdown table.
``kg status`` runs against one migrated database (KG_DATABASE_URL's server, else an embedded
one), so the figure is kg's own start-up plus its few queries.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import fresh_database, machine, median

COMMANDS = {"kg --help": ("--help",), "kg status": ("status",)}


def _run(tree: Path, args: tuple[str, ...], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kg.cli", *args],
        env={**env, "PYTHONPATH": str(tree)},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"`kg {' '.join(args)}` failed in {tree}:\n{done.stdout}{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in args.tree)}
    url = fresh_database()
    env = {
        **os.environ,
        "KG_DATABASE_URL": url,
        "KG_TENANT": "bench",
        "KG_PROJECT": "startup",
        "KG_EMBEDDER": "hashing",
        "HF_HUB_OFFLINE": "1",
    }
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="kg-bench-startup-") as folder:
        cwd = Path(folder)
        for tree in trees.values():  # warm the file cache and the bytecode of each tree once
            for argv in COMMANDS.values():
                _run(tree, argv, env, cwd)
        for _ in range(args.runs):
            for name, tree in trees.items():
                for label, argv in COMMANDS.items():
                    times.setdefault((name, label), []).append(_run(tree, argv, env, cwd))
    print(machine())
    print(f"load average at the end: {os.getloadavg()[0]:.1f}; {args.runs} runs each, median")
    print("| command | " + " | ".join(f"{name} (ms)" for name in trees) + " |")
    print("| --- | " + " | ".join("---:" for _ in trees) + " |")
    for label in COMMANDS:
        cells = " | ".join(f"{median(times[(name, label)]):.0f}" for name in trees)
        print(f"| `{label}` | {cells} |")


if __name__ == "__main__":
    main()
