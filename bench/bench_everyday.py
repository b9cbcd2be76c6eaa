"""Everyday commands from the shell with the warm embedded server (issue 21, item 3).

What a developer feels: wall clock of the console script ``kg`` from the shell, Python start-up
included, in a git project of generated specs with its own embedded server (no
``KG_DATABASE_URL``):

* one-file ``kg sync`` after a commit, with the hashing embedder and with MiniLM (each in a
  project of its own: one index holds one model's vectors);
* ``kg status``;
* a one-file ``git commit`` with the post-commit hook (which syncs the graph);
* each with the server kept warm between commands (``KG_SERVER_IDLE`` default) and the
  commands run by its resident host (:mod:`kg.host.resident`), the same with ``KG_RESIDENT=0``
  (each command its own process), and with ``KG_SERVER_IDLE=0`` (the server started and
  stopped by every command: the old behaviour);
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


def env_for(embedder: str, idle: str | None, resident: bool = True) -> dict[str, str]:
    env = {**user_env(), "KG_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1"}
    env.pop("KG_SERVER_IDLE", None)
    env.pop("KG_RESIDENT", None)
    if idle is not None:
        env["KG_SERVER_IDLE"] = idle
    if not resident:
        env["KG_RESIDENT"] = "0"
    return env


def wait_for_host(root: Path, limit: float = 60.0) -> None:
    """The warm host listens a moment after the watchdog starts (it imports kg first)."""
    from kg.host.resident import socket_path

    deadline = time.monotonic() + limit
    while not socket_path(root / ".kg").exists():
        assert time.monotonic() < deadline, "no warm host"
        time.sleep(0.1)


def prepare(root: Path, warm: dict[str, str], label: str) -> None:
    """The server as a configuration expects it before its command: stopped (cold), or up
    and idle as between two commands, with its host listening (warm)."""
    if label.startswith("cold"):
        kg(root, warm, "server", "stop", "--force")
        return
    kg(root, warm, "status")
    wait_for_host(root)


def hooked_commits(root: Path, env: dict[str, str], runs: int, start: int) -> list[float]:
    """Wall clock of a one-file `git commit` whose post-commit hook syncs the graph."""
    seconds = []
    for n in range(start, start + runs):
        target = root / path_of(n)
        target.write_text(target.read_text() + f"\nHooked {n}.\n", encoding="utf-8")
        began = time.perf_counter()
        subprocess.run(["git", "commit", "-q", "-am", f"hooked {n}"], cwd=root, env=env, check=True)
        seconds.append(time.perf_counter() - began)
    return seconds


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
    from kg.host.idle import watchdog_pid

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
            configurations = {
                "warm, resident host": warm,
                "warm, KG_RESIDENT=0": env_for(embedder, None, resident=False),
                "cold (KG_SERVER_IDLE=0)": env_for(embedder, "0"),
            }
            # Interleaved, so that the machine's load (shared) weighs on all alike.
            times: dict[str, dict[str, list[float]]] = {
                label: {"sync": [], "status": [], "commit": []} for label in configurations
            }

            step = 0
            for _ in range(args.runs):
                for label, env in configurations.items():
                    prepare(root, warm, label)
                    times[label]["sync"] += one_file_syncs(root, env, 1, step)
                    times[label]["status"] += statuses(root, env, 1)
                    step += 1
            kg(root, warm, "hooks", "install")
            for _ in range(args.runs):
                for label, env in configurations.items():
                    prepare(root, warm, label)
                    times[label]["commit"] += hooked_commits(root, env, 1, step)
                    step += 1
            for label, found in times.items():
                rows.append(
                    f"| {embedder} | {label} | {fmt(found['sync'])} | {fmt(found['status'])} "
                    f"| {fmt(found['commit'])} |"
                )
                print(rows[-1], flush=True)
            kg(root, warm, "status")
            wait_for_host(root)
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
    print(
        "| embedder | server | one-file `kg sync` after a commit | `kg status` "
        "| one-file `git commit` with the post-commit hook |"
    )
    print("| --- | --- | ---: | ---: | ---: |")
    print("\n".join(rows))
    print(
        "\n| embedder | idle warm server, PSS MiB | idle `kg mcp`, PSS MiB "
        "| watchdog with its resident host, PSS MiB |"
    )
    print("| --- | ---: | ---: | ---: |")
    print("\n".join(memory))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
