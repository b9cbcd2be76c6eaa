"""Everyday commands from the shell with the warm embedded server (issue 21, item 3).

What a developer feels: wall clock of the console script ``kg`` from the shell, Python start-up
included, in a git project of generated specs with its own embedded server (no
``KG_DATABASE_URL``):

* one-file ``kg sync`` after a commit, with the hashing embedder and with MiniLM (each in a
  project of its own: one index holds one model's vectors);
* ``kg status``;
* each once with the server kept warm between commands (``KG_SERVER_IDLE`` default) and once
  with ``KG_SERVER_IDLE=0`` (the server started and stopped by every command: the old
  behaviour);
* the resident memory (PSS, so shared pages are not counted twice) of the idle warm server
  (postmaster and its children) and of an idle ``kg mcp`` over stdio, and of the watchdog.

Run: ``python bench/bench_everyday.py [--files 300] [--runs 9]`` (under the benchmark lock).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_ingest import compile_kg, generate, git, kg_console_script, path_of, user_env
from bench.common import machine


def env_for(embedder: str, idle: str | None) -> dict[str, str]:
    env = {**user_env(), "KG_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1"}
    env.pop("KG_SERVER_IDLE", None)
    if idle is not None:
        env["KG_SERVER_IDLE"] = idle
    return env


def kg(root: Path, env: dict[str, str], *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [kg_console_script(), *args], cwd=root, env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    return took


def project(files: int, embedder: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix=f"kg-bench-ev-{embedder}-"))
    generate(root, files)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "specs")
    env = env_for(embedder, None)
    kg(root, env, "init")
    first = kg(root, env, "sync")
    print(f"{embedder}: first full sync of {files} files: {first:.1f} s", flush=True)
    return root


def one_file_syncs(root: Path, env: dict[str, str], runs: int, start: int) -> list[float]:
    seconds = []
    for n in range(start, start + runs):
        target = root / path_of(n)
        target.write_text(target.read_text() + f"\nEdited {n}.\n", encoding="utf-8")
        git(root, "commit", "-q", "-am", f"edit {n}")
        seconds.append(kg(root, env, "sync"))
    return seconds


def statuses(root: Path, env: dict[str, str], runs: int) -> list[float]:
    return [kg(root, env, "status") for _ in range(runs)]


def server_pss(root: Path) -> float:
    pid = int((root / ".kg/pgdata/postmaster.pid").read_text().splitlines()[0])
    main = psutil.Process(pid)
    return sum(_pss(p) for p in [main, *main.children(recursive=True)]) / 2**20


def _pss(process: psutil.Process) -> float:
    try:
        return float(process.memory_full_info().pss)
    except psutil.Error:
        return 0.0


def idle_mcp_pss(root: Path, env: dict[str, str], settle: float = 5.0) -> float:
    proc = subprocess.Popen(
        [kg_console_script(), "mcp"],
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(settle)
        return _pss(psutil.Process(proc.pid)) / 2**20
    finally:
        proc.terminate()
        proc.wait(30)


def watchdog_pss(root: Path) -> float:
    from kg.db.idle import watchdog_pid

    pid = watchdog_pid(root / ".kg/pgdata")
    return _pss(psutil.Process(pid)) / 2**20 if pid else 0.0


def fmt(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return f"{statistics.median(ms):.0f} ({ms[0]:.0f}-{ms[-1]:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--embedders", nargs="+", default=["hashing", "minilm"])
    args = parser.parse_args()
    compile_kg()
    bare = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - start)
    print(f"python -c pass: {fmt(bare)} ms", flush=True)
    rows = []
    memory = []
    roots = []
    try:
        for embedder in args.embedders:
            root = project(args.files, embedder)
            roots.append(root)
            warm = env_for(embedder, None)
            cold = env_for(embedder, "0")
            # Interleaved, so that the machine's load (shared) weighs on both alike.
            times: dict[str, dict[str, list[float]]] = {
                label: {"sync": [], "status": []} for label in ("warm", "cold")
            }
            for n in range(args.runs):
                for label, env in (("warm", warm), ("cold", cold)):
                    if label == "warm":
                        kg(root, warm, "status")  # up and idle, as between two commands
                    else:
                        kg(root, warm, "server", "stop", "--force")
                    times[label]["sync"] += one_file_syncs(root, env, 1, 2 * n + (label == "cold"))
                    times[label]["status"] += statuses(root, env, 1)
            for label, found in times.items():
                server = "warm" if label == "warm" else "cold (KG_SERVER_IDLE=0)"
                rows.append(
                    f"| {embedder} | {server} | {fmt(found['sync'])} | {fmt(found['status'])} |"
                )
                print(rows[-1], flush=True)
            kg(root, warm, "status")
            time.sleep(2)
            memory.append(
                f"| {embedder} | {server_pss(root):.0f} | {idle_mcp_pss(root, warm):.0f} | "
                f"{watchdog_pss(root):.0f} |"
            )
            print(memory[-1], flush=True)
    finally:
        for root in roots:
            subprocess.run(
                [kg_console_script(), "server", "stop", "--force"],
                cwd=root,
                env=env_for("hashing", "0"),
                capture_output=True,
            )
            shutil.rmtree(root, ignore_errors=True)
    print(f"\n{machine()}, {args.files} files, {args.runs} runs each, medians (min-max) in ms\n")
    print("| embedder | server | one-file `kg sync` after a commit | `kg status` |")
    print("| --- | --- | ---: | ---: |")
    print("\n".join(rows))
    print("\n| embedder | idle warm server, PSS MiB | idle `kg mcp`, PSS MiB | watchdog, PSS MiB |")
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(memory))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
